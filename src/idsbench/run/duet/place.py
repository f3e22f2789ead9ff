"""Where a duet's two sensors and its sender run, and the swap schedule (pure: unit-tested).

Each sensor runs in its own cgroup with identical limits. Placements:
- `split`: each slot pinned to its own CPUs (half the sensor CPUs each), no quota beyond the case's;
- `shared`: both slots on the same CPUs with equal limits: the case's `cpus` as each one's quota, else no
  quota — two cgroups of equal weight, which the scheduler gives equal shares when both are busy, without
  a hard cap that throttles a sensor catching up after the host delayed it (measured: with 0.5 CPU each,
  the side that started first dropped 45,124 of 400,000 packets in one of six samples at 50k pps).
With three or more CPUs the sender keeps the first (as a single sample's `split_cpus`) and the sensors
split the rest. With two, the placement is chosen by measurement (benchmarks/bench_duet.py, the A/A
ratio's CI width; docs/duet.md): `TWO_CPU_DEFAULT`. `shared` there = sender on CPU 0,
both sensors on CPU 1; `split` = one CPU each, the sender floating over both (measured: the native
sender's spinning SCHED_FIFO threads starve the sensor that shares their CPU — not one sample exact).

The sides swap slots — CPUs, mirror order (slot 0 gets the first copy), start order (slot 0 starts
first) — between samples: side a takes slot 0 in even samples and slot 1 in odd ones, so any
asymmetry of the method falls on both sides alike and cancels in the median ratio.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

PlacementKind = Literal["split", "shared"]
TWO_CPU_DEFAULT: PlacementKind = "shared"


@dataclass(frozen=True)
class Slot:
    """One of the two places a side takes in a sample."""

    index: int                        # 0: copied first by the mirror, started first
    cpus: tuple[int, ...] | None      # pinned CPUs (None: all)
    quota: float | None               # CPU limit in cores (None: none)


@dataclass(frozen=True)
class DuetPlacement:
    kind: PlacementKind
    sender_cpus: tuple[int, ...]
    slots: tuple[Slot, Slot]
    note: str | None = None           # a caveat the campaign prints (e.g. quotas above the shared set)

    def describe(self) -> str:
        s0, s1 = self.slots
        quota = f", {s0.quota:g} CPU each" if s0.quota is not None else ""
        return (f"{self.kind}: slot 0 on CPU {_cpus(s0.cpus)}, slot 1 on CPU {_cpus(s1.cpus)}{quota}, "
                f"sender on CPU {_cpus(self.sender_cpus)}")


def _cpus(cpus: tuple[int, ...] | None) -> str:
    return "all" if cpus is None else ",".join(map(str, cpus))


def place(available: list[int], cpus: float | None, *, sensor_cpuset: Sequence[int] | None = None,
          kind: PlacementKind | None = None) -> DuetPlacement:
    """The placement for `available` CPUs (sorted), the case's CPU limit and the spec's `setup.cpuset`
    (the sensors' CPUs). `kind` forces one (the benchmark compares both)."""
    if sensor_cpuset:
        pool = sorted(set(sensor_cpuset))
        sender = [c for c in available if c not in pool] or list(available)
    elif len(available) >= 3:
        pool, sender = available[1:], available[:1]
    elif len(available) == 2:
        chosen = kind or TWO_CPU_DEFAULT
        if chosen == "split":
            return _split(available, available, cpus)
        pool, sender = available[1:], available[:1]
    else:
        pool, sender = list(available), list(available)
    chosen = kind or ("split" if len(pool) >= 2 else "shared")
    if chosen == "split" and len(pool) >= 2:
        return _split(pool, sender, cpus)
    return _shared(pool, sender, cpus)


def _split(pool: list[int], sender: list[int], cpus: float | None) -> DuetPlacement:
    half = len(pool) // 2
    return DuetPlacement("split", tuple(sender),
                         (Slot(0, tuple(pool[:half]), cpus), Slot(1, tuple(pool[half:2 * half]), cpus)))


def _shared(pool: list[int], sender: list[int], cpus: float | None) -> DuetPlacement:
    quota = cpus
    note = None
    if quota is not None and 2 * quota > len(pool) + 1e-9:
        note = (f"the two sensors share CPU {_cpus(tuple(pool))} with {quota:g} CPU each, more than the set holds: "
                "when both are busy they get less than their quota")
    return DuetPlacement("shared", tuple(sender), (Slot(0, tuple(pool), quota), Slot(1, tuple(pool), quota)), note)


def slot_of(side: str, sample_index: int) -> int:
    """The slot `side` ("a" or "b") takes in sample `sample_index`: a in slot 0 in even samples."""
    swapped = sample_index % 2 == 1
    return (1 if side == "a" else 0) if swapped else (0 if side == "a" else 1)


def swapped(sample_index: int) -> bool:
    """Whether sample `sample_index` runs with the sides swapped (a in slot 1)."""
    return slot_of("a", sample_index) == 1
