"""psyq bundle --site: the viewer's pages as a static site inside the bundle (engine/view/site.py).

A stub run with one hostile reply (markup that would run a script, load an image and make bold
text) is bundled with --site and unzipped; the site is opened from file:// in headless Chromium
(the `browser` fixture of tests/conftest.py) and clicked through: runs, the run, the trials list and a filter,
its pages, a trial's transcript, a respondent. The hostile reply must show as its literal text and
run nothing, every page must carry the viewer's CSP, and no request may leave file://.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path

import pytest

from cli_helper import psyq_in_process
from stub_server import StubServer, default_answer
from test_view import _study

HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"> <b>bold</b>'
PAGE_SIZE = 3          # the trials list of 8 trials in 3 pages, so that its page links are followed too
TRIALS = 8             # 2 personas x the mini instrument's 4 items


def _one_hostile_reply():
    """The first reply to item a (whichever persona asks first) is the hostile markup (unreadable: psyq
    re-asks); every other reply is a digit."""
    sent = []

    def answer(body: dict) -> str:
        if "Item a" in json.dumps(body["messages"][:2]) and not sent:
            sent.append(True)
            return HOSTILE
        return default_answer(body)
    return answer


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The stub run bundled with --site (pages of PAGE_SIZE trials; the size note's threshold lowered to
    the run's size), unzipped: the folder, the zip, and what psyq bundle printed."""
    tmp = tmp_path_factory.mktemp("site")
    with StubServer(answer=_one_hostile_reply()) as stub:
        study = _study(tmp, stub.url, 2)
        ran = psyq_in_process("run", study, "--runs-dir", tmp / "runs", cwd=tmp)
        assert ran.returncode == 0, ran.stderr
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("psyq.engine.view.reads.PAGE_SIZE", PAGE_SIZE)
        patch.setattr("psyq.engine.view.site.PAGE_SIZE", PAGE_SIZE)
        patch.setattr("psyq.engine.view.site.LARGE_RUN_TRIALS", TRIALS - 1)
        done = psyq_in_process("bundle", tmp / "runs" / "view_run", "--out", "s.zip", "--site", cwd=tmp)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp / "s.zip") as archive:
        archive.extractall(tmp / "unzipped")
    return {"folder": tmp / "unzipped", "zip": tmp / "s.zip", "done": done, "tmp": tmp}


def test_the_site_is_a_listed_hashed_member_and_the_readme_says_how_to_open_it(site):
    folder = site["folder"]
    record = json.loads((folder / "bundle.json").read_text())
    pages = sorted(p.relative_to(folder).as_posix() for p in (folder / "site").rglob("*") if p.is_file())
    assert "site/index.html" in pages and "site/static/view.css" in pages
    assert sum("/trial/" in p for p in pages) == TRIALS
    for name in pages:
        assert record["members"][name] == hashlib.sha256((folder / name).read_bytes()).hexdigest(), name
    readme = (folder / "README.md").read_text()
    assert "open `site/index.html` in a browser" in readme
    assert f"the run has {TRIALS:,} trials: its static site" in readme          # the size note
    assert f"note: the run has {TRIALS:,} trials" in site["done"].stderr
    assert "open site/index.html" in site["done"].stdout
    verified = psyq_in_process("verify", site["zip"], cwd=site["tmp"])
    assert verified.returncode == 0 and verified.stdout.startswith("ok"), verified.stderr


def test_every_page_carries_the_csp_runs_no_script_and_links_only_to_files_of_the_site(site):
    from psyq.engine.view.app import CSP

    root = site["folder"] / "site"
    pages = sorted(root.rglob("*.html"))
    assert len(pages) > TRIALS + 3
    for page in pages:
        text = page.read_text()
        assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in text.replace("&#39;", "'"), page
        assert "<script" not in text and "<b>bold" not in text and "<img" not in text, page
        assert str(site["tmp"]) not in text and "data-progress" not in text, page
        for target in re.findall(r'(?:href|src)="([^"]*)"', text):
            assert not target.startswith("/") and "://" not in target, (page, target)
            assert (page.parent / target).resolve().is_file(), (page, target)   # every link leads to a page


def test_the_site_opens_from_disk_and_a_hostile_reply_is_inert(site, browser):  # (site first: Playwright runs an event loop)
    page = browser.new_page()
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((site["folder"] / "site" / "index.html").as_uri())
    assert "view_run" in page.locator("#runs").inner_text()
    assert page.evaluate("getComputedStyle(document.querySelector('nav')).borderBottomStyle") == "solid"  # view.css
    page.locator("#runs a").first.click()
    assert "view_run" in page.locator("h1").inner_text() and "a static copy" in page.locator("main").inner_text()
    page.locator("nav a", has_text="trials").click()
    assert page.locator("#count").inner_text().startswith(f"{TRIALS} trials match · page 1 of 3")
    page.locator("#next").click()                                        # the list's pages
    assert page.locator("#count").inner_text().startswith(f"{TRIALS} trials match · page 2 of 3")
    page.locator("#filters a", has_text=re.compile("^a$")).click()       # the filter item = a
    assert page.locator("#count").inner_text().startswith("2 trials match · page 1 of 1")
    assert re.findall(r"\ba\b", " ".join(page.locator("#trials tbody td:nth-child(3)").all_inner_texts())) == ["a", "a"]
    rows = page.locator("#trials tbody tr", has_text="window.pwned")
    assert rows.count() == 1 and HOSTILE[:60] in rows.inner_text()
    assert page.locator("#trials b, #trials img, #trials script").count() == 0
    rows.locator("a").first.click()                                      # the trial and its transcript
    transcript = page.locator("#transcript")
    assert HOSTILE in transcript.inner_text() and "psyq re-ask 1" in transcript.text_content()
    assert "Item a" in transcript.inner_text()
    assert page.locator("main b, main img, main script").count() == 0
    page.locator("main a[href*='respondent/']").first.click()            # its respondent
    assert "Respondent" in page.locator("h1").inner_text()
    page.wait_for_timeout(200)
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert errors == []
    assert requests and all(url.startswith("file://") for url in requests), [u for u in requests if "file:" not in u]
    page.close()


def test_a_page_holding_a_secret_stops_the_bundle(site, tmp_path):
    """The leak check runs on every derived member, the site's pages among them."""
    from psyq.engine.bundle.write import write_bundle
    from psyq.engine.files.errors import InputError
    from psyq.engine.results.run import open_run

    run = open_run(next((site["tmp"] / "runs" / "view_run").iterdir()))
    secret = "sk-planted-site-0c1e7b2d8e6f"

    def derived(bundled_run: Path):
        yield "site/index.html", f"<p>{secret}</p>".encode()

    with pytest.raises(InputError, match="site/index.html: holds the value of environment variable MY_API_KEY"):
        write_bundle(run, tmp_path / "x.zip", derived=derived, environ={"MY_API_KEY": secret})
    assert not (tmp_path / "x.zip").exists()
