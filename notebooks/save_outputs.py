"""Execute the notebooks top to bottom on the shipped studies' runs and save them with their outputs.

The notebooks in the repository are shipped executed, so that a reader sees what each step gives
before running anything. Their outputs come from full runs of the shipped studies on the local
default model, made by this script in `notebooks/runs/` (ignored by git; a study without a run is
administered first, as the notebooks themselves do):

    python notebooks/save_outputs.py            # all three notebooks
    python notebooks/save_outputs.py 01 03      # those whose names start so

Each notebook runs in a fresh python3 kernel with `notebooks/` as its folder and PSYQ_RUN* unset,
so it picks the newest run of its study, exactly as a reader's copy does. A notebook that raises,
or whose outputs name a folder of this machine (the work folder, the home folder, the Python
installation), is not written: outputs are shipped for any reader, and paths are relative.
tests/test_notebooks.py checks the shipped files: every code cell has output, none is an error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT_S = 3600      # a notebook whose run is missing administers the study (minutes)


def machine_paths() -> list[str]:
    """Folders of this machine that must not appear in a shipped output."""
    return sorted({str(HERE), str(HERE.parent), str(Path.home()), sys.prefix, sys.base_prefix,
                   os.path.realpath(sys.prefix)} - {"/"}, key=len, reverse=True)


def outputs_text(cell) -> str:
    """Every output of a code cell as one string (text and the text forms of rich outputs)."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        parts.extend(str(v) for k, v in out.get("data", {}).items() if not k.startswith("image/"))
        parts.extend([out.get("ename", ""), out.get("evalue", ""), *out.get("traceback", [])])
    return "\n".join(parts)


def execute(path: Path) -> nbformat.NotebookNode:
    """The notebook at `path` run top to bottom in `notebooks/`; raises on a failing cell."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    env_saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("PSYQ_RUN")}
    try:
        nbclient.NotebookClient(nb, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                resources={"metadata": {"path": str(HERE)}}).execute()
    finally:
        os.environ.update(env_saved)
    return nb


def main(prefixes: list[str]) -> int:
    chosen = [p for p in sorted(HERE.glob("*.ipynb"))
              if not prefixes or any(p.name.startswith(x) for x in prefixes)]
    failed = 0
    for path in chosen:
        print(f"{path.name}: executing", flush=True)
        nb = execute(path)
        leaked = [(n, p) for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code")
                  for p in machine_paths() if p in outputs_text(cell)]
        if leaked:
            for n, folder in leaked:
                text = outputs_text([c for c in nb.cells if c.cell_type == "code"][n])
                at = text.index(folder)
                print(f"{path.name}: not written: code cell {n + 1} names {folder}: "
                      f"…{text[max(0, at - 80):at + 80]}…", file=sys.stderr)
            failed += 1
            continue
        nbformat.write(nb, path)
        print(f"{path.name}: written, {path.stat().st_size / 1e3:.0f} kB", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
