"""`psyq view`: a local, read-only web viewer of runs: every run of a folder, one run's progress
(live while it is written), its trials (filtered, paginated), one trial's conversation and one
respondent.

How it is built, and why:

- **Server-side rendering** with Starlette (routing, ``TrustedHostMiddleware``), Jinja2 and
  uvicorn: every page is HTML made on the server from SQL reads, so the viewer needs no front-end
  build and no CDN and works offline. The one script, ``static/view.js``, polls the run's
  ``progress.json`` every second and writes the numbers into the page with ``textContent`` only.
  Well-kept libraries do the routing, templating and escaping rather than hand-written code.
- **Untrusted text stays text.** Model replies, persona attributes and prompts, file contents
  are rendered by Jinja2 with autoescape on for every template; nothing is marked safe. Pages
  send a Content-Security-Policy allowing scripts and styles from the viewer itself only (no
  inline script can run even if markup slipped through), ``X-Content-Type-Options: nosniff``
  and ``Referrer-Policy: no-referrer``.
- **Only runs under the folder.** A run is addressed by its path relative to the runs folder and
  looked up among the run directories found there (``psyq runs``' listing), each resolved and
  kept only if it lies inside the folder: ``../``, absolute paths, percent-encoded dots and
  symlinks pointing outside match no run and get 404. A run's ``report.html`` is served only when
  it resolves inside the folder.
- **Only GET and HEAD** (other methods: 405), and the Host header is checked against the bound
  host and the loopback names (400 otherwise), against DNS rebinding as Jupyter's server does.
- **Read-only.** Stores are opened by ``psyq.engine.store.readonly.connect_readonly``: nothing
  is created or changed in a run directory (no ``-wal``/``-shm`` files left behind, no index
  added), reads are short transactions with a busy timeout, and a run being written is never
  locked. Nothing secret is stored in a run (requests are stored without headers), so nothing
  secret can be shown.
- **The methods paragraph** is written by ``psyq.analysis`` (which this room may not import): the
  command line passes ``methods_text`` in as a function (``create_app(methods=...)``), and the
  viewer calls it on its own page, on request, since it reads every answer of the run.

May import: files, backends, store, trials, kinds, design, results (the rooms below it;
engine/__init__.py lists the order). It never sends a request and never writes into a run.
Never: administer, judging, importers, cli, or psyq.analysis.
"""
