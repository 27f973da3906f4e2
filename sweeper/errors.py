"""The one exception type for mistakes a user can fix (bad grid, bad flag, missing file), and error text."""

from __future__ import annotations

USER_ERROR_EXIT = 2  # the exit code of a mistake the user can fix: nothing was launched


class UserError(Exception):
    """A mistake in the user's input; the CLI prints it and exits with code 2.

    ``problems`` holds one line per mistake so that all of them are reported together.
    """

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


def error_text(error: BaseException) -> str:
    """An error's message; some (py4j's) fail to print once their JVM is gone: then its type."""
    try:
        return str(error)
    except Exception:
        return f"{type(error).__name__} (its message could not be read)"
