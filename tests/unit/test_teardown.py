import json
import os
import signal
import subprocess
import sys
import time

from idsbench.proc import Supervisor
from idsbench.teardown import TeardownStack, cleanup_stale, process_starttime


def test_close_undoes_in_reverse_and_clears_state(tmp_path):
    order = []
    td = TeardownStack(state_dir=tmp_path)
    td.push("file", {"path": str(tmp_path / "a")}, undo=lambda: order.append("a"))
    td.push("file", {"path": str(tmp_path / "b")}, undo=lambda: order.append("b"))
    assert json.loads(td.state_file.read_text())["resources"][1]["path"].endswith("b")
    assert td.close() == []
    assert order == ["b", "a"]
    assert not td.state_file.exists()


def test_failures_collected_not_raised(tmp_path):
    td = TeardownStack(state_dir=tmp_path)
    seen = []
    td.push("file", {"path": "x"}, undo=lambda: seen.append("x"))
    td.push("file", {"path": "y"}, undo=lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    failures = td.close()
    assert len(failures) == 1 and "boom" in failures[0]
    assert seen == ["x"]


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
