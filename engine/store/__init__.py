"""Storing a run.

A run's directory and the paths its manifest records (run_dir), the SQLite run store every later step reads (run_store) and the process that commits a run's answers into it on another core (writer_process), the ratings of replies kept beside it, the lock that keeps a second process from writing the same run, and the clock its records are stamped by (clock).

May import: files, backends (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
