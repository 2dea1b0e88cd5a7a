"""`python -m psyq ...` runs the psyq command (as the `psyq` script and `python -m psyq.engine.cli` do)."""

import sys

from psyq.engine.cli import main

sys.exit(main())
