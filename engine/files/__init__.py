"""Reading input safely.

YAML and CSV files read with bounds and safe loaders, codebooks of human data files (how a CSV names its columns and codes its values), the `file:line:column: field: what is wrong` errors and the notices of what a reader did otherwise than written, validation of parsed documents, atomic writes, JSON text exactly as `json.dumps` writes it from an encoder made once (json_text), and a file's SHA-256 (hashing).

May import: nothing of psyq's own (the rooms below it; engine/__init__.py lists the order). Never: the rooms above it, or psyq.analysis.
"""
