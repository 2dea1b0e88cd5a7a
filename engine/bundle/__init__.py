"""`psyq bundle`: one run as one zip a co-author, a reviewer or OSF can open, check and re-report.

- ``layout.py``   the bundle's format: its version, where each member lies, the limits a reader keeps
- ``scrub.py``    what must never leave the machine (secrets, environment values, absolute paths):
  the strings to look for, replacing paths, refusing what cannot be replaced
- ``store_copy.py`` the run store copied with SQLite's backup API, then redacted (licensed item
  texts, people's ids) and vacuumed so that nothing removed stays in a free page
- ``write.py``    gathering the run's inputs, the environment record, the README; the zip, atomically
- ``read.py``     reading a bundle as untrusted input: bounded, into a temporary folder only
- ``verify.py``   `psyq verify`: hashes, the store's integrity and counts against the record

Scores need ``psyq.analysis``, which no room of the engine imports: the command line
(cli/bundle.py) computes them, hands them to the writer as a member, and compares them
when it verifies.

A run is opened (a bundle too) by :func:`psyq.engine.results.run.open_run`, in the room after this
one: the writer and the checks are handed the opened :class:`~psyq.engine.results.run.Run`.

May import: files, backends, store, trials, kinds, design (the rooms below it; engine/__init__.py
lists the order). Never: results, view, psyq.cli, or psyq.analysis.
"""
