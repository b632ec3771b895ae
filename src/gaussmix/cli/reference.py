"""The command line as a click object, for documentation generators.

The docs site's CLI reference (``docs/cli.md``, rendered by mkdocs-click) is generated
from :data:`command`, so it lists exactly the commands and options of ``gaussmix``.
Not imported by ``gaussmix.cli`` itself (the console script does not need it).
"""

import typer

from . import app  # the package registers every command (realdata included)

#: the ``gaussmix`` command group (typer's click object of :data:`gaussmix.cli.app`)
command = typer.main.get_command(app)

__all__ = ["command"]
