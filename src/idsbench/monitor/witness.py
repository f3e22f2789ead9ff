"""The host-speed witness: how fast the sensor's CPUs ran while a sample (or a search's trials) ran.

On a shared or cloud host the speed at which a CPU runs anything moves by 8–10% between 8-s samples
(noisy neighbours, the hypervisor, caches), and a sensor's CPU per packet moves with it. The witness is a
child process pinned to the sensor's CPUs that runs a fixed piece of work (monitor/witnessloop.py, ~PIECE_S
of CPU time) every PERIOD_S and logs each piece's iterations and CPU time (store.layout.WITNESS_FILE).
Its work rate over a sample's processing span (store/witness.py) is the host's speed then; relative to the
campaign's median it is the sample's `host_speed`, and CPU per packet × `host_speed` is what it would have
been at the campaign's median speed (`sensor_us_per_pkt_norm`, analysis/sample.py).

Cost: it runs on the sensor's CPUs, outside the sensor's cgroup, so it takes PIECE_S / PERIOD_S of one of
them (0.5%) plus its wake-ups; benchmarks/bench_host_speed.py measures it (the process's own CPU time)
and what it does to the sensor's CPU per packet. Started through the session's supervisor: the teardown
stack ends it on every path.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from idsbench.monitor import witnessloop
from idsbench.proc import Child, Supervisor

PERIOD_S = 0.2    # a piece every period …
PIECE_S = 0.001   # … of this much CPU time: 0.5% of one sensor CPU
LOOP = Path(witnessloop.__file__)


@dataclass(frozen=True)
class WitnessPlan:
    """Where a witness runs and what it logs (a sample's summary keeps it beside the rate)."""

    log: Path
    cpus: tuple[int, ...]
    period_s: float = PERIOD_S
    piece_s: float = PIECE_S


class HostWitness(Protocol):
    """A running witness (`SampleDeps.make_witness` returns one; tests pass a fake)."""

    plan: WitnessPlan

    def stop(self) -> None: ...


class Witness:
    """The witness process, started on `plan.cpus` with its log as stdout."""

    def __init__(self, sup: Supervisor, plan: WitnessPlan):
        self.sup, self.plan = sup, plan
        self.child: Child | None = sup.start(
            [sys.executable, "-I", "-S", str(LOOP), str(plan.period_s), str(plan.piece_s)],
            name="host-speed witness", stdout=plan.log, cpus=plan.cpus, grace_s=2.0)

    def stop(self) -> None:
        if self.child is not None:
            self.sup.stop(self.child, timeout=2.0)
            self.child = None


def start_witness(sup: Supervisor, cpus: Sequence[int], log: Path) -> HostWitness:
    return Witness(sup, WitnessPlan(log, tuple(sorted(set(cpus)))))
