"""What the command line and the explorer share below both of them: the point options and
their translation into library objects (:mod:`~gaussmix.frontend.options`), and ranges of
points (:mod:`~gaussmix.frontend.grids`).  It imports no command-line framework and none of
the front ends, so that ``gaussmix.cli`` (which starts the explorer) and
``gaussmix.explore`` (which builds its points as the command line does) both sit above it.
"""
