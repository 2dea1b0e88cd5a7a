"""`python -m psyq ...` runs the psyq command (as the `psyq` script and `python -m psyq.cli` do)."""

import sys

from psyq.cli import main

sys.exit(main())
