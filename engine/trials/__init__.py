"""What one question is.

A trial (one request and its re-asks), the prompt it sends, the answer scale it offers, how a reply is parsed into answers and how answers are scored.

May import: files, backends, store (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
