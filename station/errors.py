"""The one error type users see: what went wrong and what to do about it."""


class StationError(Exception):
    """A failure the user can act on; `hint` says how."""

    def __init__(self, problem: str, hint: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.problem}\n  → {self.hint}" if self.hint else self.problem
