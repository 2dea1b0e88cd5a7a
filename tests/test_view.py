"""psyq view: the read-only web viewer of runs (engine/view/), over real HTTP and in a real
headless browser (Debian's chromium through Playwright; those tests skip when it is missing).

Stub runs are administered over the stub server (tests/stub_server.py): a hostile reply and
persona text must render as text with no script run, a live run's progress must move on the page
without a reload, a trial's transcript must show the request and the re-asks, no path outside
the runs folder may be read, and viewing must change nothing in a run's folder.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from psyq import administer, load_study
from psyq.cli import main
from psyq.analysis.report import methods_text
from psyq.engine.view.server import ViewServer
from runs_helper import MINI, ROOT
from stub_server import StubServer, default_answer

SCREENSHOT = ROOT / "docs" / "images" / "view_run.png"
HOSTILE = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">"
PERSONA_HOSTILE = "<img src=x onerror=\"window.__pwned=3\">"


def _study(tmp: Path, url: str, n_personas: int, repeats: int = 1, concurrency: int = 4) -> Path:
    personas = [{"id": f"p{i:02d}", "attributes": {"gender": "female" if i % 2 else "male", "age": 20 + i,
                                                          "note": PERSONA_HOSTILE}}
                for i in range(n_personas)]
    (tmp / "cohort.yaml").write_text(yaml.safe_dump({"psyq": "cohort/1", "id": "c", "include_baseline": False,
                                                     "personas": personas}))
    (tmp / "study.yaml").write_text(yaml.safe_dump({
        "psyq": "study/1", "id": "view_run", "instruments": [str(MINI)], "cohort": "cohort.yaml",
        "backends": [{"id": "stub", "kind": "openai", "base_url": url, "model": "stub-model",
                      "concurrency": concurrency}],
        "protocol": {"answer": "text", "option_order": "as_written", "repeats": repeats, "seed": 1,
                     "reask_limit": 2}}))
    return tmp / "study.yaml"


def hostile_then_readable(calls: Counter):
    """Item a's first reply is hostile markup (unreadable, so psyq re-asks); then a digit."""
    def answer(body: dict) -> str:
        key = json.dumps(body["messages"][:2])
        calls[key] += 1
        if "Item a" in key and calls[key] == 1:
            return HOSTILE
        return default_answer(body)
    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A finished stub run with hostile replies and persona texts, re-asks; returns the runs folder."""
    tmp = tmp_path_factory.mktemp("view")
    with StubServer(answer=hostile_then_readable(Counter())) as stub:
        asyncio.run(administer(load_study(_study(tmp, stub.url, 4)), tmp / "runs", log=lambda m: None))
    return tmp / "runs"


@pytest.fixture(scope="module")
def viewer(runs):
    with ViewServer(runs, methods=methods_text) as server:
        yield server


def _rel(runs: Path) -> str:
    (run,) = [p.parent for p in runs.glob("*/*/manifest.json")]
    return run.relative_to(runs).as_posix()


def raw_get(url: str, path: str, method: str = "GET", host: str | None = None) -> tuple[int, dict, str]:
    """A request with the path exactly as given (no client-side normalisation of `..`)."""
    m = re.match(r"http://([^:/]+):(\d+)/", url)
    conn = http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=10)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"{m.group(1)}:{m.group(2)}")
    conn.endheaders()
    response = conn.getresponse()
    body = response.read().decode("utf-8", "replace")
    conn.close()
    return response.status, dict(response.getheaders()), body


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `folder` (itself included) with its mtime and size."""
    out = {".": (folder.stat().st_mtime_ns, 0)}
    for path in folder.rglob("*"):
        st = path.lstat()
        out[path.relative_to(folder).as_posix()] = (st.st_mtime_ns, st.st_size)
    return out


# --- over HTTP ------------------------------------------------------------------------------------------

