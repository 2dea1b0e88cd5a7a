"""The table of current figures at the top of bench/RESULTS.md, built from bench/results/*.json.

One row per measure: what is measured, the target the project set for it (with the issue or page
that set it), the figure in the JSON file its benchmark last wrote, whether that figure meets the
target, and the date, machine and load the file records, with the command that measures it. The
table and its notes sit between two marker comments near the top of RESULTS.md; the diary of past
sessions below them is never touched. A figure comes only from a JSON file: a measure whose file
is absent, or whose benchmark's last invocation did not measure it, shows "—".

    python bench/results_table.py            # rewrite the table from bench/results/*.json
    python bench/results_table.py --check    # exit 1 if the table is not what the JSON files give

Run it after a benchmark, and commit the JSON file with RESULTS.md; tests/test_bench_results.py
fails while the table and the committed JSON files disagree.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, RESULTS, table  # noqa: E402

PAGE = BENCH / "RESULTS.md"
START = "<!-- current figures: start (written by bench/results_table.py from bench/results/*.json; do not edit) -->"
END = "<!-- current figures: end -->"
HEADER = ["measure", "target", "latest figure", "target met", "date (UTC)", "machine", "load", "command"]
MISSING = "—"


@dataclass(frozen=True)
class Reading:
    """A measure's figure as the table shows it, and whether it meets the target (None: no target)."""

    figure: str
    met: bool | None = None


@dataclass(frozen=True)
class Measure:
    """One row: what is measured, its target, the JSON file (bench/results/<source>.json) and the
    command that writes it, how the figure is read from that file (None: not in the file), and where
    in the history the sessions wrote it up (shown while the file has no figure)."""

    name: str
    target: str
    source: str
    command: str
    read: Callable[[dict[str, Any]], Reading | None]
    history: str        # the heading in the history below the table where its figures were last written up


def dig(data: Any, *keys: Any) -> Any:
    """The value under `keys` in nested dicts and lists, or None where one is missing.

    >>> dig({"a": {"64": 0.5}}, "a", "64"), dig({"a": {}}, "a", "64")
    (0.5, None)
    """
    for key in keys:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def percent(share: float, digits: int = 1) -> str:
    """A share as a per cent, spaced as the diary writes it: ``percent(0.0183) == '1.8 %'``."""
    return f"{share * 100:.{digits}f} %"


# --- how each benchmark's JSON file is read --------------------------------------------------------

def overhead_ratio(loop: str, target: float) -> Callable[[dict[str, Any]], Reading | None]:
    """psyq's rate ÷ a raw loop's at c = 64 (bench/overhead.py's `ratios` and `medians`)."""
    def read(data: dict[str, Any]) -> Reading | None:
        ratio = dig(data, "ratios", f"psyq/{loop}", "64")
        if ratio is None:
            return None
        psyq, raw = dig(data, "medians", "psyq", "64"), dig(data, "medians", loop, "64")
        return Reading(f"**{ratio:.2f}** (psyq {psyq:,.0f} vs {raw:,.0f} requests/s, {data['requests']:,} requests, "
                       f"medians of {data['reps']})", ratio >= target)
    return read


def ratelimit_share(data: dict[str, Any]) -> Reading | None:
    share, limit = data.get("share_of_limit"), data.get("limit_rpm")
    if share is None:
        return None
    return Reading(f"**{percent(share)}** of {limit:,.0f}/min ({data['requests']:,} requests)", share >= 0.95)


def ratelimit_429(data: dict[str, Any]) -> Reading | None:
    share = data.get("share_429")
    if share is None:
        return None
    count = dig(data, "outcomes", "429") or 0
    return Reading(f"**{percent(share, 2)}** ({count:,} of {data['requests']:,})", share < 0.01)


def local_logprobs_over_text(data: dict[str, Any]) -> Reading | None:
    ratio = data.get("logprobs_over_text")
    if ratio is None:
        return None
    rates = {c["name"]: c["items_per_s"] for c in data.get("configs", [])}
    return Reading(f"**{ratio:.1f} ×** ({rates['logprobs_per_item']:.2f} vs {rates['text_per_item']:.2f} items/s)",
                   ratio >= 5)


def local_raw_ratio(data: dict[str, Any]) -> Reading | None:
    ratio = data.get("ratio")
    if ratio is None:
        return None
    return Reading(f"**{ratio:.2f}** (medians of {len(data['psyq'])} interleaved pairs)", ratio >= 0.9)


