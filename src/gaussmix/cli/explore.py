"""``gaussmix explore``: the interactive explorer, served on this machine
(:mod:`gaussmix.explore.app`; the optional extra ``explore``).

``gaussmix explore [--host 127.0.0.1] [--port 5006] [--no-browser] [--mixture FILE]
[state options]`` serves the explorer and prints its address.  A state option is a field of
:class:`~gaussmix.explore.ExplorerState` with dashes (``--n-clusters 3 --lam 0.01 --rho
0.2,0.3,0.5``), its value written as in the state URL; it is read by
:meth:`ExplorerState.from_query <gaussmix.explore.ExplorerState.from_query>` and checked by
:func:`~gaussmix.explore.validate`, so a bad value is refused before the server starts (one
line, exit 2).  The server listens on 127.0.0.1 unless ``--host`` says otherwise (then with
a warning); Ctrl-C stops it (exit 0) after cancelling the running computations.
"""

from __future__ import annotations

import errno
import functools
import importlib.util
import inspect
import ipaddress
import logging
import sys
import typing
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import typer

from gaussmix.core.exceptions import ArgumentError

from .commands import app
from .options import with_signature

__all__ = ["explore_command", "STATE_OPTIONS"]

#: the state options: field of ExplorerState -> (metavar, help); ``mixture_file`` is
#: ``--mixture``
STATE_OPTIONS: dict[str, tuple[str, str]] = {
    "n_clusters": ("K", "Number of clusters."),
    "delta": ("D[,D...]", "Cluster variance Delta: one value, or one per cluster."),
    "rho": ("R,R,...", "Cluster priors (sum 1) [default: balanced]."),
    "means": ("auto|simplex|gaussian|antipodal", "Family of cluster means."),
    "model": ("isotropic|block|sparse", "Covariance model."),
    "fractions": ("F,F,...", "Block model: fractions of the dimensions per block."),
    "deltas": ("D,D,...", "Block model: variance of each block."),
    "sparsity": ("RHO", "Sparse model: fraction of informative dimensions."),
    "delta1": ("D1", "Sparse model: variance of the informative dimensions."),
    "delta2": ("D2", "Sparse model: variance of the other dimensions."),
    "labels": ("auto|onehot|binary", "Label map."),
    "loss": ("LOSS", "Loss: square, logistic, cross-entropy, hinge."),
    "penalty": ("l2|l1|elastic-net", "Penalty."),
    "l1_ratio": ("R", "Elastic net: weight of the l1 part."),
    "lam": ("L", "Penalty strength lambda."),
    "axis": ("alpha|lambda", "x axis: the learning curve or the lambda sweep."),
    "alpha_min": ("A", "Smallest alpha of the learning curve."),
    "alpha_max": ("A", "Largest alpha of the learning curve."),
    "n_points": ("N", "Points of the curve."),
    "log_x": ("true|false", "Log-spaced points and a log x axis."),
    "alpha": ("A", "alpha of the lambda sweep."),
    "lam_min": ("L", "Smallest lambda of the lambda sweep."),
    "lam_max": ("L", "Largest lambda of the lambda sweep."),
    "show": ("NAME,...", "Observables to draw (test_error, train_error, test_loss, ...)."),
    "overlays": ("NAME,...", "Overlays: bayes, alpha_star, lambda_star, simulation."),
    "sim_d": ("D", "Dimension of the simulation overlay."),
    "sim_seeds": ("S", "Seeds of the simulation overlay."),
    "precision": (
        "screen|library",
        "Solver precision of the curves: screen (tol 1e-5, no error estimate) or the "
        "library's defaults.",
    ),
}

#: the extra that installs the explorer's user interface
EXTRA = "explore"
#: addresses that only this machine can reach
LOOPBACK = ("localhost",)


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _origins(host: str) -> list[str]:
    """The page origins whose websocket the server accepts (any port of these hosts)."""
    origins = ["127.0.0.1", "localhost"]
    if host in ("0.0.0.0", "::"):  # every interface: any address of this machine
        return ["*"]
    if host not in origins:
        origins.append(host)
    return origins


