"""Administering a study: `psyq run` and `psyq plan`, cut by phase.

- ``run.py``           :func:`administer`, the phases below called in order, and how the run ended
- plan: which trials a study makes, nothing sent
  - ``plan.py``          the trials, their ids and order; a staged study's chains (measure, evoke, measure)
  - ``plan_estimate.py`` what `psyq plan` prints of them: requests, tokens, cost, time, a preview
  - ``tokenizer.py``     prompt tokens counted by the server's tokenizer, or approximated
- send: asking the backends
  - ``send.py``          every trial: concurrency per backend, a staged study's chains with their history,
    batch-mode backends beside the online ones
  - ``send_trial.py``    one trial: asked, its reply read, re-asked until it can be read
  - ``send_batch.py``    provider batch APIs: submitted, collected, replayed through the same reading
  - ``progress.py``      the live progress display of `psyq run`
- record: the run directory (``record.py``): its id, the copies of the inputs, the manifest, and every
  trial's record (answers, and missing answers with their reasons) committed to the run store
- ``overrides.py``     the command line's changes to a study's backends

May import: files, backends, store, trials, kinds, design, results (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
