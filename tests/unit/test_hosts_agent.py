"""The controller's link and the real agent process, talking the protocol over pipes (no ssh, no
root): hello, clock, files both ways with sha256 checks, the workdir boundary, errors with their
type, the sudo password line, and the agent leaving when its stdin closes."""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from idsbench.errors import EnvironmentMissing, IdsbenchError, InputError, SpecError
from idsbench.hosts.inventory import HostEntry
from idsbench.hosts.link import HostLink, agent_missing, measure_offset
from idsbench.hosts.protocol import (
    CHUNK,
    ClockReading,
    Empty,
    FileInfo,
    FileList,
    HostLost,
    PathArgs,
    RemoteCampaign,
    ReplayArgs,
    ReplayDone,
    SenderOpened,
    Stat,
)
from idsbench.procinfo import same_process_alive
from idsbench.teardown import TeardownStack

SENDER = HostEntry(name="gen-a", role="sender", address="192.0.2.10", transmit_interface="lo", pair="a")


def _agent(workdir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "idsbench.hosts.agent", "--name", "gen-a", "--role", "sender",
            "--workdir", str(workdir), "--iface", "lo", *extra]


@pytest.fixture
def link(tmp_path):
    stack = TeardownStack(state_dir=tmp_path / "state")
    link = HostLink(SENDER, tmp_path / "kh", stack, tmp_path / "agent.log", transport=_agent(tmp_path / "work")).open()
    yield link
    link.close()
    stack.close()


def test_hello_and_clock(link):
    from idsbench.hosts.digest import digest

    assert link.hello.digest == digest() and link.hello.role == "sender"
    assert link.hello.interface.exists and link.hello.interface.name == "lo"
    offset, uncertainty = measure_offset(link)
    assert abs(offset) < 0.05 and 0 <= uncertainty < 0.05  # same clock


def test_files_round_trip_with_checksums(link, tmp_path):
    data = os.urandom(2 * CHUNK + 12345)  # three chunks
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    sent = link.put(src, "traces/x/big.bin")
    assert sent.sha256 == hashlib.sha256(data).hexdigest() and sent.size == len(data)
    assert (tmp_path / "work" / "traces" / "x" / "big.bin").read_bytes() == data
    info = link.call("stat", PathArgs(path="traces/x/big.bin"), Stat).file
    assert info == FileInfo(name="traces/x/big.bin", size=len(data), sha256=sent.sha256)
    listed = link.call("list", PathArgs(path="traces"), FileList).files
    assert [f.name for f in listed] == ["x/big.bin"]
    back = tmp_path / "back.bin"
    link.get("traces/x/big.bin", back, info)
    assert back.read_bytes() == data
    wrong = info.model_copy(update={"sha256": "0" * 64})
    with pytest.raises(Exception, match="corrupt"):
        link.get("traces/x/big.bin", tmp_path / "bad.bin", wrong)
    assert not [p.name for p in tmp_path.iterdir() if "bad.bin" in p.name]  # neither the file nor a part of it
    link.call("remove", PathArgs(path="traces"), Empty)
    assert not (tmp_path / "work" / "traces").exists()
    assert link.call("stat", PathArgs(path="traces/x/big.bin"), Stat).file is None


def test_errors_keep_their_type_and_name_the_host(link, tmp_path):
    with pytest.raises(InputError, match="on host gen-a: .*outside the agent's workdir"):
        link.call("stat", PathArgs(path="../../etc/passwd"), Stat)
    with pytest.raises(Exception, match=r"on host gen-a: .*'replay' before open_campaign"):
        link.call("replay", ReplayArgs(case_id="c", index=0, timeout_s=1), ReplayDone)
    with pytest.raises(SpecError, match="on host gen-a"):  # a spec the host rejects
        link.call("open_campaign", RemoteCampaign(key="k", spec={"name": "bad name!"}, traces={}), SenderOpened)
    with pytest.raises(IdsbenchError, match=r"on host gen-a: protocol error: the arguments of 'stat' do not fit"):
        link.call("stat", Empty(), Stat)  # a request of another build: named, not a crash
    assert link.call("clock", Empty(), ClockReading).t > 0  # the agent still serves


