"""The controller's side of a pair with fake agent links that behave like the real ones: the replay
record moved onto the sensor's clock, artifacts fetched with their checksums, the summary written
last with `pair`, a lost host failing its sample and the pair's later ones (with one reconnect
attempt each), and case assignment with the rule against pooling different hardware."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from idsbench.errors import IdsbenchError, SpecError
from idsbench.hosts import protocol
from idsbench.hosts.assign import assign, check_pooling
from idsbench.hosts.inventory import HostEntry, Pair
from idsbench.hosts.pairrun import PairRunner
from idsbench.hosts.protocol import FileInfo, HostLost
from idsbench.plan import plan
from idsbench.spec import spec_from_dict
from idsbench.store.layout import HOSTS_FILE, PROBES_DIR, SUMMARY_FILE, CampaignDir
from idsbench.store.schema import CaseParams, ReplayRecord, SampleSummary, TraceRecord
from idsbench.teardown import TeardownStack

TRACE = TraceRecord(ref="t", path="/x/t.pcap", sha256="0" * 64, packets=100, bytes=6000, duration_s=1.0)
SPEC = spec_from_dict({"name": "c", "samples": 2, "traffic": {"traces": ["t"], "replayers": [1, 2, 4]},
                       "hosts": {"inventory": "inv.yml"}})
CASES = plan(SPEC)
M = TypeVar("M", bound=BaseModel)


def _pair(n: int) -> Pair:
    return Pair(name=f"p{n}",
                sender=HostEntry(name=f"p{n}-sender", role="sender", address="198.18.0.1", pair=f"p{n}",
                                 transmit_interface="eth1"),
                sensor=HostEntry(name=f"p{n}-sensor", role="sensor", address="198.18.0.2", pair=f"p{n}",
                                 capture_interface="eth1"))


class FakeLink:
    """An agent as the controller sees it. Files live in `files` (name -> bytes)."""

    def __init__(self, role: str, clock_offset: float, script: dict[str, Any]):
        self.role, self.offset, self.script = role, clock_offset, script
        self.alive = True
        self.files: dict[str, bytes] = {}
        self.calls: list[str] = []

    def call(self, op: str, args: BaseModel, reply: type[M], *, upcall: Any = None, event: Any = None,
             timeout: float | None = None) -> M:
        """Typed as the real link: the op's argument model in, the reply model out."""
        return reply.model_validate(self._answer(op, protocol.dump(args), upcall, event))

    def _answer(self, op: str, args: dict[str, Any], upcall: Any, event: Any) -> dict[str, Any]:
        self.calls.append(op)
        if not self.alive:
            raise HostLost(f"{self.role}-host", "connection closed")
        if op == "clock":
            import time

            return {"t": time.time() + self.offset}
        if op == "nic":
            return {"counters": [0, 0, 0, self.script.get("tx", 0), 0, 0]}
        if op == "remove":
            return {}
        if op == "replay":
            if self.script.get("sender_dies"):
                self.alive = False
                raise HostLost("p1-sender", "the connection ended during 'replay'")
            self.files = {"runs/k/sender/c/s0/replay-0.txt": b"Actual: 100 packets"}
            record = ReplayRecord(start_unix=1000.0, end_unix=1001.0, sent_pkts=100, sent_bytes=6000)
            return {"record": record.model_dump(mode="json"), "facts": [], "dir": "runs/k/sender/c/s0",
                    "files": [_info("replay-0.txt", b"Actual: 100 packets")]}
        if op == "sample":
            return self._sample(args, upcall, event)
        raise AssertionError(op)

    def _sample(self, args: dict[str, Any], upcall: Any, event: Any) -> dict[str, Any]:
        if self.script.get("sensor_dies"):
            self.alive = False
            raise HostLost("p1-sensor", "the connection ended during 'sample'")
        event(protocol.Event(event="phase", name="replay"))
        status, reason = "ok", None
        try:
            self.script["before"] = upcall(protocol.Upcall(upcall=1, op="nic", args={})).model_dump(mode="json")
            got = upcall(protocol.Upcall(upcall=2, op="replay", args={"case_id": args["case_id"], "index": args["index"],
                                                                       "timeout_s": 60}))
            self.script["record"] = got.record.model_dump(mode="json")
        except IdsbenchError as exc:
            status, reason = "failed", f"baremetal setup failed: {exc}"
        case = next(c for c in CASES if c.case_id == args["case_id"])
        summary = SampleSummary(campaign="c", case_id=case.case_id, sample=args["index"],
                                case=CaseParams.model_validate(case.params()), trace=TRACE, status=status, reason=reason)
        self.files = {f"runs/k/cases/{case.case_id}/s0/eve.json": b'{"event_type":"stats"}\n',
                      f"runs/k/cases/{case.case_id}/s0/summary.json": b"{}"}
        return {"summary": summary.to_json(), "warnings": [], "dir": f"runs/k/cases/{case.case_id}/s0",
                "files": [_info("eve.json", b'{"event_type":"stats"}\n'), _info("summary.json", b"{}")]}

    def get(self, remote: str, local: Path, info: FileInfo) -> None:
        data = self.files[remote]
        assert hashlib.sha256(data).hexdigest() == info.sha256
        local.write_bytes(data)

    def close(self, timeout_s: float = 10.0) -> None:
        self.alive = False


