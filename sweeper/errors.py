"""The one exception type for mistakes a user can fix (bad grid, bad flag, missing file)."""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input; the CLI prints it and exits with code 2.

    ``problems`` holds one line per mistake so that all of them are reported together.
    """

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))