def test_every_page_answers_and_carries_the_safety_headers(viewer, runs):
    rel = _rel(runs)
    status, headers, body = raw_get(viewer.url, "/")
    assert status == 200 and f'href="/run/{rel}/"' in body
    assert "script-src 'self'" in headers["content-security-policy"] and "unsafe-inline" not in \
        headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"
    trial_id = re.search(r"/trial/([0-9a-f]+)", raw_get(viewer.url, f"/run/{rel}/trials")[2]).group(1)
    for path in (f"/run/{rel}/", f"/run/{rel}/trials?status=answered&reason=unparseable&instrument=mini&item=a"
                 f"&backend=stub&attribute=gender%3Dfemale&stage=&q=script&page=0", f"/run/{rel}/trial/{trial_id}",
                 f"/run/{rel}/respondent/p01", f"/run/{rel}/methods", f"/run/{rel}/progress.json",
                 "/static/view.js", "/static/view.css"):
        status, _, body = raw_get(viewer.url, path)
        assert status == 200, path
        assert "<script>window" not in body and "<img src=x" not in body, path
    assert json.loads(raw_get(viewer.url, f"/run/{rel}/progress.json")[2])["cells"]["total|answered"] == 16


def test_the_trials_filters_select_in_sql(viewer, runs):
    rel = _rel(runs)
    count = lambda query: int(re.search(r'id="count">([\d,]+) trials', raw_get(viewer.url, f"/run/{rel}/trials?{query}")[2])
                              .group(1).replace(",", ""))
    assert count("") == 16
    assert count("item=a") == 4 and count("attribute=gender%3Dfemale") == 8
    assert count("q=__pwned") == 4 and count("q=%25") == 0   # % is searched as itself
    assert count("status=failed") == 0 and count("stage=0") == 0
    assert count("reason=refusal") == 0 and count("status=answered&item=b") == 4
    # Each row names its trial's items (the cell once showed a method of the row's dict instead).
    page = raw_get(viewer.url, f"/run/{rel}/trials?item=b")[2]
    assert re.findall(r"<td>(\w+)</td><td>stub", page) == ["b"] * 4


def test_no_path_outside_the_runs_folder_can_be_read(viewer, runs, tmp_path):
    rel = _rel(runs)
    outside = tmp_path / "outside"
    shutil.copytree(runs / rel, outside / "secret_study" / "run1")
    (outside / "secret.txt").write_text("secret")
    link = runs / "linked"
    link.symlink_to(outside, target_is_directory=True)
    (runs / rel / "report.html").symlink_to(outside / "secret.txt")
    try:
        for path in ("/run/../../etc/passwd", "/run/%2e%2e/%2e%2e/etc/passwd", "/run/..%2f..%2fetc%2fpasswd",
                     f"/run/{rel}/../../../outside/secret.txt", "/run//etc/passwd", f"/run/{outside}/secret_study/run1/",
                     "/run/linked/secret_study/run1/", "/static/../app.py", "/static/..%2fapp.py",
                     f"/run/{rel}/report.html", "/etc/passwd"):
            status, _, body = raw_get(viewer.url, path)
            assert status == 404, path
            assert "secret" not in body
        assert "linked" not in raw_get(viewer.url, "/")[2]
    finally:
        link.unlink()
        (runs / rel / "report.html").unlink()



def test_a_run_folder_linked_from_inside_to_outside_the_runs_folder_is_refused(viewer, runs, tmp_path):
    """runs/study/escape is a symlink to a run folder outside the runs folder. The link's own path lies
    inside, so only the resolved path (the link followed) shows that it leads out: the viewer neither
    lists nor serves it (the copy outside is a real run, so a viewer that checked the unresolved path would)."""
    rel = _rel(runs)
    outside = tmp_path / "elsewhere"
    shutil.copytree(runs / rel, outside / "hidden_run")
    study = runs / "study"
    study.mkdir()
    (study / "escape").symlink_to(outside / "hidden_run", target_is_directory=True)
    try:
        assert (runs / "study" / "escape" / "manifest.json").is_file()   # the link works: a run behind it
        for path in ("/run/study/escape/", "/run/study/escape/trials", "/run/study/escape/progress.json",
                     "/run/study/escape/methods"):
            assert raw_get(viewer.url, path)[0] == 404, path
        assert "study/escape" not in raw_get(viewer.url, "/")[2]
        assert raw_get(viewer.url, f"/run/{rel}/")[0] == 200   # the real run is still served
    finally:
        (study / "escape").unlink()
        study.rmdir()