def _info(name: str, data: bytes) -> dict[str, Any]:
    return FileInfo(name=name, size=len(data), sha256=hashlib.sha256(data).hexdigest()).model_dump()


def _runner(tmp_path: Path, script: dict[str, Any], *, reconnect_ok: bool = True) -> tuple[PairRunner, list[str]]:
    opened: list[str] = []

    def opener(host: HostEntry) -> Any:
        opened.append(host.name)
        if opened.count(host.name) > 1 and not reconnect_ok:
            raise HostLost(host.name, "ssh: connect to host port 22: Connection refused")
        return FakeLink(host.role, 0.5 if host.role == "sensor" else -0.25, script)

    runner = PairRunner(pair=_pair(1), layout=CampaignDir(tmp_path / "c"), campaign="c", traces={"t": TRACE},
                        stack=TeardownStack(state_dir=tmp_path / "st"), opener=opener)
    runner.connect()
    return runner, opened


def test_a_sample_on_hosts(tmp_path):
    script: dict[str, Any] = {"tx": 7}
    runner, _ = _runner(tmp_path, script)
    phases: list[str] = []
    runner.on_phase = phases.append
    case = CASES[0]
    result = runner.run_sample(case, 0, 60)
    assert result.status == "ok" and phases == ["replay"]
    # the sender's times on the sensor's clock: + (0.5 - (-0.25)) within the measuring error
    assert script["record"]["start_unix"] == pytest.approx(1000.75, abs=0.01)
    assert script["before"]["counters"][3] == 7
    sample_dir = tmp_path / "c" / "cases" / case.case_id / "s0"
    assert sorted(p.name for p in sample_dir.iterdir()) == ["eve.json", HOSTS_FILE, "replay-0.txt", SUMMARY_FILE]
    summary = json.loads((sample_dir / SUMMARY_FILE).read_text())
    assert summary["pair"] == "p1-sender/p1-sensor" and summary["status"] == "ok"
    hosts = json.loads((sample_dir / HOSTS_FILE).read_text())
    assert hosts["hosts"]["sensor"]["clock_offset_s"] == pytest.approx(0.5, abs=0.01)
    assert hosts["artifacts_sha256"]["eve.json"] == hashlib.sha256(b'{"event_type":"stats"}\n').hexdigest()
    assert runner.links["sensor"].calls.count("remove") == 1 and runner.links["sender"].calls.count("remove") == 1


