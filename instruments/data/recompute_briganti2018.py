"""Recompute the `briganti2018` IRI norms in instruments/iri.yaml from the raw data beside this file.

The raw file `iri_briganti2018_keyed.csv` holds the 28 IRI items of 1,973 young adults, ALREADY
KEYED (the nine reverse items are stored reversed), so the subscale score is the plain sum of its
seven items: nothing is reversed here. Means and SDs (n − 1 denominator) are given for women
(`gender` F), men (M) and the whole sample, rounded to two decimals as in iri.yaml.

Usage (from the project folder):

    python instruments/data/recompute_briganti2018.py            # print the numbers as YAML
    python instruments/data/recompute_briganti2018.py --check    # compare with instruments/iri.yaml

`--check` exits with 1 and names every number that differs. Subscale membership is read from
iri.yaml's items (`subscales`), the only thing taken from the file being checked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import yaml

HERE = Path(__file__).resolve().parent
RAW = HERE / "iri_briganti2018_keyed.csv"
INSTRUMENT = HERE.parent / "iri.yaml"
SAMPLE_ID = "briganti2018"
GROUPS = {"women": "F", "men": "M", "all": None}      # group id -> value of the `gender` column


def subscale_items(instrument_file: Path = INSTRUMENT) -> dict[str, list[str]]:
    """Subscale id -> raw-file columns of its items (item "3" is column davi3)."""
    data = yaml.safe_load(instrument_file.read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for item in data["items"]:
        for sub in item.get("subscales", []):
            out.setdefault(sub, []).append(f"davi{item['id']}")
    return out


def recompute(raw_file: Path = RAW, instrument_file: Path = INSTRUMENT) -> dict[str, dict]:
    """Group id -> {"n": n, "scores": {subscale: {"mean": m, "sd": sd}}}, rounded to 2 decimals.

    Example:
        >>> recompute()["women"]["scores"]["PT"]
        {'mean': 16.91, 'sd': 4.57}
    """
    raw = pd.read_csv(raw_file)
    items = subscale_items(instrument_file)
    out = {}
    for group, code in GROUPS.items():
        rows = raw if code is None else raw[raw["gender"] == code]
        scores = {}
        for sub, columns in items.items():
            sums = rows[columns].sum(axis=1, min_count=len(columns))   # a missing item leaves no sum
            scores[sub] = {"mean": round(float(sums.mean()), 2), "sd": round(float(sums.std(ddof=1)), 2)}
        out[group] = {"n": int(len(rows)), "scores": scores}
    return out


def shipped(instrument_file: Path = INSTRUMENT) -> dict[str, dict]:
    """The `briganti2018` groups as written in iri.yaml, in the shape of :func:`recompute`."""
    data = yaml.safe_load(instrument_file.read_text(encoding="utf-8"))
    sample = next(s for s in data["norms"] if s["id"] == SAMPLE_ID)
    return {g["id"]: {"n": g["n"], "scores": g["scores"]} for g in sample["groups"]}


def differences(expected: dict[str, dict], got: dict[str, dict]) -> list[str]:
    """Every number of `got` (shipped) that differs from `expected` (recomputed)."""
    out = []
    for group in sorted(set(expected) | set(got)):
        if group not in got or group not in expected:
            out.append(f"group {group}: only in {'the recomputation' if group in expected else 'iri.yaml'}")
            continue
        if expected[group]["n"] != got[group]["n"]:
            out.append(f"{group} n: iri.yaml {got[group]['n']}, recomputed {expected[group]['n']}")
        for sub in sorted(set(expected[group]["scores"]) | set(got[group]["scores"])):
            e, g = expected[group]["scores"].get(sub), got[group]["scores"].get(sub)
            if e != g:
                out.append(f"{group} {sub}: iri.yaml {g}, recomputed {e}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with instruments/iri.yaml")
    args = parser.parse_args(argv)
    numbers = recompute()
    if args.check:
        diff = differences(numbers, shipped())
        for line in diff:
            print(line, file=sys.stderr)
        print("iri.yaml briganti2018: " + ("differs from the raw data" if diff else "every number equals the recomputation"))
        return 1 if diff else 0
    print(yaml.safe_dump({"groups": [{"id": g, **v} for g, v in numbers.items()]}, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
