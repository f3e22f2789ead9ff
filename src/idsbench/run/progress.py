"""Campaign progress: a live display on a terminal (case, sample, phase, ETA), one line per sample otherwise."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    def __init__(self, total_samples: int, stream: TextIO = sys.stderr, live: bool | None = None):
        self.total = total_samples
        self.stream = stream
        self.live = stream.isatty() if live is None else live
        self.done = 0
        self.skipped = 0
        self.started = time.monotonic()
        self._rich: Any = None  # rich.progress.Progress, imported only on a terminal
        self._task: Any = None
        self._current = ""

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                console=Console(file=self.stream), transient=False,
            )
            self._rich.__enter__()
            self._task = self._rich.add_task("starting", total=self.total)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._rich is not None:
            self._rich.__exit__(*exc)

    def set_total(self, total_samples: int) -> None:
        """The samples the campaign now expects (a duet's precision plan adds some)."""
        self.total = total_samples
        if self._rich is not None:
            self._rich.update(self._task, total=total_samples)

    def skip(self, sample_id: str) -> None:
        self.skipped += 1
        self.done += 1
        if self._rich is not None:
            self._rich.update(self._task, advance=1)

    def sample_started(self, sample_id: str) -> None:
        self._current = sample_id
        self.phase("start")

    def phase(self, name: str) -> None:
        if self._rich is not None:
            self._rich.update(self._task, description=f"{self._current} [{name}]")

    def sample_done(self, sample_id: str, status: str, warnings: list[str]) -> None:
        self.done += 1
        line = f"[{self.done}/{self.total}] {sample_id}: {status}"
        if warnings:
            line += f" ({len(warnings)} warning{'s' if len(warnings) > 1 else ''}: {warnings[0]})"
        if self._rich is not None:
            self._rich.update(self._task, advance=1)
            self._rich.console.print(line)
        else:
            print(line, file=self.stream, flush=True)

    def note(self, line: str) -> None:
        """A line for the user between sample lines (e.g. a warning found before the first sample)."""
        if self._rich is not None:
            self._rich.console.print(line, markup=False)
        else:
            print(line, file=self.stream, flush=True)

