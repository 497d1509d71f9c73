"""``python -m profkit``: the profkit command line (see profkit.cli)."""

import sys

from .cli import main

sys.exit(main())
