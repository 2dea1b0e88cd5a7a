"""The viewer's pages as a static site (``psyq bundle --site``): files that open from disk
(file://) or any static host, with no server and no psyq.

Every page is the viewer's own: the Starlette app of app.py, made with ``site=True``, is asked
in-process (an ASGI call on one event loop: no socket, no server), so the same routes, templates,
reads and autoescaping make it; then its links, which name the server's routes (``/run/RUN/trial/ID``),
are rewritten into relative paths of files. The rewriting touches attribute values only, and only
those the templates wrote: autoescaping turns every ``"`` of untrusted text into ``&#34;``, so no
reply can make an attribute that the rewriting would see.

The layout (RUN_ID: the run's id from its manifest)::

    index.html                                      the runs page
    static/view.css                                 the viewer's stylesheet (no script: a copy does not change)
    run/RUN_ID/index.html                           the run
    run/RUN_ID/trials/page-1.html                   every trial, 50 a page, newest first
    run/RUN_ID/trials/status-missing/page-1.html    one filter's trials (status, reason, instrument,
    run/RUN_ID/trials/instrument-X/backend-Y/...    backend, item; instrument x backend from the run page)
    run/RUN_ID/trial/TRIAL_ID.html                  one trial and its transcript
    run/RUN_ID/respondent/ID.html                   one respondent

The trials' filters are pre-rendered, one value at a time, as pages the trials page links to;
no script filters in the page (a list of 10^5 trials would be tens of MB of JSON to load, and the
rows would need a second renderer beside the template). Searching the replies and filtering by
persona attribute or stage stay with ``psyq view FILE.zip``.

The pages are made one at a time and handed on (:func:`site_pages` is a generator): a run of
10^5 trials makes some 10^5 pages, never held together.
"""

from __future__ import annotations

import hashlib
import html
import posixpath
import re
from contextlib import closing
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator, Mapping
from urllib.parse import parse_qsl, quote, unquote, urlencode, urljoin, urlsplit

from psyq.engine.store.readonly import connect_readonly
from psyq.engine.results.run import Run, as_run
from psyq.engine.view.reads import PAGE_SIZE, TrialFilter, trial_filter_choices

HERE = Path(__file__).parent
LARGE_RUN_TRIALS = 10**5
BYTES_PER_TRIAL = 12_000   # a trial's page and its rows in the trials lists, before compression (the stub runs' mean)
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}")
_LINK = re.compile(r'(\s(?:href|src|action))="([^"]*)"')


def file_name(value: str) -> str:
    """`value` as one part of a file's path: itself when it is a plain name, else a digest of it
    (an id may hold '/', '..', spaces or characters a file system refuses).

    Example:
        >>> file_name("p01"), file_name("../../etc"), file_name("a b")
        ('p01', 'x-74ccf3c5b4c19a81', 'x-c8687a08aa5d6ed2')
    """
    if _SAFE_NAME.fullmatch(value) and not value.endswith("."):
        return value
    return "x-" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def site_size_note(trials: int) -> str | None:
    """What a static site of a run of `trials` trials costs, when it has more than 10^5 (None: less).

    Example:
        >>> site_size_note(10), site_size_note(200_000)[:40]
        (None, 'the run has 200,000 trials: its static s')
    """
    if trials <= LARGE_RUN_TRIALS:
        return None
    return (f"the run has {trials:,} trials: its static site (--site) is a page per trial and the trials "
            f"lists once per filter value, about {trials * BYTES_PER_TRIAL / 1e9:,.1f} GB before compression, "
            "and takes minutes to write; `psyq view FILE.zip` shows the same pages from the bundle without them")


def count_trials(run_path: Path) -> int:
    """How many trials the run at `run_path` holds.

    Example (`run_dir`: a finished stub run of the mini instrument, 4 personas):
        >>> count_trials(run_dir)
        16
    """
    with closing(connect_readonly(Path(run_path) / "run.sqlite")) as db:
        return db.execute("SELECT COUNT(*) FROM trials").fetchone()[0]


