"""`python -m psyq.engine.cli ...` runs the psyq command (as the `psyq` script does)."""

import sys

from psyq.engine.cli import main

sys.exit(main())
