"""Command-line flags and sweep-grid keys renamed in gaussmix 1.0 (one name per concept:
a flag is the keyword of the function it sets, with dashes).

Policy: an old flag or key is refused in one line naming the new one (``gaussmix: error:
--jobs was renamed --n-jobs``, exit 2), before any work; the Python keywords keep their
old names for one release with a ``FutureWarning``
(:func:`gaussmix.core.renames.renamed_keywords`).  The CHANGELOG lists every renaming.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["RENAMED_FLAGS", "RENAMED_GRID_KEYS", "renamed_flag_message"]

#: command (None: every command) -> {old flag: new flag}; a command's own table wins
RENAMED_FLAGS: dict[str | None, dict[str, str]] = {
    None: {"--clusters": "--n-clusters", "--jobs": "--n-jobs"},
    "realdata": {"--clusters": "--clustering"},
    "transition": {"--datasets": "--seeds"},
    "figure": {"--ks": "--n-clusters", "--points": "--n-points"},
}
#: keys of a sweep grid file (``[fixed]``, ``[grid]``): {old key: new key}
RENAMED_GRID_KEYS: dict[str, str] = {"clusters": "n_clusters"}


def renamed_flag_message(args: Sequence[str]) -> str | None:
    """``'--jobs was renamed --n-jobs'`` for the first renamed flag in the command line
    ``args`` (without the program name), or None."""
    command = next((a for a in args if not a.startswith("-")), None)
    table = {**RENAMED_FLAGS[None], **RENAMED_FLAGS.get(command, {})}
    for arg in args:
        if arg == "--":  # the end of the options
            break
        flag = arg.split("=", 1)[0]
        if flag in table:
            return f"{flag} was renamed {table[flag]}"
    return None