def test_the_served_report_may_run_no_script(viewer, runs):
    """A report is self-contained and runs no script (app.py's REPORT_CSP): the page's Content-Security-Policy
    allows no inline script, neither by a script-src nor by the default-src it falls back to."""
    rel = _rel(runs)
    report = runs / rel / "report.html"
    report.write_text("<!doctype html><title>r</title><style>p{color:red}</style><p>report</p>", encoding="utf-8")
    try:
        status, headers, body = raw_get(viewer.url, f"/run/{rel}/report.html")
        assert status == 200 and "<p>report</p>" in body
        directives = (x.split() for x in headers["content-security-policy"].split(";"))
        policy = {d[0]: d[1:] for d in directives if d}
        script_sources = policy.get("script-src", policy.get("default-src", []))
        assert "'unsafe-inline'" not in script_sources and "'unsafe-eval'" not in script_sources
        assert policy["default-src"] == ["'none'"] and policy.get("script-src") in (None, ["'none'"])
    finally:
        report.unlink()


def test_only_get_and_the_hosts_it_serves(viewer, runs):
    rel = _rel(runs)
    assert raw_get(viewer.url, "/", method="HEAD")[0] == 200
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert raw_get(viewer.url, f"/run/{rel}/trials", method=method)[0] == 405
        assert raw_get(viewer.url, "/", method=method)[0] == 405
    port = viewer.url.rsplit(":", 1)[1].strip("/")
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
        assert raw_get(viewer.url, "/", host=host)[0] == 400
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        assert raw_get(viewer.url, "/", host=host)[0] == 200


def test_viewing_changes_nothing_in_the_run_folder(runs):
    rel = _rel(runs)
    before = snapshot(runs / rel)
    time.sleep(0.05)
    with ViewServer(runs, methods=methods_text) as server:
        body = raw_get(server.url, f"/run/{rel}/trials")[2]
        trial_ids = set(re.findall(r"/trial/([0-9a-f]+)", body))
        for path in ["/", f"/run/{rel}/", f"/run/{rel}/progress.json", f"/run/{rel}/methods",
                     f"/run/{rel}/trials?q=x&item=a&attribute=gender%3Dmale", f"/run/{rel}/respondent/p00",
                     *(f"/run/{rel}/trial/{t}" for t in trial_ids)]:
            assert raw_get(server.url, path)[0] == 200, path
    assert snapshot(runs / rel) == before


