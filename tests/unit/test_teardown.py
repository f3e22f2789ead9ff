import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from idsbench.proc import Supervisor
from idsbench.procinfo import process_starttime
from idsbench.teardown import TeardownStack, cleanup_stale, from_record, resource_kind, to_record, transient

UNDONE: list[str] = []


@resource_kind
@dataclass(frozen=True)
class MarkerFile:
    """A test resource: a file whose removal is recorded in UNDONE."""

    kind: ClassVar[str] = "test-marker-file"
    path: str
    fail: bool = False
    note: object = transient()

    def undo(self) -> None:
        if self.fail:
            raise RuntimeError("boom")
        UNDONE.append(Path(self.path).name)
        Path(self.path).unlink(missing_ok=True)

    def describe(self) -> str:
        return f"marker {self.path}"


def test_close_undoes_in_reverse_and_clears_state(tmp_path):
    UNDONE.clear()
    td = TeardownStack(state_dir=tmp_path)
    td.push(MarkerFile(str(tmp_path / "a"), note=object()))
    td.push(MarkerFile(str(tmp_path / "b")))
    saved = json.loads(td.state_file.read_text())["resources"]
    assert saved[1] == {"kind": "test-marker-file", "module": __name__, "path": str(tmp_path / "b"),
                        "fail": False}  # transient fields are not saved
    assert td.close() == []
    assert UNDONE == ["b", "a"]
    assert not td.state_file.exists()


def test_failures_collected_not_raised(tmp_path):
    UNDONE.clear()
    td = TeardownStack(state_dir=tmp_path)
    td.push(MarkerFile(str(tmp_path / "x")))
    td.push(MarkerFile(str(tmp_path / "y"), fail=True))
    failures = td.close()
    assert len(failures) == 1 and "boom" in failures[0] and "marker" in failures[0]
    assert UNDONE == ["x"]


def test_records_round_trip_and_unknown_kinds_are_errors(tmp_path):
    res = MarkerFile(str(tmp_path / "z"))
    assert from_record(to_record(res)) == res
    with pytest.raises(ValueError, match="unknown resource kind"):
        from_record({"kind": "no-such-kind", "path": "x"})


def test_a_kind_is_defined_once():
    with pytest.raises(ValueError, match="defined twice"):
        @resource_kind
        @dataclass(frozen=True)
        class Other:
            kind: ClassVar[str] = "test-marker-file"


def test_supervisor_stops_and_forgets(tmp_path):
    with TeardownStack(state_dir=tmp_path) as td:
        sup = Supervisor(td)
        child = sup.start(["sleep", "30"], name="sleeper", stdout=tmp_path / "out.txt")
        assert process_starttime(child.pid) is not None
        assert sup.stop(child, timeout=5) == -signal.SIGTERM
        assert not td.state_file.exists()


def test_close_kills_running_children(tmp_path):
    td = TeardownStack(state_dir=tmp_path)
    child = Supervisor(td).start(["sleep", "30"], name="sleeper")
    td.close()
    assert child.poll() is not None


def test_cleanup_stale_kills_orphans_of_a_killed_owner(tmp_path):
    # A separate owner process registers a sleeper, then dies by SIGKILL without teardown.
    script = (
        "import sys, time; from pathlib import Path\n"
        "from idsbench.teardown import TeardownStack; from idsbench.proc import Supervisor\n"
        f"td = TeardownStack(state_dir=Path({str(tmp_path)!r}))\n"
        "c = Supervisor(td).start(['sleep', '60'], name='orphan')\n"
        "print(c.pid, flush=True); time.sleep(60)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        orphan = int(owner.stdout.readline())
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
        assert process_starttime(orphan) is not None
        removed, failures = cleanup_stale(tmp_path)
        assert failures == []
        assert any(str(orphan) in line for line in removed)
        deadline = time.time() + 5
        while time.time() < deadline and process_starttime(orphan) is not None:
            time.sleep(0.05)  # the orphan's parent is gone; init reaps it
        assert process_starttime(orphan) is None or open(f"/proc/{orphan}/stat").read().split(") ")[1][0] == "Z"
        assert list(tmp_path.glob("*.json")) == []
    finally:
        if owner.poll() is None:
            owner.kill()


def test_cleanup_leaves_live_runs_alone(tmp_path):
    td = TeardownStack(state_dir=tmp_path)
    child = Supervisor(td).start(["sleep", "30"], name="live")
    try:
        removed, failures = cleanup_stale(tmp_path)
        assert removed == [] and "still active" in failures[0]
        assert child.poll() is None
    finally:
        td.close()
