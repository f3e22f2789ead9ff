"""The host probe of a campaign (store.layout.PROBE_FILE, read by store.reader.read_probe), written once, when the campaign starts, so every
result can be read against the host it came from; the known traps and, on --resume, what changed
on the host since, as warnings before the first sample."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from idsbench.errors import InputError, NoisyHost
from idsbench.plan import Case
from idsbench.probe.collect import collect
from idsbench.probe.diff import diff, load
from idsbench.probe.noise import measure_noise, noise_warning, piece_seconds
from idsbench.probe.warnings import warnings as trap_warnings
from idsbench.probemodel import NoiseProbe
from idsbench.store.layout import PROBE_FILE, CampaignDir
from idsbench.store.schema import TraceRecord
from idsbench.store.writers import write_probe
from idsbench.traffic.replay import planned_seconds, requested_pps


def replay_seconds(case: Case, trace: TraceRecord) -> float | None:
    """How long the case's replay lasts (its duration, or its packets at the requested rate); None for
    topspeed, whose length is the sender's."""
    if case.duration_s is not None:
        return case.duration_s
    pps = requested_pps(case.rate, trace.packets, trace.duration_s, trace.bytes)
    return planned_seconds(trace.packets * case.loops, pps, None)


def trial_seconds(cases: Sequence[Case], traces: Mapping[str, TraceRecord]) -> float | None:
    """The shortest replay of the campaign (the noisiest time scale it is measured at); None when no
    case's length is known beforehand."""
    lengths = [s for c in cases if c.trace in traces and (s := replay_seconds(c, traces[c.trace])) is not None]
    return min(lengths) if lengths else None


def quietness(precision: float, sensor_cpus: list[int] | None, *, require_quiet: bool,
              trial_s: float | None = None, measured: NoiseProbe | None = None) -> tuple[NoiseProbe, list[str]]:
    """The host's noise before a campaign at the time scale of its trials (`trial_s`; probe/noise.py:
    PIECES × the piece length, 6-12 s) and a warning naming each figure above `precision`; with
    `require_quiet` a noisy host is refused (NoisyHost). `measured`: a probe the caller took moments
    before (a gate's earlier campaign, seconds ago): judged as it is, not measured again."""
    noise = measured or measure_noise(sensor_cpus, piece_seconds(trial_s))
    message = noise_warning(noise, precision)
    if message is None:
        return noise, []
    if require_quiet:
        raise NoisyHost(message, fix="run when the host is quiet (stop other jobs, pin the sensor's CPUs), "
                                     "widen search.precision, or drop --require-quiet.")
    return noise, [message]


def record_probe(layout: CampaignDir, *, probe_suricata: bool, noise: NoiseProbe | None = None) -> list[str]:
    """Probe this host into the campaign (kept as first written on --resume), with the quietness
    probe `noise` measured when the campaign started; its warnings."""
    probe = collect(sensor=probe_suricata)
    if noise is not None:
        probe = probe.model_copy(update={"noise": noise})
    out = trap_warnings(probe)
    path = layout.root / PROBE_FILE
    if not path.is_file():
        write_probe(layout.root, probe)
        return out
    try:
        first = load(path)
    except InputError as exc:
        return [*out, f"the campaign's {PROBE_FILE} is unreadable ({exc}); it was left as it is"]
    changed = diff(first, probe)
    if changed:
        shown = "; ".join(str(d) for d in changed[:3]) + (f"; … {len(changed) - 3} more" if len(changed) > 3 else "")
        out.append(f"the host changed since this campaign started ({shown}): samples before and after the "
                   f"change may not compare (`idsbench probe --diff {layout.root} <new probe>` lists it all)")
    return out