def test_a_running_runs_progress_is_recounted_at_most_once_per_twenty_times_its_cost(runs, monkeypatch):
    """Counting a run's progress scans its store: while the run is written, a poll within 20 × the
    last count's time gets the last count; a poll after that, or once the lock is released, counts."""
    from dataclasses import replace
    from types import SimpleNamespace

    from psyq.engine.view import app as view_app

    clock, counted, holder = [1000.0], [], ["4242"]
    real = view_app.summarise_run

    def summarise(path):
        counted.append(clock[0])
        clock[0] += 0.1                      # this count "took" 0.1 s: fresh for the next 2 s
        return replace(real(path), locked_by=holder[0])

    monkeypatch.setattr(view_app, "summarise_run", summarise)
    monkeypatch.setattr(view_app, "lock_holder", lambda path: holder[0])
    monkeypatch.setattr(view_app, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    viewer = view_app.Viewer(runs)
    run = runs / _rel(runs)
    assert viewer.progress(run)["running"] and len(counted) == 1
    clock[0] += 1.0
    viewer.progress(run)
    assert len(counted) == 1                 # 1.1 s after a 0.1 s count: the last count
    clock[0] += 1.5
    viewer.progress(run)
    assert len(counted) == 2                 # 2.6 s after: counted again
    holder[0] = None                         # the writer let go of the lock: counted at once
    assert not viewer.progress(run)["running"] and len(counted) == 3
    viewer.progress(run)
    assert len(counted) == 3                 # a finished run, unchanged: never counted again


def test_the_command_refuses_a_public_host_without_expose(capsys, runs):
    assert main(["view", str(runs), "--host", "0.0.0.0"]) == 2
    assert "--expose" in capsys.readouterr().err
    assert main(["view", str(runs / "no_such_folder")]) == 2


# --- in the browser -------------------------------------------------------------------------------------

def test_the_runs_page_lists_the_run(viewer, runs, browser):   # browser last: Playwright runs an event loop
    page = browser.new_page()
    page.goto(viewer.url)
    assert _rel(runs) in page.locator("#runs").inner_text()
    assert "view_run" in page.locator("#runs").inner_text()
    page.close()


def test_a_hostile_reply_and_persona_render_as_text_and_run_nothing(viewer, runs, browser):
    rel = _rel(runs)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{viewer.url}run/{rel}/trials?item=a")
    assert HOSTILE[:40] in page.locator("#trials").inner_text()
    page.locator("#trials a[href*='/trial/']").first.click()
    page.wait_for_load_state()
    text = page.locator("#transcript").inner_text()
    assert HOSTILE in text and PERSONA_HOSTILE in page.locator("main").inner_text()
    page.goto(f"{viewer.url}run/{rel}/respondent/p00")
    assert PERSONA_HOSTILE in page.locator("#attributes").inner_text()
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    assert errors == []
    page.close()


def test_a_transcript_shows_the_request_and_the_reasks(viewer, runs, browser):
    rel = _rel(runs)
    page = browser.new_page()
    page.goto(f"{viewer.url}run/{rel}/trials?item=a&attribute=gender%3Dmale")
    page.locator("#trials a[href*='/trial/']").first.click()
    page.wait_for_load_state()
    transcript = page.locator("#transcript")
    messages = transcript.locator(".msg")
    assert "You are answering a questionnaire" in messages.nth(0).inner_text()   # the system message sent
    assert "Item a" in messages.nth(1).inner_text()                               # the question sent
    assert HOSTILE in messages.nth(2).inner_text()                                # the first reply
    assert "psyq re-ask 1" in messages.nth(3).text_content()                        # the re-ask, marked
    assert "reply to re-ask 1" in messages.nth(4).text_content()
    assert "1 re-asks" in page.locator("main").inner_text()
    page.close()


def test_a_run_page_moves_while_the_run_answers(browser, tmp_path):
    stub = StubServer(latency_s=0.15)
    stub.start()
    study = _study(tmp_path, stub.url, n_personas=10, repeats=2, concurrency=1)   # 80 trials, ~12 s
    runs = tmp_path / "runs"
    done = threading.Event()

    def run() -> None:
        try:
            asyncio.run(administer(load_study(study), runs, log=lambda m: None))
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not list(runs.glob("*/*/run.sqlite")) and time.monotonic() < deadline:
            time.sleep(0.05)
        with ViewServer(runs) as server:
            page = browser.new_page()
            page.goto(f"{server.url}run/{_rel(runs)}/")
            first = int(page.locator("#total-answered").inner_text())
            assert "running" in page.locator("#state").inner_text()
            later, deadline = first, time.monotonic() + 10
            while later <= first and time.monotonic() < deadline:   # the page polls; it is never reloaded here
                page.wait_for_timeout(200)
                later = int(page.locator("#total-answered").inner_text())
            assert later > first and not done.is_set()
            if os.environ.get("PSYQ_UPDATE_SCREENSHOTS") == "1":
                SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                page.set_viewport_size({"width": 1280, "height": 900})
                page.screenshot(path=str(SCREENSHOT), full_page=False)
            page.close()
    finally:
        done.wait(60)
        stub.stop()


def test_the_docs_screenshot_is_committed():
    """docs/view.md shows a run page as the browser above saw it (PSYQ_UPDATE_SCREENSHOTS=1 retakes it)."""
    assert SCREENSHOT.is_file() and SCREENSHOT.stat().st_size > 10_000
