"""The viewer's web application: routes, the run lookup that keeps every path inside the runs
folder, and the headers every response carries (the reasons are in engine/view/__init__.py).

Routes (GET and HEAD only):

- ``/``: every run under the folder, newest first;
- ``/run/RUN/``: one run (RUN is its path relative to the folder, e.g. ``quickstart/ab12cd34ef56``),
  with ``/run/RUN/progress.json`` (polled by ``static/view.js``), ``/run/RUN/trials`` (filters in
  the query string), ``/run/RUN/trial/TRIAL_ID``, ``/run/RUN/respondent/ID``, ``/run/RUN/methods``
  and ``/run/RUN/report.html``;
- ``/static/view.js``, ``/static/view.css``.
"""

from __future__ import annotations

import json
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.concurrency import run_in_threadpool

from psyq.engine.design.prices import PriceTable
from psyq.engine.files.errors import PsyqError
from psyq.engine.results.runs import find_run_dirs, list_runs, run_breakdown, run_state, summarise_run
from psyq.engine.results.usage import read_token_usage
from psyq.engine.store.readonly import connect_readonly
from psyq.engine.results.run import open_run
from psyq.engine.store.runlock import lock_holder
from psyq.engine.view import reads

HERE = Path(__file__).parent
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
# A report is self-contained (inline styles, figures as data: images) and runs no script.
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'"
# A running run's progress is recomputed at most once per this many times the last computation took
# (Viewer.progress): the viewer then takes at most ~5 % of one core from the run it watches.
PROGRESS_COST_FACTOR = 20
STATIC = {"view.js": "text/javascript; charset=utf-8", "view.css": "text/css; charset=utf-8"}


