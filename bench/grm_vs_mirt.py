"""The graded response model, psyq against PyPI ``mirt`` (issue 42: "IRT at mirt's speed").

Fits Samejima's GRM to the same answers with ``psyq.analysis.statistics.irt.graded_response_model``
and with ``mirt.fit_mirt(model="GRM")`` of the PyPI package ``mirt`` 1.2.0 (Cameron Lyons; EM
with Gauss–Hermite quadrature, θ ~ N(0, 1), the polytomous M-step and E-step in its Rust
extension, observed-information standard errors by Oakes' identity; its IRT parameters are
mirt's ``a (θ − b_k)``, psyq's too), on

1. the 1,973 people of the shipped Briganti et al. (2018) IRI file, each of the four subscales
   (7 items, 5 levels);
2. a personas-like noise set of 3,000 respondents × the IRI, made deterministically here
   (:func:`personas_like`): answers piled on two options, the fifth option never chosen, a weak
   acquiescent style that makes reverse-keyed items correlate negatively with the others (mixed
   signs): answers like a small model's, for which psyq's former direct BFGS fit took 13–15 s per
   subscale on a real 3,000-persona run and ended "not estimable".

Both with the same quadrature, ``--points`` (default 61, mirt's R default for one factor; psyq's
own default is 41) and mirt's tolerance 1e-6 on the log-likelihood change (psyq's criterion is its
own: EM, then Newton to max |gradient| < 1e-6), standard errors computed by both. Each item is
given to mirt recoded to the categories it used (0..m_j), as psyq fits it: mirt would otherwise
chase an empty category's threshold to infinity. Both run warm (each once before timing), with
BLAS on one thread (psyq limits it itself; mirt gets the same, its best case on this shared
two-core machine, where threaded BLAS on small matrices is ~10× slower), interleaved A B B A
``--repeats`` times; medians. Targets: psyq ÷ mirt ≤ 1.0 on the people's subscales, ≤ 2.0 on the
personas'.

Prints a table per data set and writes bench/results/grm_vs_mirt.json. ``--reference`` instead
writes mirt's fit of the people's subscales to tests/data/grm_mirt_reference.json (the fixture of
tests/test_irt_em.py, which does not need mirt). Usage::

    pip install mirt==1.2.0          # for the benchmark only; not a dependency of psyq
    python bench/grm_vs_mirt.py [--repeats 5] [--points 61]
    python bench/grm_vs_mirt.py --reference          # the test fixture
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, median, save_results, table  # noqa: E402

LEVELS = [0, 1, 2, 3, 4]
TOLERANCE = 1e-6
REFERENCE = ROOT / "tests" / "data" / "grm_mirt_reference.json"


def iri_subscales() -> tuple[Any, dict[str, list[str]]]:
    import psyq
    from psyq.analysis.statistics.invariance.against_people import factor_structure

    iri = psyq.load_instrument("iri")
    subscales, problem = factor_structure(iri)
    assert not problem, problem
    return iri, subscales


def people(iri: Any) -> pd.DataFrame:
    """The shipped Briganti et al. (2018) answers, keyed (1,973 × 28)."""
    from psyq.analysis.scoring.human_answers import read_answers_csv
    from psyq.engine.trials.scoring import keyed_answers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the notice that the codebook beside the file was read
        return keyed_answers(iri, read_answers_csv("iri_briganti2018_keyed", iri, keyed=True))


def personas_like(iri: Any, n: int = 3000, seed: int = 42, style: float = 0.15) -> pd.DataFrame:
    """Keyed answers of `n` noise-like personas to the IRI: each raw answer (A–E as 0–4) is a weak
    acquiescent style (weight `style`) plus noise, cut so that B and C take most answers, A and D
    few and E none; reverse-keyed items are then keyed 4 − x, so they correlate negatively with the
    others and their unused category is 0."""
    rng = np.random.default_rng(seed)
    acquiescence = rng.standard_normal(n)
    cuts = np.array([-1.6, 0.1, 1.5])                     # A | B | C | D; E never chosen
    out = {}
    for item in iri.rating_items:
        latent = style * acquiescence + rng.standard_normal(n) + rng.normal(0.0, 0.3)
        raw = (latent[:, None] > cuts[None, :]).sum(axis=1)
        out[item.id] = 4 - raw if item.reverse else raw
    return pd.DataFrame(out, dtype=float)


def used_codes(frame: pd.DataFrame, items: list[str]) -> np.ndarray:
    """Each item's answers as 0..m_j over the categories it used (psyq fits the same)."""
    x = frame[items].to_numpy(dtype=int)
    return np.column_stack([np.searchsorted(np.unique(x[:, j]), x[:, j]) for j in range(x.shape[1])])