class SiteMap:
    """Which file of the site each of the viewer's URLs is, and the links of a page rewritten into
    relative paths of those files.

    `rel`: the run's path under the viewer's root; `folder`: the run's folder in the site;
    `report_at`: the run's report.html relative to the site's root; `filters`: the filter sets
    whose trials pages the site holds.

    Example:
        >>> site = SiteMap("run", "run/ab12", "../run/report.html", [{}, {"status": "missing"}])
        >>> site.file_of("/run/run/trials?status=missing&page=1")
        'run/ab12/trials/status-missing/page-2.html'
        >>> site.rewrite('<a href="/run/run/trial/t1">t1</a> <a href="?status=missing&amp;page=1">next</a>',
        ...              "/run/run/trials?status=missing")
        '<a href="../../trial/t1.html">t1</a> <a href="page-2.html">next</a>'
    """

    def __init__(self, rel: str, folder: str, report_at: str, filters: list[Mapping[str, str]]):
        self.prefix = f"/run/{rel}/"
        self.folder = folder
        self.report_at = report_at
        self.filters = {self._key(f) for f in filters}

    @staticmethod
    def _key(chosen: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        order = [f.name for f in fields(TrialFilter)]
        return tuple(sorted(((k, str(v)) for k, v in chosen.items() if k != "page" and v not in ("", None)),
                            key=lambda kv: order.index(kv[0])))

    def trials_file(self, chosen: Mapping[str, str], page: int) -> str:
        """The file of page `page` (0-based) of the trials `chosen` selects."""
        key = self._key(chosen)
        if key not in self.filters:
            raise ValueError(f"the static site holds no trials page for the filter {dict(key)}")
        parts = [f"{k}-{file_name(v)}" for k, v in key]
        return posixpath.join(self.folder, "trials", *parts, f"page-{page + 1}.html")

    def file_of(self, url: str) -> str:
        """The file (relative to the site's root) of one of the viewer's URLs."""
        parsed = urlsplit(url)
        path = parsed.path
        if path == "/":
            return "index.html"
        if path == "/static/view.css":
            return "static/view.css"
        if path.startswith(self.prefix):
            rest = path[len(self.prefix):]
            if rest == "":
                return f"{self.folder}/index.html"
            if rest == "trials":
                chosen = TrialFilter.from_query(dict(parse_qsl(parsed.query)))
                return self.trials_file(chosen.query(), chosen.page)
            if rest == "report.html":
                return self.report_at
            kind, _, name = rest.partition("/")
            if kind in ("trial", "respondent") and name and "/" not in name:
                return f"{self.folder}/{kind}/{file_name(unquote(name))}.html"
        raise ValueError(f"the static site holds no page for {url}")

    def rewrite(self, page: str, url: str) -> str:
        """`page` (the viewer's HTML for `url`) with every link to the viewer made relative to its file."""
        here = posixpath.dirname(self.file_of(url)) or "."

        def relative(match: re.Match[str]) -> str:
            target = html.unescape(match.group(2))
            if target.startswith("#") or "://" in target:
                return match.group(0)
            where = posixpath.relpath(self.file_of(urljoin(url, target)), here)
            return f'{match.group(1)}="{html.escape(where, quote=True)}"'

        return _LINK.sub(relative, page)


def _asgi_get(app: Any, url: str) -> tuple[int, bytes]:
    """A coroutine giving the status and body of a GET of `url` (path and query) from the ASGI application
    `app`, in-process."""
    parsed = urlsplit(url)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": unquote(parsed.path), "raw_path": parsed.path.encode("ascii"),
             "query_string": parsed.query.encode("ascii"), "root_path": "", "headers": [(b"host", b"127.0.0.1")],
             "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 80)}
    status, body = [0], []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status[0] = message["status"]
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    async def call() -> tuple[int, bytes]:
        await app(scope, receive, send)
        return status[0], b"".join(body)

    return call()


def _filters(db: Any, manifest: Mapping[str, Any]) -> list[dict[str, str]]:
    """The filter sets the site renders: none; each value of each filter the trials page links to;
    each instrument x backend the run page links to (planned or sent)."""
    out: list[dict[str, str]] = [{}]
    for key, values in trial_filter_choices(db).items():
        out.extend({key: c["value"]} for c in values)
    pairs = {(str(i), str(b)) for i, b in db.execute("SELECT DISTINCT instrument_id, backend_id FROM trials")}
    pairs |= {(str(i), str(b)) for b, instruments in (manifest.get("trials_planned_by") or {}).items()
              for i in instruments}
    out.extend({"instrument": i, "backend": b} for i, b in sorted(pairs))
    return out


def site_pages(run: Run | str | Path, report_at: str = "../run/report.html") -> Iterator[tuple[str, bytes]]:
    """The static site of `run` (opened by :func:`psyq.open_run`, or its path), file by file: (path relative to the site's root,
    bytes), one page made at a time. `report_at`: where the run's report.html lies relative to the
    site's root (a bundle: ``../run/report.html``).

    Example (`run_dir`: a finished stub run of the mini instrument, 4 personas):
        >>> pages = dict(site_pages(run_dir))
        >>> "index.html" in pages, sum(name.split("/")[2] == "trial" for name in pages if name.count("/") == 3)
        (True, 16)
        >>> b"http-equiv=\\"Content-Security-Policy\\"" in pages["index.html"], b"<script" in pages["index.html"]
        (True, False)
    """
    import asyncio

    from psyq.engine.view.app import create_app

    run = as_run(run)
    run_path, manifest = run.path.resolve(), run.manifest
    rel = run_path.name                                  # the viewer's name of a root that is itself a run
    folder = f"run/{file_name(str(manifest.get('run_id') or rel))}"
    yield "static/view.css", (HERE / "static" / "view.css").read_bytes()
    app = create_app(run_path, site=True)
    with closing(connect_readonly(run_path / "run.sqlite")) as db, asyncio.Runner() as loop:
        filters = _filters(db, manifest)
        site = SiteMap(rel, folder, report_at, filters)

        def page(url: str) -> tuple[str, bytes]:
            status, body = loop.run(_asgi_get(app, url))
            if status != 200:
                raise RuntimeError(f"the viewer answered {status} to {url}: {body[:200]!r}")
            return site.file_of(url), site.rewrite(body.decode("utf-8"), url).encode("utf-8")

        yield page("/")
        yield page(site.prefix)
        for chosen in filters:
            where, args = TrialFilter(**chosen).where()
            total = db.execute(f"SELECT COUNT(*) FROM trials t WHERE {where}", args).fetchone()[0]
            for number in range(max((total + PAGE_SIZE - 1) // PAGE_SIZE, 1)):
                yield page(f"{site.prefix}trials?{urlencode(TrialFilter(**chosen).query(page=number))}")
        for (trial_id,) in db.execute("SELECT trial_id FROM trials ORDER BY rowid"):
            yield page(f"{site.prefix}trial/{quote(trial_id, safe='')}")
        for (respondent_id,) in db.execute("SELECT respondent_id FROM respondents ORDER BY rowid"):
            yield page(f"{site.prefix}respondent/{quote(respondent_id, safe='')}")
