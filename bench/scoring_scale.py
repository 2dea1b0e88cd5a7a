"""Benchmark 4: scoring and norm comparison at 10⁴, 10⁵ and 10⁶ respondents × 28 items (IRI).

Each size runs in its own process (so its peak memory is its own). The input is a wide table of
item answers as ``psyq.engine.read_answers_csv`` produces it (one row per respondent, one column
per item, NaN for a missing answer, and the attribute columns), drawn at random with 1 % missing
answers, with a text gender column (45 % female, 45 % male, 10 % other, who match no norm group
and are compared with the pooled norm). Timed, separately and in total, what a user calls:

1. ``psyq.score_wide``: reverse keying and the four subscale scores (respondents × subscales);
2. attaching the attribute: ``scores["gender"] = answers["gender"]``;
3. ``psyq.compare_with_norms`` on that wide table: matching to norm groups, Welch t, Hedges g,
   TOST, Holm.

(Until issue 35 this timed the long table: ``psyq.score``, the key columns attached to its
4·10⁶ rows, and ``compare_with_norms`` on it; that path still works, and gives the same table.)

Peak memory: the process's peak resident set (``ru_maxrss``, imports and the input included;
reset just before scoring, so the temporaries of drawing the input do not count) and the rise
over the resident set just before scoring (the float64 input and the imports alone hold
~0.5 GiB). Target: 10⁶ in under 1 s and 0.5 GiB of rise. CPU time is reported too: the machine
is shared, and wall time under load overstates.

    python bench/scoring_scale.py [--sizes 10000 100000 1000000] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import IRI, PYTHON, median, run_json, save_results, table  # noqa: E402

GIB = 2**30


def rss_bytes() -> int:
    """This process's resident set now (Linux /proc)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * resource.getpagesize()


def reset_peak_rss() -> None:
    """Start the peak resident set afresh from now (Linux ≥ 4.0: ``5`` to /proc/self/clear_refs),
    so that making the input (its temporaries) does not count as the peak of scoring it."""
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
    except OSError:   # not Linux, or not allowed: the peak then includes making the input
        pass


def peak_rss_bytes() -> int:
    """This process's peak resident set so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_answers(n: int, seed: int = 1) -> Any:
    """`n` respondents' IRI answers (0–4, 1 % missing) and their genders (a text column)."""
    import numpy as np
    import pandas as pd
    from psyq.engine.design.instrument import load_instrument
    iri = load_instrument(IRI)
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 5, size=(n, len(iri.rating_items))).astype(float)
    values[rng.random(values.shape) < 0.01] = np.nan
    answers = pd.DataFrame(values, columns=[i.id for i in iri.rating_items],
                           index=pd.Index([f"r{i}" for i in range(n)], name="respondent_id"))
    gender = rng.choice(np.array(["female", "male", "other"]), size=n, p=[0.45, 0.45, 0.10])
    answers["gender"] = pd.Series(gender, dtype="str", index=answers.index)   # as read_answers_csv reads text
    return answers


def one_size(n: int) -> dict[str, Any]:
    """Score and compare `n` respondents once; times and memory (run in a fresh process)."""
    from psyq import compare_with_norms, score_wide
    from psyq.engine.design.instrument import load_instrument
    iri = load_instrument(IRI)
    answers = make_answers(n)
    reset_peak_rss()
    before = rss_bytes()
    c0, t0 = time.process_time(), time.perf_counter()
    scores = score_wide(iri, answers)
    c1, t1 = time.process_time(), time.perf_counter()
    scores["gender"] = answers["gender"]
    c2, t2 = time.process_time(), time.perf_counter()
    table_ = compare_with_norms(scores, {"iri": iri})
    c3, t3 = time.process_time(), time.perf_counter()
    return {"n": n, "score_s": t1 - t0, "attach_s": t2 - t1, "compare_s": t3 - t2, "total_s": t3 - t0,
            "score_compare_s": (t1 - t0) + (t3 - t2), "score_compare_cpu_s": (c1 - c0) + (c3 - c2),
            "total_cpu_s": c3 - c0, "load_1min": os.getloadavg()[0],
            "peak_rss_gib": peak_rss_bytes() / GIB, "rss_before_gib": before / GIB,
            "peak_rise_gib": (peak_rss_bytes() - before) / GIB, "rows_compared": len(table_),
            "groups": sorted(table_["norm_group"].unique().tolist())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)   # internal: one size, this process
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_size(args.one)))
        return 0
    results = {}
    for n in args.sizes:
        runs = [run_json([PYTHON, __file__, "--one", str(n)], timeout=1800) for _ in range(args.reps)]
        results[n] = {"runs": runs, **{k: median([r[k] for r in runs]) for k in
                                       ("score_s", "attach_s", "compare_s", "total_s", "score_compare_s",
                                                        "score_compare_cpu_s", "total_cpu_s", "load_1min",
                                                        "peak_rss_gib", "peak_rise_gib")}}
        r = results[n]
        print(f"n={n:>9,}: score {r['score_s']:.3f} s, attach {r['attach_s']:.3f} s, compare {r['compare_s']:.3f} s, "
              f"total {r['total_s']:.3f} s (CPU {r['total_cpu_s']:.3f} s; score + compare {r['score_compare_s']:.3f} s, "
              f"CPU {r['score_compare_cpu_s']:.3f} s; load {r['load_1min']:.1f}); peak RSS {r['peak_rss_gib']:.2f} GiB (rise {r['peak_rise_gib']:.2f})",
              flush=True)
    print()
    print(table([[f"{n:,}", f"{r['score_s']:.3f}", f"{r['compare_s']:.3f}", f"{r['total_s']:.3f}",
                  f"{r['total_cpu_s']:.3f}", f"{r['peak_rss_gib']:.2f}", f"{r['peak_rise_gib']:.2f}"]
                 for n, r in results.items()],
                ["respondents", "score s", "compare s", "total s", "CPU s", "peak RSS GiB", "rise GiB"]))
    if 1_000_000 in results:
        r = results[1_000_000]
        met = r["total_s"] < 1 and r["peak_rise_gib"] < 0.5
        print(f"10^6: {r['total_s']:.2f} s (target < 1), rise {r['peak_rise_gib']:.2f} GiB (target < 0.5; peak "
              f"{r['peak_rss_gib']:.2f} GiB with the float64 input) {'MET' if met else 'MISSED'}")
    print(f"-> {save_results('scoring', {'results': results})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
