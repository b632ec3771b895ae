"""``python -m gaussmix ...``: the console script ``gaussmix`` (the same as
``python -m gaussmix.cli``)."""

import sys

from gaussmix.cli.commands import main

sys.exit(main())