class SecurityHeaders:
    """ASGI middleware: the headers every response carries (a response's own CSP is kept)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                extra = {b"content-security-policy": CSP.encode(), b"x-content-type-options": b"nosniff",
                         b"referrer-policy": b"no-referrer", b"cache-control": b"no-store",
                         b"x-frame-options": b"DENY"}
                headers.extend((k, v) for k, v in extra.items() if k not in names)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


class Viewer:
    """The pages of the runs under `root` (every handler reads; none writes).

    `site`: the pages as the static copy needs them (engine/view/site.py): the CSP in a ``<meta>``
    tag (no server sends a header from disk), no polling script (a copy does not change), the
    trials' filters as links to the pages rendered for each value (no server answers a form), and
    no folder of this machine named.
    """

    def __init__(self, root: Path, methods: Callable[[Path], str] | None = None, *, site: bool = False):
        self.root = root.resolve()
        self.methods = methods
        self.site = site
        self._choices: dict[Path, dict[str, list[dict[str, Any]]]] = {}   # site: the store does not change
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters["when"] = lambda s: (s or "-").replace("T", " ")[:19]
        self.env.filters["seconds"] = lambda x: "-" if x is None else f"{x:.3f}"
        self.env.filters["tojson_text"] = lambda x: json.dumps(x, indent=1, ensure_ascii=False, sort_keys=True)
        self.env.globals["urlencode"] = urlencode
        self.env.globals["site"] = site
        self.env.globals["csp"] = CSP
        self._progress: dict[Path, tuple[tuple, dict, float]] = {}   # stamp, data, fresh until (monotonic)

    # --- finding runs, never outside the folder ---------------------------------------------------
    def runs(self) -> dict[str, Path]:
        """Every run directory under the folder that resolves inside it, by its relative path."""
        found = {}
        for path in find_run_dirs(self.root):
            real = path.resolve()
            if real == self.root:              # the folder given is itself a run
                found[real.name] = real
            elif real.is_relative_to(self.root):
                found[real.relative_to(self.root).as_posix()] = real
        return found

    def run(self, rel: str) -> Path:
        path = self.runs().get(rel.strip("/"))
        if path is None:
            raise HTTPException(404, "no such run")
        return path

    def render(self, template: str, **context: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(template).render(**context))

    # --- pages ----------------------------------------------------------------------------------------
    async def runs_page(self, request: Request) -> Response:
        rows = await run_in_threadpool(self._runs_rows)
        return self.render("runs.html", root=str(self.root), runs=rows)

    def _runs_rows(self) -> list[dict[str, Any]]:
        allowed = {path: rel for rel, path in self.runs().items()}
        rows = []
        for summary in list_runs(self.root):
            rel = allowed.get(summary.path.resolve())
            if rel is None:
                continue
            manifest = _manifest(summary.path)
            rows.append({"rel": rel, "summary": summary, "state": run_state(summary),
                         "usage": _usage(summary.path, manifest),
                         "report": _report(summary.path, self.root) is not None})
        return rows

    async def run_page(self, request: Request) -> Response:
        path = self.run(request.path_params["rel"])
        context = await run_in_threadpool(self._run_context, path)
        return self.render("run.html", rel=request.path_params["rel"].strip("/"), **context)

    def _run_context(self, path: Path) -> dict[str, Any]:
        manifest = _manifest(path)
        with closing(connect_readonly(path / "run.sqlite")) as db:
            latency = reads.latency_quantiles(db)
        progress = self.progress(path)
        return {"manifest": manifest, "progress": progress, "latency": latency, "usage": _usage(path, manifest),
                "report": _report(path, self.root) is not None, "has_methods": self.methods is not None}

    def progress(self, path: Path) -> dict[str, Any]:
        """Progress per instrument × backend; recomputed only when the store or its lock changed and,
        while the run is going, at most once per PROGRESS_COST_FACTOR × the last computation's time.

        Counting is a scan of the whole trials table (four queries, ~0.3 s at 10⁵ trials on two shared
        cores): redone on every poll of a growing run, it would take a third of a core from the run it
        watches. So a run's progress is refreshed at most every 20 × its cost (every second while it
        takes under 50 ms, every ~6 s at 10⁵ trials), and at once when its writer has let go of the lock.
        """
        stamp = tuple(_stamp(path / name) for name in ("run.sqlite", "run.sqlite-wal", "manifest.json", "run.lock"))
        cached = self._progress.get(path)
        if cached:
            old_stamp, data, fresh_until = cached
            if old_stamp == stamp and not data["running"]:
                return data
            if data["running"] and time.monotonic() < fresh_until and lock_holder(path) is not None:
                return data
        began = time.monotonic()
        summary = summarise_run(path)
        rows, notes = run_breakdown(path)
        cells: dict[str, Any] = {"state": run_state(summary)}
        table = []
        for r in rows:
            done = sum(r.counts.values())
            values = {"planned": "?" if r.planned is None else r.planned, "answered": r.counts.get("answered", 0),
                      "missing": r.counts.get("missing", 0), "failed": r.counts.get("failed", 0),
                      "not_sent": "?" if r.planned is None else max(r.planned - done, 0),
                      "retries": r.retries, "reasks": r.reasks,
                      "reasons": ", ".join(f"{k} {v}" for k, v in sorted(r.missing_reasons.items())) or "-"}
            key = f"{r.instrument}|{r.backend}"
            cells.update({f"{key}|{k}": v for k, v in values.items()})
            table.append({"instrument": r.instrument, "backend": r.backend, "key": key, **values})
        for status in ("answered", "missing", "failed"):
            cells[f"total|{status}"] = summary.counts.get(status, 0)
        data = {"running": summary.locked_by is not None, "cells": cells, "rows": table, "notes": notes}
        spent = time.monotonic() - began
        self._progress[path] = (stamp, data, time.monotonic() + PROGRESS_COST_FACTOR * spent)
        return data

    async def progress_json(self, request: Request) -> Response:
        path = self.run(request.path_params["rel"])
        data = await run_in_threadpool(self.progress, path)
        return JSONResponse({"running": data["running"], "cells": data["cells"]})

    async def trials_page(self, request: Request) -> Response:
        path = self.run(request.path_params["rel"])
        chosen = reads.TrialFilter.from_query(request.query_params)
        manifest = _manifest(path)
        # A study's conditions (engine/design/conditions.py), in order; a run without them has no condition filter.
        conditions = [str(c.get("id")) for c in manifest.get("conditions") or [] if isinstance(c, dict)]
        if not conditions:
            chosen = replace(chosen, condition="")

        def read() -> dict[str, Any]:
            with closing(connect_readonly(path / "run.sqlite")) as db:
                return reads.trials_page(db, chosen, conditions=bool(conditions))

        page = await run_in_threadpool(read)
        planned = manifest.get("trials_planned_by") or {}
        choices = await run_in_threadpool(self.filter_choices, path) if self.site else {}
        return self.render("trials.html", rel=request.path_params["rel"].strip("/"), f=chosen, reasons=reads.REASONS,
                           backends=sorted(planned), instruments=sorted({i for v in planned.values() for i in v}),
                           conditions=conditions, choices=choices, **page)

    def filter_choices(self, path: Path) -> dict[str, list[dict[str, Any]]]:
        """The values each filter of the static copy's trials pages takes in the run, with their counts
        (read once per run: a copy is made of a store that no longer changes)."""
        if path not in self._choices:
            with closing(connect_readonly(path / "run.sqlite")) as db:
                self._choices[path] = reads.trial_filter_choices(db)
        return self._choices[path]

    async def trial_page(self, request: Request) -> Response:
        path = self.run(request.path_params["rel"])

        def read() -> dict[str, Any] | None:
            with closing(connect_readonly(path / "run.sqlite")) as db:
                return reads.trial_detail(db, request.path_params["trial_id"])

        detail = await run_in_threadpool(read)
        if detail is None:
            raise HTTPException(404, "no such trial")
        return self.render("trial.html", rel=request.path_params["rel"].strip("/"), **detail)

    async def respondent_page(self, request: Request) -> Response:
        path = self.run(request.path_params["rel"])
        rid = request.path_params["respondent_id"]

        def read() -> tuple[Any, list]:
            with closing(connect_readonly(path / "run.sqlite")) as db:
                return reads.respondent_row(db, rid), reads.respondent_trials(db, rid)

        respondent, trials = await run_in_threadpool(read)
        if respondent is None:
            raise HTTPException(404, "no such respondent")
        return self.render("respondent.html", rel=request.path_params["rel"].strip("/"), respondent=respondent,
                           trials=trials)

    async def methods_page(self, request: Request) -> Response:
        path = self.run(request.path_params["rel"])
        if self.methods is None:
            raise HTTPException(404, "the methods paragraph is not available")

        def write() -> tuple[str | None, str | None]:
            try:
                return self.methods(path), None
            except (PsyqError, OSError, ValueError, KeyError) as exc:
                return None, f"{type(exc).__name__}: {exc}"

        text, error = await run_in_threadpool(write)
        return self.render("methods.html", rel=request.path_params["rel"].strip("/"), text=text, error=error)

    async def report(self, request: Request) -> Response:
        report = _report(self.run(request.path_params["rel"]), self.root)
        if report is None:
            raise HTTPException(404, "no report.html in this run (psyq report writes it)")
        return FileResponse(report, media_type="text/html; charset=utf-8",
                            headers={"Content-Security-Policy": REPORT_CSP})

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            raise HTTPException(404)
        return Response((HERE / "static" / name).read_bytes(), media_type=STATIC[name])


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _manifest(path: Path) -> dict[str, Any]:
    try:
        return open_run(path).manifest
    except PsyqError:
        return {}


def _usage(path: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """Tokens and cost per backend, as `psyq status` computes them."""
    try:
        table = PriceTable.from_json(manifest["prices"]) if manifest.get("prices") else None
    except (KeyError, TypeError, ValueError):
        table = None
    out = []
    for u in read_token_usage(path / "run.sqlite"):
        cost = u.cost(table)
        out.append({"backend": u.backend_id, "model": u.model, "prompt": u.prompt_tokens,
                    "completion": u.completion_tokens, "cached": u.cached_tokens if u.with_cached else None,
                    "cost": f"${cost.usd:,.4f}" if cost.usd is not None else f"not estimable ({cost.why_not})"})
    return out


def _report(run: Path, root: Path) -> Path | None:
    """The run's report.html when it is a file that resolves inside the runs folder."""
    candidate = run / "report.html"
    real = candidate.resolve()
    return real if candidate.is_file() and real.is_relative_to(root) else None


