"""A clock that moves only when told: `now()` or calling it reads it, `sleep(s)` advances it."""

from __future__ import annotations


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s