def test_sudo_password_line_is_dropped_when_not_consumed(tmp_path):
    host = SENDER.model_copy(update={"become": "sudo"})
    stack = TeardownStack(state_dir=tmp_path / "state")
    link = HostLink(host, tmp_path / "kh", stack, tmp_path / "agent.log", become_password="s3cret",
                    transport=_agent(tmp_path / "work", "--password-line")).open()
    try:
        assert link.hello.role == "sender"
        assert "s3cret" not in (tmp_path / "agent.log").read_text()
    finally:
        link.close()
        stack.close()


def test_agent_leaves_when_its_stdin_closes(tmp_path):
    stack = TeardownStack(state_dir=tmp_path / "state")
    link = HostLink(SENDER, tmp_path / "kh", stack, tmp_path / "agent.log", transport=_agent(tmp_path / "work")).open()
    popen = link._popen
    assert popen is not None and popen.stdin is not None
    popen.stdin.close()  # the controller (or the connection) is gone
    deadline = time.monotonic() + 10
    while popen.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert popen.returncode == 130 and not same_process_alive(popen.pid, None)
    with pytest.raises(HostLost, match="gen-a"):
        link.call("clock", Empty(), ClockReading)
    link.close()
    stack.close()
    assert not list((tmp_path / "state").glob("*.json"))


def test_a_host_without_idsbench_is_named_as_such_not_as_unreachable(tmp_path):
    # a real python that cannot import idsbench (-S: no site-packages, run from /), as on a host
    # that was never provisioned: the agent never starts, and the error says why
    stack = TeardownStack(state_dir=tmp_path / "state")
    transport = ["sh", "-c", f"cd / && exec {sys.executable} -S -m idsbench.hosts.agent --name gen-a --role sender "
                             f"--workdir {tmp_path / 'work'}"]
    link = HostLink(SENDER, tmp_path / "kh", stack, tmp_path / "agent.log", transport=transport)
    try:
        with pytest.raises(EnvironmentMissing) as err:
            link.open()
    finally:
        link.close()
        stack.close()
    text = str(err.value)
    assert "idsbench is not installed on host gen-a" in text and "No module named 'idsbench'" in text
    assert "unreachable" not in text and "idsbench hosts provision" in text
    assert not isinstance(err.value, HostLost)


@pytest.mark.parametrize(("stderr", "code", "says"), [
    ("Traceback ...\nModuleNotFoundError: No module named 'idsbench'\n", 1, "idsbench is not installed on host gen-a"),
    ("/usr/bin/python3: Error while finding module specification for 'idsbench.hosts.agent' "
     "(ModuleNotFoundError: No module named 'idsbench.hosts')\n", 1, "another idsbench build, without idsbench.hosts"),
    ("ModuleNotFoundError: No module named 'pydantic'\n", 1, "dependencies are incomplete on host gen-a"),
    ("bash: line 1: /opt/idsbench/venv/bin/python: No such file or directory\n", 127,
     "its python /opt/idsbench/venv/bin/python cannot run"),
])
def test_agent_start_failures_are_diagnosed(stderr, code, says):
    found = agent_missing(SENDER, stderr, code)
    assert found is not None and says in found.message
    assert "idsbench hosts provision" in str(found)


@pytest.mark.parametrize(("stderr", "code"), [
    ("ssh: connect to host 192.0.2.10 port 22: Connection timed out\n", 255),
    ("Connection closed by 192.0.2.10 port 22\n", 255),
    ("", None),
])
def test_an_unreachable_host_is_not_taken_for_a_missing_idsbench(stderr, code):
    assert agent_missing(SENDER, stderr, code) is None
