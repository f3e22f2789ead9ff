"""Known host traps, found before a campaign wastes its time on them. Each warning names the fix."""

from __future__ import annotations

from idsbench.probemodel import HostProbe

# Above this the profiling tick (cpuid;rdtsc;cpuid) is a VM exit, not a few dozen cycles.
TICK_TRAP_NS = 1000.0
# clock_gettime in the vDSO costs tens of ns; above this it is a system call or an emulated clock.
SLOW_CLOCK_NS = 500.0


def warnings(probe: HostProbe) -> list[str]:
    out: list[str] = []
    tick = probe.timers.cpuid_rdtsc_ns
    sensor = probe.sensor
    where = f"under {probe.hypervisor}" if probe.hypervisor else "on this host"
    if sensor is not None and sensor.profiling and tick is not None and tick > TICK_TRAP_NS:
        out.append(
            f"{sensor.engine} {sensor.version or ''} has profiling compiled in, and its per-packet tick "
            f"(upstream's cpuid;rdtsc;cpuid) costs {tick / 1000:.1f} µs {where} (a VM exit per call; "
            f"> {TICK_TRAP_NS / 1000:.0f} µs): throughput will be bound by the timer, not the "
            "sensor. Fix: use idsbench's build (engine suricata@8.0.6+profiling: scripts/build-suricata.sh "
            "patches the tick to lfence;rdtsc, which does not trap), a build without --enable-profiling, or "
            "run the sensor on bare metal."
        )
    clock = probe.timers.clock_gettime_ns
    if clock is not None and clock > SLOW_CLOCK_NS:
        out.append(
            f"clock_gettime(CLOCK_MONOTONIC) costs {clock:.0f} ns (clocksource {probe.clocksource}): "
            "every timestamp is a system call. Fix: use the tsc clocksource where the host allows it "
            "(/sys/devices/system/clocksource/clocksource0/current_clocksource)."
        )
    if probe.timers.error:
        out.append(f"timer costs were not measured: {probe.timers.error}")
    return out