def scoring_million(field: str) -> Callable[[dict[str, Any]], Reading | None]:
    """10⁶ respondents in bench/scoring_scale.py's `results` (medians over its fresh processes)."""
    def read(data: dict[str, Any]) -> Reading | None:
        r = dig(data, "results", "1000000")
        if r is None:
            return None
        if field == "total_s":
            return Reading(f"**{r['total_s']:.3f} s** wall (CPU {r['total_cpu_s']:.3f} s; medians of {len(r['runs'])})",
                           r["total_s"] < 1)
        return Reading(f"**{r['peak_rise_gib']:.2f} GiB** added (process peak {r['peak_rss_gib']:.2f} GiB; medians "
                       f"of {len(r['runs'])})", r["peak_rise_gib"] < 0.5)
    return read


def soak_lost(data: dict[str, Any]) -> Reading | None:
    if "lost" not in data:
        return None
    return Reading(f"**{data['lost']:,}** of {data['planned']:,} trials ({len(data['kill_points'])} SIGKILLs, "
                   f"{percent(data['fault_rate'], 0)} faults injected)", data["lost"] == 0)


def soak_sent_again(data: dict[str, Any]) -> Reading | None:
    count = data.get("sent_again_after_answered")
    if count is None:
        return None
    return Reading(f"**{count:,}** (of {data['requests']:,} requests received)", count == 0)


def soak_retries(data: dict[str, Any]) -> Reading | None:
    most = data.get("max_requests_per_trial_per_run")
    if not most:
        return None
    return Reading(f"**{max(most)}** requests at most for one trial in one run (bound {data['max_retries'] + 1})",
                   bool(data["retries_bounded"]))


def batch_count(field: str) -> Callable[[dict[str, Any]], Reading | None]:
    """Answers lost or paid twice in bench/batch_roundtrip.py's round trip."""
    def read(data: dict[str, Any]) -> Reading | None:
        if field not in data:
            return None
        return Reading(f"**{data[field]:,}** of {data['trials']:,} requests ({data['batches']} batches, "
                       f"{data['seconds']} s, exit code {data['exit_code']})",
                       data[field] == 0 and data["exit_code"] == 0)
    return read


def pool_scaling(data: dict[str, Any]) -> Reading | None:
    ratio = dig(data, "scaling", "ratio_two_to_one")
    if ratio is None:
        return None
    settings = dig(data, "scaling", "settings")
    two, one = settings["two replicas"]["per_s"], settings["one replica"]["per_s"]
    return Reading(f"**{ratio:.2f} ×** ({two:.1f} vs {one:.1f} trials/s)", ratio >= 1.8)


def pool_cache(data: dict[str, Any]) -> Reading | None:
    caches = data.get("cache")
    if not caches:
        return None
    every = all(c["met"] for c in caches)
    detail = "; ".join(f"{c['shape']}: {c['prompt_tokens']:,} prompt, {c['cached_tokens']:,} cached "
                       f"(by hand {c['expected_prompt']:,}, {c['expected_cached']:,})" for c in caches)
    return Reading(f"**{'equal' if every else 'not equal'}** ({detail})", every)


def startup(command: str, field: str, bound: float) -> Callable[[dict[str, Any]], Reading | None]:
    """One command's medians in bench/startup.py (the installed package, "after")."""
    def read(data: dict[str, Any]) -> Reading | None:
        m = dig(data, "medians", "after", command)
        if m is None:
            return None
        every = f"medians of {data['reps']}"
        if field == "maxrss_mb":
            return Reading(f"**{m['maxrss_mb']:.0f} MB** peak (to its URL {m['seconds']:.2f} s; {every})",
                           m["maxrss_mb"] <= bound)
        return Reading(f"**{m['seconds']:.2f} s** (CPU {m['cpu_seconds']:.2f} s, peak {m['maxrss_mb']:.0f} MB; "
                       f"{every})", m["seconds"] <= bound)
    return read


def grm_ratio(data_set: str, bound: float) -> Callable[[dict[str, Any]], Reading | None]:
    """psyq ÷ mirt over the four subscales of one data set (bench/grm_vs_mirt.py's `rows`)."""
    def read(data: dict[str, Any]) -> Reading | None:
        rows = [r for r in data.get("rows", []) if r["data"] == data_set]
        if not rows:
            return None
        ratios = sorted(r["ratio"] for r in rows)
        spread = f"{ratios[0]:.2f}" if len(ratios) == 1 else f"{ratios[0]:.2f}–{ratios[-1]:.2f}"
        return Reading(f"**{spread}** over {len(rows)} subscales ({rows[0]['n']:,} respondents; medians of "
                       f"{dig(data, 'settings', 'repeats')})", ratios[-1] <= bound)
    return read