def fit_psyq(frame: pd.DataFrame, items: list[str], points: int) -> dict[str, Any]:
    from psyq.analysis.statistics.irt import graded_response_model

    start = time.perf_counter()
    fit = graded_response_model(frame, items, LEVELS, quadrature_points=points)
    seconds = time.perf_counter() - start
    reasons = {p.removeprefix("not estimable: ") for note in fit.loc[~fit["estimable"], "note"]
               for p in note.split("; ") if p.startswith("not estimable: ")}
    return {"seconds": seconds, "log_likelihood": fit.attrs["log_likelihood"],
            "estimable": f"{int(fit['estimable'].sum())}/{len(fit)}", "reason": "; ".join(sorted(reasons)),
            "em_iterations": fit.attrs["em_iterations"], "newton_iterations": fit.attrs["newton_iterations"],
            "likelihood_evaluations": fit.attrs["likelihood_evaluations"],
            "discrimination": fit["discrimination"].tolist()}


def fit_mirt(codes: np.ndarray, points: int) -> tuple[dict[str, Any], Any]:
    import mirt

    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        result = mirt.fit_mirt(codes, model="GRM", estimation="EM", n_quadpts=points, tol=TOLERANCE, max_iter=5000)
        seconds = time.perf_counter() - start
    return {"seconds": seconds, "log_likelihood": float(result.log_likelihood), "converged": bool(result.converged),
            "iterations": int(result.n_iterations),
            "discrimination": np.asarray(result.model.parameters["discrimination"]).tolist()}, result


def short(reason: str) -> str:
    """A not-estimable reason without its parenthesis (whose |a| would break a Markdown table)."""
    return "; ".join(part.split(" (")[0] for part in reason.split("; "))


def compare(name: str, frame: pd.DataFrame, subscales: dict[str, list[str]], points: int, repeats: int) -> list[dict]:
    rows = []
    for sub, items in subscales.items():
        codes = used_codes(frame, items)
        fit_psyq(frame, items, points)                       # warm: imports, caches
        fit_mirt(codes, points)
        psyq_s, mirt_s = [], []
        for rep in range(repeats):                           # A B B A: drift in load falls on both
            order = ("psyq", "mirt") if rep % 2 == 0 else ("mirt", "psyq")
            for who in order:
                if who == "psyq":
                    ours = fit_psyq(frame, items, points)
                    psyq_s.append(ours["seconds"])
                else:
                    theirs, _ = fit_mirt(codes, points)
                    mirt_s.append(theirs["seconds"])
        rows.append({"data": name, "subscale": sub, "n": len(frame), "psyq_s": median(psyq_s), "mirt_s": median(mirt_s),
                     "ratio": median(psyq_s) / median(mirt_s), "psyq_s_all": psyq_s, "mirt_s_all": mirt_s,
                     "psyq": {k: v for k, v in ours.items() if k != "seconds"},
                     "mirt": {k: v for k, v in theirs.items() if k != "seconds"}})
        print(f"  {name} {sub}: psyq {median(psyq_s):.3f} s, mirt {median(mirt_s):.3f} s", flush=True)
    return rows


