"""What Snort 3's console log says: readiness, the stop, errors, and rules it could not load.

Recorded behaviour (Snort 3.12.2.0, libdaq 3.0.25):
- config loaded -> "Commencing packet processing"; each packet thread then logs "++ [i] <source>"
  and starts its DAQ instance (capture_sockets tells when the sockets capture);
- SIGTERM / SIGINT -> "** caught term signal" / "** caught int signal", "== stopping",
  "-- [i] <source>", the statistics, "o\")~   Snort exiting", exit status 0;
- a rule it cannot parse -> "ERROR: <file>:<line> <reason>." (every problem of every rule, then
  "FATAL: see prior N errors (M warnings)" and exit status 1: one bad rule stops Snort, also with
  -T); "-T" on a good config ends with "Snort successfully validated the configuration";
- an interface that does not exist -> "Commencing packet processing", empty statistics, exit 0 and
  no error message at all: only the missing capture sockets show it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

READY_LINE = "Commencing packet processing"
VALIDATED_LINE = "Snort successfully validated the configuration"
EXIT_LINE = 'o")~   Snort exiting'
_RULE_ERROR = re.compile(r"^ERROR: (?P<file>.+?):(?P<line>\d+) (?P<reason>.*?)\.?$")
_CAUGHT = re.compile(r"^\*\* caught (\w+) signal$", re.MULTILINE)
_RULES_LOADED = re.compile(r"^\s+total rules loaded: (\d+)$", re.MULTILINE)
_SOURCE_STARTED = re.compile(r"^\+\+ \[(\d+)\] (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class RuleError:
    """One problem Snort found in a rule file (a rule can have several)."""

    file: str
    line: int
    reason: str


def rule_errors(log_text: str) -> list[RuleError]:
    out: list[RuleError] = []
    for line in log_text.splitlines():
        found = _RULE_ERROR.match(line)
        if found:
            out.append(RuleError(found.group("file"), int(found.group("line")), found.group("reason")))
    return out


def rejected_lines(log_text: str) -> dict[str, set[int]]:
    """File -> line numbers of the rules Snort rejected."""
    out: dict[str, set[int]] = {}
    for err in rule_errors(log_text):
        out.setdefault(err.file, set()).add(err.line)
    return out


def errors(log_text: str) -> list[str]:
    """ERROR / FATAL lines as Snort wrote them (rule errors included)."""
    return [line for line in log_text.splitlines()
            if line.startswith(("ERROR:", "FATAL:", "Fatal Error"))]


def is_ready(log_text: str) -> bool:
    """The config loaded and packet processing began (for live capture also check the sockets)."""
    return READY_LINE in log_text


def sources_started(log_text: str) -> list[str]:
    """The packet threads' sources ("++ [i] IF"), in thread order."""
    return [m.group(2) for m in sorted(_SOURCE_STARTED.finditer(log_text), key=lambda m: int(m.group(1)))]


def stop_signal(log_text: str) -> str | None:
    """"term" or "int" when Snort caught that signal, else None."""
    found = _CAUGHT.search(log_text)
    return found.group(1) if found else None


def exited_cleanly(log_text: str) -> bool:
    return EXIT_LINE in log_text


def config_validated(log_text: str) -> bool:
    return VALIDATED_LINE in log_text


def rules_loaded(log_text: str) -> int | None:
    """'total rules loaded' (text rules of every file, the stock file_magic rules included)."""
    found = _RULES_LOADED.search(log_text)
    return int(found.group(1)) if found else None
