"""How often is the verdict wrong? Its marks on cohorts whose answer is known (issue 52).

Every cohort is drawn from the 1,973 people shipped with psyq (Briganti et al., 2018; IRI raw answers
and gender); the people it is compared with are the respondents not drawn. Each draw is marked by
the full scorecard (psyq.scorecard, structure left out: the IRI's four-factor model fits these
people poorly, CFI about .78, so structure is "not estimable" on them whatever the cohort), and the
share of each mark per criterion is counted over `--draws` draws per case and size:

* ``real``: the people themselves — every criterion should meet (or be inconclusive at small n),
  never fall short;
* ``style``: every raw answer one point up with probability .5 (at most the top option): a response
  style of about +0.5 — breaks ``style``;
* ``random``: every answer uniform over the five options — breaks ``reliability`` (and
  ``distinguishable``);
* ``collapsed``: each answer pulled halfway to its item's mean among the drawn (rounded) — breaks
  ``spread``;
* ``gap``: the EC gender gap tripled — on EC's items women's keyed answers one point up and men's one
  point down, each with probability .41 — breaks ``relations``;
* ``one_factor``: the items answered as one factor (keyed answer = the item's mean + its SD × (.7 F +
  .71 e), rounded, F shared by all 28 items) — breaks ``relations`` (the subscales' intercorrelations);
* ``twins``: twins of the drawn people that copy their person's answer on 10 % of the items and
  another person's on the rest — breaks ``individuals`` (twin − other twins r below .20).

Usage: ``python bench/verdict_calibration.py [--draws 200] [--sizes 13 50 200 1000] [--workers 2]
[--cases real style …] [--check-power]`` (``--check-power``: psyq.verdict_power on other draws against
the real people's shares here).
Writes bench/results/verdict_calibration.json and prints the Markdown table that
docs/reading-report.md ("How often is the verdict wrong?") shows.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from common import save_results
from psyq import human_data, load_instrument
from psyq.analysis.statistics.standin.verdict_power import simulate_verdicts, verdict_power

IRI = load_instrument("iri")
ITEMS = [i.id for i in IRI.rating_items]
REVERSED = {i.id for i in IRI.rating_items if i.reverse}
EC = {i.id for i in IRI.subscale_items("EC")}


def style(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    up = rng.random((len(cohort), len(ITEMS))) < 0.5
    cohort[ITEMS] = np.minimum(cohort[ITEMS].to_numpy() + up, 4)
    return cohort


def random_answers(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    cohort[ITEMS] = rng.integers(0, 5, (len(cohort), len(ITEMS))).astype(float)
    return cohort


def collapsed(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    values = cohort[ITEMS].to_numpy(dtype=float)
    mean = values.mean(axis=0)
    cohort[ITEMS] = np.round(mean + 0.5 * (values - mean))
    return cohort


def gap(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    sign = np.where(cohort["gender"].to_numpy() == "female", 1, -1)
    for item in EC:
        keyed = sign * (rng.random(len(cohort)) < 0.41)
        raw = -keyed if item in REVERSED else keyed
        cohort[item] = np.clip(cohort[item].to_numpy() + raw, 0, 4)
    return cohort


def one_factor(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    values = cohort[ITEMS].to_numpy(dtype=float)
    keyed = np.where([i in REVERSED for i in ITEMS], 4 - values, values)
    mean, sd = keyed.mean(axis=0), keyed.std(axis=0) + 1e-9
    f = rng.normal(size=(len(cohort), 1))
    answers = np.clip(np.round(mean + sd * (0.7 * f + 0.71 * rng.normal(size=keyed.shape))), 0, 4)
    cohort[ITEMS] = np.where([i in REVERSED for i in ITEMS], 4 - answers, answers)
    return cohort


def twins(cohort: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    values = cohort[ITEMS].to_numpy(dtype=float)
    others = values[rng.permuted(np.tile(np.arange(len(cohort)), (len(ITEMS), 1)), axis=1).T, np.arange(len(ITEMS))]
    keep = rng.random(values.shape) < 0.10
    cohort[ITEMS] = np.where(keep, values, others)
    return cohort


CASES = {"real": (None, "every criterion"), "style": (style, "style"), "random": (random_answers, "reliability"),
         "collapsed": (collapsed, "spread"), "gap": (gap, "relations"), "one_factor": (one_factor, "relations"),
         "twins": (twins, "individuals")}
SHOWN = ["level", "spread", "reliability", "distinguishable", "style", "relations", "individuals"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[13, 50, 200, 1000])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--check-power", action="store_true",
                        help="also run psyq.verdict_power on other draws (seed 1) and print, per criterion, the "
                             "largest difference of its shares from the real people's case here (seed 0)")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(IRI)
    frames = []
    for case in args.cases:
        breaks, target = CASES[case]
        started = time.perf_counter()
        frame = simulate_verdicts(people, IRI, args.sizes, breaks=breaks, reps=args.draws, workers=args.workers,
                                  twins=case == "twins")
        frames.append(frame.assign(case=case, target=target).set_flags())
        frames[-1].attrs = {}
        print(f"{case}: {time.perf_counter() - started:.0f} s", flush=True)
    table = pd.concat(frames, ignore_index=True)
    save_results("verdict_calibration", {"draws": args.draws, "sizes": args.sizes, "rows": table.to_dict("records")})
    print(markdown(table))
    if args.check_power and "real" in args.cases:
        power = verdict_power(people, IRI, args.sizes, reps=args.draws, seed=1, workers=args.workers)
        real = table[table["case"] == "real"].set_index(["criterion", "n_personas"])
        power = power.set_index(["criterion", "n_personas"])
        gaps = {}
        for key in power.index.intersection(real.index):
            for mark in ("meets", "falls_short"):
                gaps.setdefault(key[0], []).append(abs(power.loc[key, mark] - real.loc[key, mark]))
        print("\nverdict_power (seed 1) against the simulation (seed 0), largest difference in share, points:")
        for criterion, values in gaps.items():
            print(f"  {criterion}: {100 * max(values):.1f}")


def markdown(table: pd.DataFrame) -> str:
    """One row per case and size; per criterion "meets / falls short" in per cent (the rest inconclusive
    or not estimable); the criterion the case breaks in bold."""
    lines = ["| cohort | n | " + " | ".join(SHOWN) + " |", "|---|---|" + "---|" * len(SHOWN)]
    for (case, n), part in table.groupby(["case", "n_personas"], sort=False):
        part = part.set_index("criterion")
        cells = []
        for criterion in SHOWN:
            if criterion not in part.index or part.loc[criterion, "not_estimable"] == 1:
                cells.append("n.e.")
                continue
            row = part.loc[criterion]
            cell = f"{100 * row['meets']:.0f} / {100 * row['falls_short']:.0f}"
            cells.append(f"**{cell}**" if criterion == part["target"].iloc[0] else cell)
        lines.append(f"| {case} | {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
