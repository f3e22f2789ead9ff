"""ibtick (native/src/ibtick.c) for real: it signals its child only once the child catches the signal,
dates every signal with a tick line, passes SIGTERM on, and exits with the child's status."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from idsbench import native, settings

pytestmark = pytest.mark.integration

# A child that catches SIGUSR1 after 0.5 s and prints a line per signal, like tcpdump's report.
CHILD = """
import signal, sys, time
time.sleep(0.5)
signal.signal(signal.SIGUSR1, lambda *_: print("report", flush=True, file=sys.stderr))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def ibtick() -> Path:
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        if settings.strict():
            pytest.fail("no C compiler (run `make setup`)")
        pytest.skip("no C compiler (run `make setup`)")
    return native.program("ibtick")


def test_ticks_wait_for_the_handler_and_sigterm_is_passed_on(ibtick: Path, tmp_path: Path) -> None:
    err = tmp_path / "stderr.txt"
    with err.open("w") as fh:
        child = subprocess.Popen([str(ibtick), "--interval", "0.2", "--", sys.executable, "-c", CHILD],
                                 stderr=fh, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while sum(ln.startswith("ibtick: tick t_unix=") for ln in err.read_text().splitlines()) < 4:
                assert child.poll() is None and time.monotonic() < deadline, err.read_text()
                time.sleep(0.05)  # until four ticks were answered
            child.send_signal(signal.SIGTERM)
            rc = child.wait(timeout=10)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
    lines = err.read_text().splitlines()
    ticks = [line for line in lines if line.startswith("ibtick: tick t_unix=")]
    assert rc == 3  # the child's own exit status after the SIGTERM ibtick passed on
    assert len(ticks) >= 4, lines
    assert lines.count("report") >= len(ticks) - 1
    first = lines.index(ticks[0])
    assert lines[first + 1] == "report"  # every report follows its tick
    uptimes = [float(t.split("uptime_s=")[1]) for t in ticks]
    # none before the child caught SIGUSR1 (it sleeps 0.5 s first)
    assert uptimes[0] >= 0.5 and uptimes == sorted(uptimes)


def test_a_child_that_never_catches_the_signal_is_never_killed_by_it(ibtick: Path) -> None:
    done = subprocess.run([str(ibtick), "--interval", "0.05", "--", "sleep", "0.6"], capture_output=True,
                          text=True, timeout=20)
    assert done.returncode == 0 and "ibtick: tick" not in done.stderr
    bad = subprocess.run([str(ibtick), "--", "/nonexistent/program"], capture_output=True, text=True, timeout=20)
    assert bad.returncode == 127 and "ibtick: error: cannot run /nonexistent/program" in bad.stderr