def report(run: str, seconds: float, mib: float | None = None) -> Callable[[dict[str, Any]], Reading | None]:
    """One run's report in bench/report_scale.py's `runs` ("<pattern> <personas>")."""
    def read(data: dict[str, Any]) -> Reading | None:
        r = dig(data, "runs", run)
        if r is None:
            return None
        peak = f"**{r['peak_rss_mib']:,} MiB**" if mib else f"{r['peak_rss_mib']:,} MiB"
        met = r["wall_s"] <= seconds and (mib is None or r["peak_rss_mib"] <= mib)
        return Reading(f"**{r['wall_s']:.2f} s** wall (CPU {r['cpu_s']:.2f} s, peak {peak})", met)
    return read


def conditions_report(data: dict[str, Any]) -> Reading | None:
    """The report of a conditions study (bench/conditions_report.py): wall seconds against 60."""
    if "wall_s" not in data:
        return None
    return Reading(f"**{data['wall_s']:.2f} s** wall (CPU {data['cpu_s']:.2f} s, peak {data['peak_rss_mib']:,} MiB; "
                   f"{data['groups']} groups × {data['personas']:,} personas)", data["wall_s"] <= 60)


def view_store(field: str) -> Callable[[dict[str, Any]], Reading | None]:
    """The viewer on a 10⁵-trial store (bench/view_scale.py's `store`)."""
    def read(data: dict[str, Any]) -> Reading | None:
        s = data.get("store")
        if s is None:
            return None
        trials = dig(s, "store", "trials")
        if field == "filtered_worst_max_ms":
            return Reading(f"**{s['filtered_worst_max_ms']:.0f} ms** (worst max of the filtered and searched pages, "
                           f"{s['reps']} each; {trials:,} trials)", s["filtered_worst_max_ms"] < 300)
        return Reading(f"**{s['viewer_peak_rss_mb']:.0f} MB** (at start {s['viewer_rss_at_start_mb']:.0f} MB)",
                       s["viewer_peak_rss_mb"] < 300)
    return read


def view_watched(data: dict[str, Any]) -> Reading | None:
    ratio = dig(data, "write", "ratio")
    if ratio is None:
        return None
    return Reading(f"**{ratio:.2f}** (runs in the order {data['write']['order']}, "
                   f"{data['write']['personas']:,} personas × IRI)", ratio < 1.05)


def view_stored(data: dict[str, Any]) -> Reading | None:
    runs = dig(data, "write", "runs")
    if not runs:
        return None
    every = all(r["lost"] == 0 and r["failed"] == 0 and r["exit"] == 0 for r in runs)
    stored, planned = sum(r["stored"] for r in runs), sum(r["planned"] or 0 for r in runs)
    return Reading(f"**{stored:,} / {planned:,}** over {len(runs)} runs", every)


def verdict_rows(data: dict[str, Any], real: bool) -> list[dict[str, Any]]:
    """bench/verdict_calibration.py's rows of the real people (`real`) or of the broken criteria."""
    rows = data.get("rows", [])
    if real:
        return [r for r in rows if r["case"] == "real"]
    return [r for r in rows if r["case"] != "real" and r["criterion"] == r["target"]]


def verdict_draws(data: dict[str, Any]) -> str:
    return f"{data['draws']} draws a size, sizes {', '.join(f'{n:,}' for n in data['sizes'])}"


def verdict_real_falls_short(data: dict[str, Any]) -> Reading | None:
    rows = verdict_rows(data, real=True)
    if not rows:
        return None
    worst = max(rows, key=lambda r: r["falls_short"])
    return Reading(f"**{percent(worst['falls_short'])}** at most ({worst['criterion']} at {worst['n_personas']:,}; "
                   f"{verdict_draws(data)})", worst["falls_short"] <= 0.05)


def verdict_real_power(data: dict[str, Any]) -> Reading | None:
    rows = verdict_rows(data, real=True)
    if not rows:
        return None
    parts = []
    for criterion in dict.fromkeys(r["criterion"] for r in rows):
        sizes = sorted(r["n_personas"] for r in rows if r["criterion"] == criterion and r["meets"] >= 0.8)
        largest = max(r["n_personas"] for r in rows if r["criterion"] == criterion)
        parts.append(f"{criterion} {sizes[0]:,}" if sizes else f"{criterion} > {largest:,}")
    return Reading(f"{', '.join(parts)} ({verdict_draws(data)})")


