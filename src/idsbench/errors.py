"""Exceptions that say who is at fault. `str(e)` is one paragraph: what, which input, what to do."""

from __future__ import annotations


class IdsbenchError(Exception):
    """Base of every error idsbench reports to the user (exit code 2 in the CLI)."""

    who = "idsbench"

    def __init__(self, message: str, fix: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} Fix: {self.fix}" if self.fix else self.message


class SpecError(IdsbenchError):
    """The experiment spec (or a CLI option) is wrong."""

    who = "spec error"


class InputError(IdsbenchError):
    """An input file (pcap, rules) is missing, unreadable or corrupt."""

    who = "input error"


class EnvironmentMissing(IdsbenchError):
    """A program, privilege or kernel feature the run needs is not available."""

    who = "environment"


class SensorFailed(IdsbenchError):
    """The sensor did not start, crashed, or produced no usable counters."""

    who = "sensor failed"


class NoisyHost(IdsbenchError):
    """`--require-quiet`: the host's noise is larger than the precision the spec asks."""

    who = "noisy host"
