"""The base layer: validation helpers, exceptions, JSON encoding and the version.

Nothing here knows about the mathematics; every other subpackage may import it.
"""
