"""Looking at runs: psyq view (a local, read-only web viewer; engine/view/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from psyq.cli.common import EXIT_BAD_INPUT, EXIT_OK


def methods_text(run_path: Path) -> str:
    """The methods paragraph of a run, for the viewer's methods page. It is written by psyq.analysis,
    which the view room may not import: the command line, which may import both, hands the viewer
    this function, which imports the paragraph's writer (pandas, the run's scoring) on the first
    page that asks, not when the viewer starts."""
    from psyq.analysis.report.methods import methods_text as write_methods

    return write_methods(run_path)


def cmd_view(args: argparse.Namespace) -> int:
    from psyq.engine.bundle.read import is_bundle
    from psyq.cli.common import opened_run
    from psyq.engine.results.runs import find_run_dirs
    from psyq.engine.view.server import is_loopback

    if not is_loopback(args.host) and not args.expose:
        print(f"error: --host {args.host} would let other machines read every run under {args.dir}; "
              "psyq view serves 127.0.0.1 unless you also give --expose", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not is_bundle(args.dir):
        find_run_dirs(args.dir)   # a folder that does not exist is said now (exit 2), not as an empty page
        return _serve(args, Path(args.dir), f"runs under {Path(args.dir).resolve()}")
    with opened_run(args.dir) as chosen:   # the bundle's run, from a temporary folder removed when the viewer stops
        return _serve(args, chosen.path, f"the run in {args.dir}")


def _serve(args: argparse.Namespace, root: Path, what: str) -> int:
    from psyq.engine.view.server import ViewServer, is_loopback

    server = ViewServer(root, args.host, args.port, allowed_hosts=args.allow_host, methods=methods_text)
    if not is_loopback(args.host):
        print(f"warning: serving {Path(args.dir).resolve()} on {args.host}: anyone who can reach this address can "
              "read every run, reply and prompt in it (no password)", file=sys.stderr)
    print(f"psyq view: {server.url}  ({what}; read-only; Ctrl-C stops it)", flush=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _arguments_view(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", nargs="?", default="runs", metavar="RUNS_DIR",
                   help="folder holding runs: runs/ (default), runs/<study>, one run, or a bundle (FILE.zip)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one, printed)")
    p.add_argument("--expose", action="store_true",
                   help="allow a --host other than loopback (anyone who reaches it can read the runs)")
    p.add_argument("--allow-host", action="append", metavar="NAME",
                   help="a further name the browser may use in the Host header (repeatable; with --expose, "
                        "the machine's name or address as others type it)")


COMMANDS = {
    "view": (cmd_view, "a local, read-only web viewer of runs: progress, trials, conversations", _arguments_view),
}