def create_app(root: str | Path, *, host: str = "127.0.0.1", allowed_hosts: list[str] | None = None,
               methods: Callable[[Path], str] | None = None, site: bool = False) -> Starlette:
    """The viewer of the runs under `root`, answering requests whose Host is `host`, a loopback name
    or one of `allowed_hosts`; `methods` writes a run's methods paragraph (None: no methods page);
    `site`: pages rendered for the static copy (:class:`Viewer`; engine/view/site.py asks for them).

    Example (the runs folder holding `run_dir`, asked in-process: no server is started):
        >>> from starlette.testclient import TestClient
        >>> app = create_app(run_dir.parents[1])
        >>> page = TestClient(app, base_url="http://127.0.0.1").get("/")
        >>> page.status_code, run_dir.name in page.text
        (200, True)
    """
    viewer = Viewer(Path(root), methods, site=site)
    get = ["GET"]   # Starlette answers HEAD wherever GET is allowed, and 405 to any other method
    rel = "/run/{rel:path}"
    routes = [
        Route("/", viewer.runs_page, methods=get),
        Route("/static/{name}", viewer.static, methods=get),
        Route(rel + "/progress.json", viewer.progress_json, methods=get),
        Route(rel + "/trials", viewer.trials_page, methods=get),
        Route(rel + "/trial/{trial_id}", viewer.trial_page, methods=get),
        Route(rel + "/respondent/{respondent_id}", viewer.respondent_page, methods=get),
        Route(rel + "/methods", viewer.methods_page, methods=get),
        Route(rel + "/report.html", viewer.report, methods=get),
        Route(rel + "/", viewer.run_page, methods=get),
    ]
    hosts = sorted({host.lower(), *LOOPBACK_NAMES, *(h.lower() for h in allowed_hosts or [])})
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders),
                                               Middleware(TrustedHostMiddleware, allowed_hosts=hosts)])
    app.router.redirect_slashes = False   # a path that matches nothing is 404, never redirected to a guess
    return app