def verdict_broken_meets(data: dict[str, Any]) -> Reading | None:
    rows = verdict_rows(data, real=False)
    if not rows:
        return None
    worst = max(rows, key=lambda r: r["meets"])
    return Reading(f"**{percent(worst['meets'])}** at most ({worst['case']}: {worst['criterion']} at "
                   f"{worst['n_personas']:,}; {verdict_draws(data)})", worst["meets"] == 0)


OVERHEAD = "`python bench/overhead.py`"
STARTUP = "`python bench/startup.py`"
REPORT = "`python bench/report_scale.py --personas 3000 100000`"
VIEW = "`python bench/view_scale.py`"
VERDICT = "`python bench/verdict_calibration.py --draws 200 --sizes 13 50 200 1000`"
SIXTH = "Issue 42 (session 2026-11-28, sixth session)"

MEASURES = [
    Measure("`psyq run` ÷ the httpx-over-aiohttp loop, fast stub, c = 64", "≥ 0.8", "overhead", OVERHEAD,
            overhead_ratio("httpx-aiohttp", 0.8), "1. Engine overhead (2026-11-22)"),
    Measure("`psyq run` ÷ the plain aiohttp loop, fast stub, c = 64", "≥ 0.6 (issue 16; was 0.4)", "overhead",
            OVERHEAD, overhead_ratio("aiohttp", 0.6), SIXTH),
    Measure("requests/min sustained under a server's limit", "≥ 95 % of the limit", "ratelimit",
            "`python bench/ratelimit.py`", ratelimit_share, "2. Rate-limit adherence (2026-11-22)"),
    Measure("requests answered 429 under that limit", "< 1 %", "ratelimit", "`python bench/ratelimit.py`",
            ratelimit_429, "2. Rate-limit adherence (2026-11-22)"),
    Measure("local model: `logprobs` ÷ `text` items/s, per item", "≥ 5 ×", "local_model",
            "`python bench/local_model.py`", local_logprobs_over_text, "3. Local model (2026-11-22)"),
    Measure("`psyq run` ÷ a raw loop sending the same requests to llama-server", "≥ 0.9", "local_raw",
            "`python bench/local_raw.py`", local_raw_ratio, "Issue 16 (session 2026-11-23)"),
    Measure("10⁶ respondents × 28 items scored and compared with norms: wall", "< 1 s (issues 16, 35)", "scoring",
            "`python bench/scoring_scale.py`", scoring_million("total_s"),
            "Issue 35 (session 2026-11-27): scoring 10⁶"),
    Measure("… memory added by scoring and comparing", "< 0.5 GiB (issues 16, 35)", "scoring",
            "`python bench/scoring_scale.py`", scoring_million("peak_rise_gib"),
            "Issue 35 (session 2026-11-27): scoring 10⁶"),
    Measure("soak (faults, SIGKILLs, reruns): answers lost", "0", "soak", "`python bench/soak.py`", soak_lost,
            "5. Soak (2026-11-22)"),
    Measure("soak: trials sent again once answered", "0", "soak", "`python bench/soak.py`", soak_sent_again,
            "5. Soak (2026-11-22)"),
    Measure("soak: requests for one trial in one run", "≤ max_retries + 1", "soak", "`python bench/soak.py`",
            soak_retries, "5. Soak (2026-11-22)"),
    Measure("batch mode round trip: answers lost", "0", "batch_roundtrip", "`python bench/batch_roundtrip.py`",
            batch_count("lost"), "6. Batch mode round trip (2026-11-23)"),
    Measure("batch mode round trip: requests paid twice", "0", "batch_roundtrip", "`python bench/batch_roundtrip.py`",
            batch_count("paid_twice"), "6. Batch mode round trip (2026-11-23)"),
    Measure("endpoint pool: two replicas ÷ one, slow server", "≥ 1.8 ×", "endpoint_pool",
            "`python bench/endpoint_pool.py`", pool_scaling, "7. Endpoint pools and cached tokens (2026-11-23)"),
    Measure("cached-token sums against the server's reports", "equal, by hand", "endpoint_pool",
            "`python bench/endpoint_pool.py`", pool_cache, "7. Endpoint pools and cached tokens (2026-11-23)"),
    Measure("`import psyq`, a fresh process", "≤ 0.5 s (issue 42)", "startup", STARTUP,
            startup("import psyq", "seconds", 0.5), SIXTH),
    Measure("`psyq --version`", "≤ 0.3 s (issue 42)", "startup", STARTUP, startup("psyq --version", "seconds", 0.3),
            SIXTH),
    Measure("`psyq list`", "≤ 0.8 s (issue 42)", "startup", STARTUP, startup("psyq list", "seconds", 0.8), SIXTH),
    Measure("`psyq view RUNS`: peak memory after two pages", "≤ 150 MB (issue 42)", "startup", STARTUP,
            startup("psyq view RUNS", "maxrss_mb", 150), SIXTH),
    Measure("graded response model: psyq ÷ mirt, the 1,973 people", "≤ 1.0 (issue 42)", "grm_vs_mirt",
            "`python bench/grm_vs_mirt.py`", grm_ratio("people", 1.0), SIXTH),
    Measure("graded response model: psyq ÷ mirt, 3,000 personas-like", "≤ 2.0 (issue 42)", "grm_vs_mirt",
            "`python bench/grm_vs_mirt.py`", grm_ratio("personas-like", 2.0), SIXTH),
    Measure("`psyq report`, 3,000 personas, random answers", "≤ 15 s (issues 35, 42)", "report_scale", REPORT,
            report("random 3000", 15), "Issue 52 (session 2026-12-07)"),
    Measure("`psyq report`, 3,000 personas, small-model answers", "≤ 15 s (issue 42)", "report_scale", REPORT,
            report("small-model 3000", 15), "Issue 52 (session 2026-12-07)"),
    Measure("`psyq report`, 10⁵ personas, random answers", "≤ 60 s and ≤ 2 GiB (issue 42)", "report_scale",
            REPORT, report("random 100000", 60, 2048),
            "Issue 42 (session 2026-11-28): a report of 3,000 and 10⁵ personas"),
    Measure("`psyq report`, 10⁵ personas, small-model answers", "≤ 60 s and ≤ 2 GiB (issue 42)", "report_scale",
            REPORT, report("small-model 100000", 60, 2048), SIXTH),
    Measure("`psyq report`, 12 conditions × 1,000 personas against the 1,973 people", "≤ 60 s on two cores (issue 54)",
            "conditions_report", "`python bench/conditions_report.py`", conditions_report,
            "Issue 54 (session 2026-12-07): a report of 12 conditions × 1,000 personas"),
    Measure("`psyq view` on a large run: filtered trials page", "< 300 ms (issue 36)", "view_scale", VIEW,
            view_store("filtered_worst_max_ms"), "Issue 36 (session 2026-11-27)"),
    Measure("`psyq view` on a large run: the viewer's peak memory", "< 300 MB (issue 36)", "view_scale", VIEW,
            view_store("viewer_peak_rss_mb"), "Issue 36 (session 2026-11-27)"),
    Measure("a full-speed run watched by `psyq view` ÷ alone", "< 1.05 (issue 36)", "view_scale", VIEW,
            view_watched, "Issue 36 (session 2026-11-27)"),
    Measure("… trials stored in every run (answered + missing = planned)", "all (issue 36)", "view_scale", VIEW,
            view_stored, "Issue 36 (session 2026-11-27)"),
    Measure("the verdict on real people: draws marked *falls short*",
            "≤ 5 % (a 90 % interval's error: docs/reading-report.md)",
            "verdict_calibration", VERDICT, verdict_real_falls_short, "Issue 52 (session 2026-12-07)"),
    Measure("… personas for 80 % of draws marked *meets*, per criterion", MISSING, "verdict_calibration", VERDICT,
            verdict_real_power, "Issue 52 (session 2026-12-07)"),
    Measure("the verdict on cohorts broken one known way: draws where the broken criterion *meets*",
            "0 % (should never: docs/reading-report.md)", "verdict_calibration", VERDICT, verdict_broken_meets,
            "Issue 52 (session 2026-12-07)"),
]


