"""Names and words a grid passes to the store, ``ssh`` and shells: sweep names, hosts, users, shell characters."""

from __future__ import annotations

import ipaddress
import re

from sweeper.text import CONTROL_CHARS, shown

MAX_NAME_CHARS = 100  # a sweep name (one directory of the store)
MAX_NAME_BYTES = 255  # ... and the file systems' limit on one name, in UTF-8
# Control characters (sweeper.text.CONTROL_CHARS) are refused in every name, path and Spark value.
# What a shell gives a meaning to inside or around quotes: refused in values that reach a command line on the hosts.
SHELL_CHARS = "'\"$`;&|<>\\"
SHELL_CHARS_TEXT = "quotes, $, backticks, ;, &, |, <, >, backslashes or control characters"
SHELL_UNSAFE = re.compile(f"[{CONTROL_CHARS}{re.escape(SHELL_CHARS)}]")
_NAME_UNSAFE = re.compile(rf"[{CONTROL_CHARS}/\\]")
# A host or user name on ssh's command line, as OpenSSH itself checks them (ssh.c): 1 to MAX_SSH_NAME_CHARS
# characters, no leading '-' (an option), no whitespace, control characters or shell metacharacters
# (SSH_NAME_CHARS); a host name has no '/', ':' (but in an IPv6 address), '@' or ',' (SSH_HOST_CHARS) either.
MAX_SSH_NAME_CHARS = 255
SSH_NAME_CHARS = "'\"$`\\;&|<>(){}"
SSH_HOST_CHARS = "/:@,"
SSH_NAME_RULE = (
    f"1 to {MAX_SSH_NAME_CHARS} characters, not starting with '-', without whitespace, control characters "
    f"or any of {' '.join(SSH_NAME_CHARS)}"
)
SSH_USER_UNSAFE = re.compile(rf"[\s{CONTROL_CHARS}{re.escape(SSH_NAME_CHARS)}]")
_SSH_HOST_UNSAFE = re.compile(rf"[\s{CONTROL_CHARS}{re.escape(SSH_NAME_CHARS + SSH_HOST_CHARS)}]")
_IP_TEXT = re.compile(r"[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?")


def check_sweep_name(name: object) -> str | None:
    """What is wrong with a sweep name (None: nothing): it must be ONE safe directory name in the store.

    Shared by the grid's ``name``, the store and the command line's ``--sweep``.

    >>> check_sweep_name("2node") is None
    True
    >>> [check_sweep_name(name).split(": ")[-1] for name in ("..", "a/b", "-x", "")]
    ["it is '..', got '..'", "it contains '/', got 'a/b'", "it starts with '-', got '-x'", "it is blank, got ''"]
    """
    rule = (
        f"must be one directory name (1 to {MAX_NAME_CHARS} characters; no '/', '\\' or control characters; "
        "not starting with '-', '.' or '_', which readers of the store skip)"
    )
    reason = _sweep_name_problem(name)
    return None if reason is None else f"{rule}: {reason}, got {shown(name)}"


def _sweep_name_problem(name: object) -> str | None:
    if name is None:
        return "it is missing"
    if not isinstance(name, str):
        return "it is not a string"
    if not name.strip():
        return "it is blank"
    if len(name) > MAX_NAME_CHARS:
        return f"it has {len(name)} characters"
    found = _NAME_UNSAFE.search(name)
    if found:
        return f"it contains {found.group()!r}"
    if name in (".", ".."):
        return f"it is {name!r}"
    if name.startswith(("-", ".", "_")):
        return f"it starts with {name[0]!r}"
    if len(name.encode()) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes in UTF-8"
    return None


def is_host(text: str) -> bool:
    """Whether ``text`` is a host name or an IP address that ``ssh`` and a shell take literally (never an option).

    >>> [is_host(h) for h in ("node-1.example.org", "node_1.lan", "10.0.0.2", "::1", "fe80::1%eth0")]
    [True, True, True, True, True]
    >>> [is_host(h) for h in ("-oProxyCommand=x", "a b", "a;b", "$(id)", "root@a", "a:22", "a/b", "")]
    [False, False, False, False, False, False, False, False]
    """
    return host_problem(text) is None


def host_problem(value: object) -> str | None:
    """What makes ``value`` unsafe as a host of ``ssh`` (None: nothing): see SSH_NAME_RULE and SSH_HOST_CHARS."""
    if isinstance(value, str) and _IP_TEXT.fullmatch(value):
        try:
            ipaddress.ip_address(value)
            return None
        except ValueError:
            pass
    return ssh_name_problem(value, _SSH_HOST_UNSAFE)


def ssh_name_problem(value: object, unsafe: re.Pattern[str]) -> str | None:
    """What makes ``value`` unsafe as a host or user name on ssh's command line (None: nothing).

    >>> [ssh_name_problem(u, SSH_USER_UNSAFE) for u in ("john.doe@corp.example.com", "1ops", "-l", "a b", "")]
    [None, None, "it starts with '-'", "it contains ' '", 'it is empty']
    """
    if not isinstance(value, str):
        return "it is not a string"
    if not value:
        return "it is empty"
    if len(value) > MAX_SSH_NAME_CHARS:
        return f"it has {len(value)} characters"
    if value.startswith("-"):
        return "it starts with '-'"
    found = unsafe.search(value)
    return f"it contains {found.group()!r}" if found else None