def _initial_state(values: dict[str, str | None], mixture: Path | None) -> Any:
    """The state the options describe; a bad value raises naming its option."""
    explore = importlib.import_module("gaussmix.explore")
    given = {k: v for k, v in values.items() if v is not None}
    if mixture is not None:
        given["mixture_file"] = str(mixture)
    try:
        state = explore.ExplorerState.from_query(urlencode(given))
    except ArgumentError as exc:
        raise (exc.named("mixture") if exc.argument == "mixture_file" else exc) from None
    for field, message in explore.validate(state).items():
        name = "mixture" if field == "mixture_file" else field
        if message.startswith(field + " ") or message.startswith(field + ":"):
            raise ArgumentError(name, message[len(field) :].lstrip(" "))
        raise ValueError(f"--{name.replace('_', '-')}: {message}")
    return state


def _run(server: Any, url: str, open_browser: bool) -> None:
    """Serve until Ctrl-C, then stop the server and close every page's computations."""
    close_all = importlib.import_module("gaussmix.explore.app").close_all
    server.start()
    typer.echo(f"gaussmix explorer: {url} (Ctrl-C to stop)")
    sys.stdout.flush()
    if open_browser:
        import webbrowser

        server.io_loop.add_callback(lambda: webbrowser.open(url))
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        pass
    finally:
        close_all()
        server.stop()
        server.io_loop.close(all_fds=True)
    typer.echo("gaussmix explorer: stopped")


def explore_command(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="Address to listen on; anything but 127.0.0.1 lets other machines in.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to listen on (0: one the system chooses).")
    ] = 5006,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Do not open a browser tab.")
    ] = False,
    mixture: Annotated[
        Path | None,
        typer.Option(
            "--mixture",
            metavar="FILE",
            help="A mixture file (written by gaussmix.Mixture.save) in place of the mixture "
            "options.",
        ),
    ] = None,
    **state: str | None,
) -> None:
    """Explore learning curves interactively in the browser (the 'explore' extra).

    Every state option is written as in the explorer's URL (e.g. --rho 0.2,0.8); a page
    opened with a URL query starts from that state instead.
    """
    if importlib.util.find_spec("panel") is None:
        raise ValueError(
            f"gaussmix explore needs the '{EXTRA}' extra: pip install 'gaussmix[{EXTRA}]'"
        )
    initial = _initial_state(state, mixture)
    if not 0 <= port <= 65535:
        raise ArgumentError("port", f"must be an integer in [0, 65535], got {port}")
    serve = importlib.import_module("gaussmix.explore.app").serve
    quiet = logging.getLogger("bokeh.server.util")  # its wildcard warning: ours is below
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        server = serve(initial, host=host, port=port, websocket_origin=_origins(host))
    except OSError as exc:  # the address is taken, forbidden or not this machine's
        reason = exc.strerror or str(exc)
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise ArgumentError(
                "port", f"{port} is not available on {host}: {reason} (give another, or 0)"
            ) from None
        raise ArgumentError("host", f"{host} cannot be listened on: {reason}") from None
    finally:
        quiet.setLevel(level)
    if not _is_loopback(host):
        sys.stderr.write(
            f"gaussmix: warning: serving on {host}: every machine that can reach this "
            "address can use the explorer (and make it read files by path); --host "
            "127.0.0.1 keeps it on this machine\n"
        )
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    _run(server, f"http://{shown}:{server.port}/", open_browser=not no_browser)


def _state_parameter(name: str) -> inspect.Parameter:
    metavar, help_text = STATE_OPTIONS[name]
    option = typer.Option(f"--{name.replace('_', '-')}", metavar=metavar, help=help_text)
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[str | None, option],
    )


def _with_state_options(func: Any) -> Any:
    """``func`` (taking ``**state``) with one option per field of :data:`STATE_OPTIONS`."""
    sig = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name])
        for p in sig.parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        return func(**kwargs)

    return with_signature(wrapper, sig, own + [_state_parameter(n) for n in STATE_OPTIONS])


app.command("explore")(_with_state_options(explore_command))
