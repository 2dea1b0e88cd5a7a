"""`python -m psyq.cli ...` runs the psyq command (as the `psyq` script does)."""

import sys

from psyq.cli import main

sys.exit(main())
