"""Where a sample's (or a search trial's) seconds go: consecutive phases, each with its start and
duration, so their sum is the whole wall time (store.schema.PHASES names them)."""

from __future__ import annotations

import time
from collections.abc import Callable

from idsbench.store.schema import PhaseRecord


class Timeline:
    """`enter(name)` ends the phase running and starts `name`; `end()` ends the last one."""

    def __init__(self, wall: Callable[[], float] = time.time, monotonic: Callable[[], float] = time.monotonic):
        self.wall, self.monotonic = wall, monotonic
        self._done: list[PhaseRecord] = []
        self._current: tuple[str, float, float] | None = None  # name, wall start, monotonic start

    def enter(self, name: str) -> None:
        self.end()
        self._current = (name, self.wall(), self.monotonic())

    def end(self) -> None:
        if self._current is not None:
            name, start_unix, t0 = self._current
            self._done.append(PhaseRecord(name=name, start_unix=round(start_unix, 6),
                                          duration_s=round(max(0.0, self.monotonic() - t0), 6)))
            self._current = None

    @property
    def current(self) -> str | None:
        return self._current[0] if self._current else None

    def records(self) -> tuple[PhaseRecord, ...]:
        """The phases ended so far (the running one is not included)."""
        return tuple(self._done)
