"""Renamed keywords: the old name of a keyword keeps working for one release, with a
``FutureWarning`` naming the new one (gaussmix 1.0 gave each concept one name; the
CHANGELOG lists every renaming)."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["renamed_keywords", "REMOVED_IN", "RENAMED_KEYWORDS"]

#: the release that removes the old names
REMOVED_IN = "1.1"

F = TypeVar("F", bound=Callable[..., Any])

#: every function with renamed keywords (``module.qualname`` -> {old: new}), filled as the
#: modules that declare them are imported
RENAMED_KEYWORDS: dict[str, dict[str, str]] = {}


def renamed_keywords(**renames: str) -> Callable[[F], F]:
    """Accept the old keyword names of a function, ``old="new"``, for one release.

    A call with an old name warns (``FutureWarning``: ``f(): keyword 'jobs' was renamed
    'n_jobs' ...``) and passes the value under the new name; a call with both names is a
    ``TypeError``.  The wrapper keeps the function's signature (only the new names) and
    lists the renamings in ``__renamed_keywords__``.

    Examples
    --------
    >>> @renamed_keywords(jobs="n_jobs")
    ... def run(*, n_jobs: int = 1) -> int:
    ...     return n_jobs
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     print(run(jobs=2), caught[0].category.__name__)
    2 FutureWarning
    """

    def decorate(func: F) -> F:
        params = inspect.signature(func).parameters
        for old, new in renames.items():
            if new not in params or old in params:
                raise TypeError(
                    f"renamed_keywords: {func.__qualname__} must take {new!r} and not {old!r}"
                )
        old_names = frozenset(renames)
        # 'sweep', 'PointOptions' (for its __init__)
        shown = func.__qualname__.removesuffix(".__init__").rsplit("<locals>.", 1)[-1]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old_names.isdisjoint(kwargs):
                return func(*args, **kwargs)
            for old in old_names.intersection(kwargs):
                new = renames[old]
                if new in kwargs:
                    raise TypeError(
                        f"{shown}() got both {old!r} and {new!r} ({old!r} was renamed {new!r})"
                    )
                warnings.warn(
                    f"{shown}(): keyword {old!r} was renamed {new!r}; {old!r} will be "
                    f"removed in gaussmix {REMOVED_IN}",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)

        wrapper.__renamed_keywords__ = dict(renames)  # type: ignore[attr-defined]
        RENAMED_KEYWORDS[f"{func.__module__}.{func.__qualname__}"] = dict(renames)
        return wrapper  # type: ignore[return-value]

    return decorate
