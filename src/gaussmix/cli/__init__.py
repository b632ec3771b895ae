"""The command line ``gaussmix ...``: a thin layer that translates options into library
objects (nothing below this package imports typer)."""

from .commands import app, main
from .explore import explore_command  # noqa: F401  (registers `gaussmix explore`)
from .owndata import data_command  # noqa: F401  (registers `gaussmix data`)
from .realdata import realdata_command  # noqa: F401  (registers `gaussmix realdata`)

__all__ = ["app", "main"]
