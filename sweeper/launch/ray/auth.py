"""Who may join the Ray clusters the sweeper starts, and that nothing starts a cluster of its own.

Ray turns its token authentication on by itself when ``~/.ray/auth_token`` exists (a plain ``ray.init()`` writes
one): a node or driver that then reads another home's token, or none, cannot join, and a sweep would fail for what a
home directory holds. The nodes the sweeper starts (``local``, ``ssh``) and their driver run with the mode and a
token in their environment instead: the user's ``RAY_AUTH_MODE``/``RAY_AUTH_TOKEN`` when set, else token mode with
a token of this process. It is never on a command line: over SSH the script that runs ``ray start`` exports it from
its standard input. So no home matters, and no one without the token joins the GCS, which listens on every interface.
On ``manager: standalone`` the cluster is the user's, and so is its authentication: their environment, untouched.

Ray's auto-connect is off in the sweeper: a Ray call made after a launch disconnected (a result thread of a pool the
abort killed) fails instead of starting a whole Ray cluster on this machine.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Mapping
from functools import cache

MODE_VARIABLE = "RAY_AUTH_MODE"
TOKEN_VARIABLE = "RAY_AUTH_TOKEN"
AUTO_CONNECT_VARIABLE = "RAY_ENABLE_AUTO_CONNECT"  # read by ray when it is imported


@cache
def cluster_auth() -> dict[str, str]:
    """The variables the nodes the sweeper starts and their driver run with (decided once per process)."""
    return auth_of(os.environ, secrets.token_hex(32))


def auth_of(environment: Mapping[str, str], new_token: str) -> dict[str, str]:
    """The user's mode and token when set, else token mode with ``new_token``.

    >>> auth_of({}, "t1"), auth_of({"RAY_AUTH_TOKEN": "theirs"}, "t1")
    ({'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN': 't1'}, {'RAY_AUTH_MODE': 'token', 'RAY_AUTH_TOKEN': 'theirs'})
    >>> auth_of({"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN": "theirs"}, "t1")
    {'RAY_AUTH_MODE': 'disabled'}
    """
    mode = environment.get(MODE_VARIABLE, "token")
    if mode != "token":
        return {MODE_VARIABLE: mode}
    return {MODE_VARIABLE: mode, TOKEN_VARIABLE: environment.get(TOKEN_VARIABLE) or new_token}


def drive_with_cluster_auth() -> None:
    """This process connects to the nodes it starts with :func:`cluster_auth` (before ``ray.init``)."""
    os.environ.update(cluster_auth())
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    Config.initialize("")  # Ray read the mode when it was imported, as its own _enable_token_auth re-reads it
    AuthenticationTokenLoader.instance().reset_cache()


def no_auto_connect() -> None:
    """A Ray call with no connection fails instead of starting a cluster here (unless the user set the variable)."""
    os.environ.setdefault(AUTO_CONNECT_VARIABLE, "0")
    hook = sys.modules.get("ray._private.auto_init_hook")
    if hook is not None and os.environ[AUTO_CONNECT_VARIABLE] == "0":
        hook.enable_auto_connect = False  # type: ignore[attr-defined]  # ray imported first read the variable
