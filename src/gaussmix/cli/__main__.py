"""``python -m gaussmix.cli ...``: the console script ``gaussmix``."""

import sys

from .commands import main

sys.exit(main())