def read_results(folder: Path) -> dict[str, dict[str, Any]]:
    """Every bench/results-style JSON file in `folder`, by name without `.json`.

    >>> read_results(Path("/nonexistent"))
    {}
    """
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def machine_cells(data: dict[str, Any]) -> list[str]:
    """Date, machine and load of a file that records its machine (bench/common.py's `machine()`)."""
    facts = data.get("machine")
    if not isinstance(facts, dict):
        return [MISSING, MISSING, MISSING]
    date = str(facts["date"])[:16].replace("T", " ") if facts.get("date") else MISSING
    parts = [f"{facts['cores']} × {facts['cpu'] or 'CPU not read'}" if facts.get("cores") else None,
             f"{facts['memory_gib']} GiB" if facts.get("memory_gib") else None,
             f"Python {facts['python']}" if facts.get("python") else None]
    machine = ", ".join(p for p in parts if p) or MISSING
    load = dig(facts, "loadavg_at_start", 0)
    return [date, machine, f"{load:.2f}" if load is not None else MISSING]


def row(measure: Measure, data: dict[str, Any] | None) -> list[str]:
    """The table's row of `measure` from its JSON file's `data` (None: no such file).

    >>> row(MEASURES[0], None)[2]
    '— (no `overhead.json`; before: *1. Engine overhead (2026-11-22)*)'
    """
    if data is None:
        return [measure.name, measure.target, f"{MISSING} (no `{measure.source}.json`; before: *{measure.history}*)",
                MISSING, MISSING, MISSING, MISSING, measure.command]
    reading = measure.read(data)
    if reading is None:
        figure, met = f"{MISSING} (not in its last run; before: *{measure.history}*)", MISSING
    else:
        figure, met = reading.figure, MISSING if reading.met is None else ("met" if reading.met else "**missed**")
    return [measure.name, measure.target, figure, met, *machine_cells(data), measure.command]