def test_sender_lost_during_the_replay_fails_the_sample_naming_it(tmp_path):
    runner, _ = _runner(tmp_path, {"sender_dies": True})
    result = runner.run_sample(CASES[0], 0, 60)
    assert result.status == "failed" and "p1-sender" in str(result.reason)
    summary = json.loads((tmp_path / "c" / "cases" / CASES[0].case_id / "s0" / SUMMARY_FILE).read_text())
    assert summary["status"] == "failed" and "p1-sender became unreachable" in summary["reason"]
    assert runner.lost is not None


def test_sensor_lost_fails_this_and_later_samples_until_it_is_back(tmp_path):
    script: dict[str, Any] = {"sensor_dies": True}
    runner, opened = _runner(tmp_path, script, reconnect_ok=False)
    first = runner.run_sample(CASES[0], 0, 60)
    second = runner.run_sample(CASES[0], 1, 60)
    assert first.status == second.status == "failed"
    assert "p1-sensor" in str(first.reason) and "Connection refused" in str(second.reason)
    for index in (0, 1):
        doc = json.loads((tmp_path / "c" / "cases" / CASES[0].case_id / f"s{index}" / SUMMARY_FILE).read_text())
        assert doc["status"] == "failed" and doc["pair"] == "p1-sender/p1-sensor"
    # the host is back: the next sample reconnects and runs
    runner2, _ = _runner(tmp_path, {"tx": 1})
    runner2.lost = runner.lost
    assert runner2.run_sample(CASES[1], 0, 60).status == "ok"


def test_cases_round_robin_and_resumed_cases_stay_on_their_pair(tmp_path):
    layout = CampaignDir(tmp_path / "c")
    pairs = [_pair(1), _pair(2)]
    assignment, moves = assign(CASES, pairs, layout)
    assert [assignment[c.case_id].name for c in CASES] == ["p1", "p2", "p1"] and moves == []
    # case 0 ran on pair 2 before (e.g. an older inventory order): it stays there
    _summary(layout, CASES[0].case_id, "p2-sender/p2-sensor")
    assignment, moves = assign(CASES, pairs, layout)
    assert assignment[CASES[0].case_id].name == "p2" and moves == []
    # it ran on a pair the inventory no longer has: it moves, pooling is checked on the probes
    _summary(layout, CASES[0].case_id, "p9-sender/p9-sensor")
    assignment, moves = assign(CASES, pairs, layout)
    assert [m.case_id for m in moves] == [CASES[0].case_id] and moves[0].previous == "p9-sender/p9-sensor"
    with pytest.raises(SpecError, match="probes"):
        check_pooling(moves, layout, pool=False)
    probe = {"cpu": {"model": "Xeon", "count": 8}, "memory_bytes": 2**34,
             "interfaces": {"eth1": {"name": "eth1", "driver": "ixgbe"}}}
    for host in ("p9-sender", "p9-sensor", "p1-sender", "p1-sensor"):
        _probe(layout, host, probe)
    check_pooling(moves, layout, pool=False)  # same hardware: pooling is fine
    _probe(layout, "p1-sensor", {**probe, "cpu": {"model": "EPYC", "count": 8}})
    with pytest.raises(SpecError, match="differs in hardware"):
        check_pooling(moves, layout, pool=False)
    check_pooling(moves, layout, pool=True)  # told to


def _summary(layout: CampaignDir, case_id: str, pair: str) -> None:
    d = layout.sample_dir(case_id, 0)
    d.mkdir(parents=True, exist_ok=True)
    case = next(c for c in CASES if c.case_id == case_id)
    summary = SampleSummary(campaign="c", case_id=case_id, sample=0, case=CaseParams.model_validate(case.params()),
                            trace=TRACE, status="ok", pair=pair)
    (d / SUMMARY_FILE).write_text(json.dumps(summary.to_json()))


def _probe(layout: CampaignDir, host: str, doc: dict[str, Any]) -> None:
    (layout.root / PROBES_DIR).mkdir(parents=True, exist_ok=True)
    (layout.root / PROBES_DIR / f"{host}.json").write_text(json.dumps(doc))
