"""The command line ``gaussmix ...``: a thin layer that translates options into library
objects (nothing below this package imports typer)."""

from .commands import app, main

__all__ = ["app", "main"]