def build_block(folder: Path = RESULTS) -> str:
    """The table and its notes from the JSON files in `folder`, between the two markers.

    >>> block = build_block(Path("/nonexistent"))
    >>> block.startswith(START) and block.endswith(END) and "No JSON file yet for `overhead.json`" in block
    True
    """
    results = read_results(folder)
    rows = [row(measure, results.get(measure.source)) for measure in MEASURES]
    sources = list(dict.fromkeys(measure.source for measure in MEASURES))
    absent = [name for name in sources if name not in results]
    unmeasured = list(dict.fromkeys(m.source for m, r in zip(MEASURES, rows)
                                    if m.source in results and r[2].startswith(f"{MISSING} (not in its last run")))
    undated = [name for name in sources if name in results and MISSING in machine_cells(results[name])]
    files = lambda names: ", ".join(f"`{name}.json`" for name in names)  # noqa: E731
    notes = [
        "Each figure is read from `bench/results/<name>.json`, which its benchmark overwrites on every "
        "invocation: it is the last measurement made, with the date, machine and 1-minute load average at its "
        "start that the file records (bench/common.py's `save_results`; the machine is shared, so the load is "
        "given). A file does not record the arguments its benchmark was given: the command is the one that "
        "measures the row. Refresh with `python bench/results_table.py` after a benchmark and commit the JSON "
        "file with this page; `python bench/results_table.py --check` (and tests/test_bench_results.py) fail "
        "while the two disagree. Where a row has no figure, *before* names the heading of the history below "
        "under which a session last wrote that measure up.",
    ]
    if absent:
        notes.append(f"No JSON file yet for {files(absent)}: bench/results/ was not committed before 2026-12-07, "
                     "so those rows wait for their benchmark's next run.")
    if unmeasured:
        notes.append(f"“Not in its last run”: the file is there, but its benchmark's last invocation did not "
                     f"measure that row ({files(unmeasured)}).")
    if undated:
        notes.append(f"{files(undated)} records no date, machine or load (its benchmark does not write them): "
                     "shown as —.")
    body = "\n\n".join([table(rows, HEADER), *notes])
    return f"{START}\n{body}\n{END}"


def replace_block(page: str, block: str) -> str:
    """`page` with the text from the start marker to the end marker replaced by `block`.

    >>> replace_block(f"# R\\n{START}\\nold\\n{END}\\nhistory", f"{START}\\nnew\\n{END}").splitlines()[2:]
    ['new', '<!-- current figures: end -->', 'history']
    """
    start, end = page.find(START), page.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"the markers {START!r} and {END!r} are not in the page, in that order")
    return page[:start] + block + page[end + len(END):]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is not what the JSON files give")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the folder of JSON files (bench/results)")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page holding the table (bench/RESULTS.md)")
    args = parser.parse_args(argv)
    page = args.page.read_text(encoding="utf-8")
    updated = replace_block(page, build_block(args.results))
    if args.check:
        if updated != page:
            print(f"{args.page}: the table of current figures is not what {args.results}/*.json give; "
                  "run python bench/results_table.py", file=sys.stderr)
            return 1
        return 0
    if updated != page:
        args.page.write_text(updated, encoding="utf-8")
        print(f"{args.page}: table rewritten from {args.results}/*.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
