"""How often are two conditions that are identical by construction called different? (issue 54)

Every simulated study is drawn from the 1,973 people shipped with psyq (Briganti et al., 2018; IRI raw
answers and gender): the people are split at random into the reference people (1,373) and two
conditions of `--n` (300) each, and psyq.compare_conditions compares the two conditions on every
criterion that applies (level, spread, reliability, distinguishable, style, relations, tvd, w1; 1,000
resamples, Holm over the pair's criteria). A study *calls them different* when any criterion's
Holm-adjusted difference is distinguishable from 0 at .05. Two cases, both identical by construction:

* ``independent``: the two conditions are two disjoint random draws of the people (different
  personas: resampled independently);
* ``paired``: the same draw of people in both conditions (the same respondent ids: resampled
  jointly), each answer moved a point up or down with probability .15, independently in each
  condition (clipped to the scale): the same personas asked twice with noise.

Usage: ``python bench/conditions_calibration.py [--studies 200] [--n 300] [--resamples 1000]
[--cases independent paired]``. Writes bench/results/conditions_calibration.json and prints the rate
of studies calling the conditions different, with its Wilson 95 % interval, each criterion's, and
each criterion's share of unadjusted p below .05 (a single test's own error rate, 5 % if its
standard error is right).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from common import save_results
from psyq import compare_conditions, human_data, load_instrument

IRI = load_instrument("iri")
ITEMS = [i.id for i in IRI.rating_items]
N_PEOPLE = 1373


def study(people: pd.DataFrame, n: int, case: str, resamples: int, seed: int) -> pd.DataFrame:
    """One simulated study's comparison of two conditions identical by construction."""
    rng = np.random.default_rng([54, seed])
    order = rng.permutation(len(people))
    reference = people.iloc[order[:N_PEOPLE]]
    first = people.iloc[order[N_PEOPLE:N_PEOPLE + n]].copy()
    if case == "independent":
        second = people.iloc[order[N_PEOPLE + n:N_PEOPLE + 2 * n]].copy()
    else:
        base = first[ITEMS].to_numpy(dtype=float)
        second = first.copy()
        for frame in (first, second):
            move = rng.choice([-1.0, 0.0, 1.0], size=base.shape, p=[0.075, 0.85, 0.075])
            frame[ITEMS] = np.clip(base + move, 0, 4)
    return compare_conditions({"A": first, "B": second}, reference, IRI, resamples=resamples, seed=seed)


def simulate(people: pd.DataFrame, studies: int, n: int, case: str, resamples: int
             ) -> tuple[list[bool], pd.DataFrame, pd.DataFrame]:
    """Per study whether any criterion was distinguishable; per study and criterion whether it was
    (Holm-adjusted), and whether its unadjusted p was below .05 (the single test's own error rate)."""
    called, adjusted, unadjusted = [], [], []
    for k in range(studies):
        out = study(people, n, case, resamples, k).set_index("criterion")
        called.append(bool(out["distinguishable"].any()))
        adjusted.append(out["distinguishable"])
        unadjusted.append(out["p"] < 0.05)
    return called, pd.DataFrame(adjusted), pd.DataFrame(unadjusted)


def wilson(k: int, n: int) -> list[float]:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return [float(low), float(high)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--cases", nargs="+", default=["independent", "paired"])
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        people = human_data({"iri": "iri_briganti2018_keyed"})["iri"].answers(IRI)
    results = {}
    for case in args.cases:
        started = time.perf_counter()
        called, adjusted, unadjusted = simulate(people, args.studies, args.n, case, args.resamples)
        k = sum(called)
        results[case] = {"studies": args.studies, "called_different": k, "rate": k / args.studies,
                         "rate_ci95": wilson(k, args.studies),
                         "per_criterion": {c: float(adjusted[c].mean()) for c in adjusted.columns},
                         "per_criterion_unadjusted_p_below_05": {c: float(unadjusted[c].mean())
                                                                 for c in unadjusted.columns},
                         "seconds": round(time.perf_counter() - started, 1)}
        print(f"{case}: {k} of {args.studies} studies called the conditions different ({100 * k / args.studies:.1f} %, "
              f"Wilson 95 % {100 * results[case]['rate_ci95'][0]:.1f}–{100 * results[case]['rate_ci95'][1]:.1f} %) "
              f"in {results[case]['seconds']:.0f} s", flush=True)
        for what, rates in (("Holm-adjusted", results[case]["per_criterion"]),
                            ("unadjusted p < .05", results[case]["per_criterion_unadjusted_p_below_05"])):
            print(f"  {what}: " + ", ".join(f"{c} {100 * v:.1f} %" for c, v in rates.items()), flush=True)
    save_results("conditions_calibration", {"n_personas": args.n, "n_people": N_PEOPLE, "resamples": args.resamples,
                                            "cases": results})


if __name__ == "__main__":
    main()