def write_reference(frame: pd.DataFrame, subscales: dict[str, list[str]], points: int) -> None:
    """mirt's fit of the people's subscales, for tests/test_irt_em.py (which runs without mirt)."""
    fits = {}
    for sub, items in subscales.items():
        summary, result = fit_mirt(used_codes(frame, items), points)
        params, errors = result.model.parameters, result.standard_errors
        fits[sub] = {"items": items, "log_likelihood": summary["log_likelihood"], "iterations": summary["iterations"],
                     "converged": summary["converged"],
                     "discrimination": np.asarray(params["discrimination"]).tolist(),
                     "thresholds": np.asarray(params["thresholds"]).tolist(),
                     "se_discrimination": np.asarray(errors["discrimination"]).tolist(),
                     "se_thresholds": np.asarray(errors["thresholds"]).tolist()}
    text = json.dumps({
        "what": "mirt's graded response model of the 1,973 people of instruments/data/iri_briganti2018_keyed.csv "
                "(keyed), per IRI subscale; IRT parameters a (θ − b_k)",
        "package": f"mirt {metadata.version('mirt')} (PyPI)", "script": "bench/grm_vs_mirt.py --reference",
        "call": f"mirt.fit_mirt(codes, model='GRM', estimation='EM', n_quadpts={points}, tol={TOLERANCE}, "
                "max_iter=5000)",
        "quadrature_points": points,
        "bounds": "mirt keeps a in [0.1, 5] and b in [-6, 6] (mirt/estimation/base.py); no estimate here is at a bound, "
                  "so this is the unconstrained maximum psyq finds",
        "subscales": fits}, indent=1, ensure_ascii=False)
    # one line per list of numbers or names
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
    REFERENCE.write_text(text + "\n")
    print(f"reference -> {REFERENCE.relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--points", type=int, default=61, help="quadrature points, both packages")
    parser.add_argument("--reference", action="store_true",
                        help="only write mirt's fit of the people to tests/data/grm_mirt_reference.json")
    args = parser.parse_args(argv)
    try:
        import mirt  # noqa: F401
    except ImportError:
        print("PyPI mirt is not installed: pip install mirt==1.2.0 (for this benchmark only)")
        return 1
    iri, subscales = iri_subscales()
    humans = people(iri)
    if args.reference:
        write_reference(humans, subscales, args.points)
        return 0
    rows = compare("people", humans, subscales, args.points, args.repeats)
    rows += compare("personas-like", personas_like(iri), subscales, args.points, args.repeats)
    for name in ("people", "personas-like"):
        mine = [r for r in rows if r["data"] == name]
        print(f"\n{name} ({mine[0]['n']:,} respondents), {args.points} quadrature points both, medians of "
              f"{args.repeats}:")
        print(table([[r["subscale"], f"{r['psyq_s']:.3f}", f"{r['mirt_s']:.3f}", f"{r['ratio']:.2f}",
                      f"{r['psyq']['log_likelihood']:.3f}", f"{r['mirt']['log_likelihood']:.3f}",
                      r["psyq"]["estimable"] + (f" ({short(r['psyq']['reason'])})" if r["psyq"]["reason"] else ""),
                      f"{r['psyq']['em_iterations']} + {r['psyq']['newton_iterations']}", r["mirt"]["iterations"]]
                     for r in mine],
                    ["subscale", "psyq s", "mirt s", "psyq ÷ mirt", "log L psyq", "log L mirt", "psyq estimable",
                     "psyq EM + Newton", "mirt EM"]))
        total_psyq, total_mirt = sum(r["psyq_s"] for r in mine), sum(r["mirt_s"] for r in mine)
        print(f"all four: psyq {total_psyq:.3f} s, mirt {total_mirt:.3f} s, ratio {total_psyq / total_mirt:.2f}")
    print("\nmirt keeps a in [0.1, 5] and b in [-6, 6]: where the maximum lies outside (reverse-keyed noise wants "
          "a < 0), its log L is lower than psyq's, the maximum of the same likelihood without bounds.")
    path = save_results("grm_vs_mirt", {"settings": {"quadrature_points": args.points, "mirt_tol": TOLERANCE,
                                                     "repeats": args.repeats, "blas_threads": 1,
                                                     "mirt": metadata.version("mirt")},
                                        "targets": {"people": "psyq/mirt <= 1.0", "personas-like": "psyq/mirt <= 2.0"},
                                        "rows": rows})
    print(f"results -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
