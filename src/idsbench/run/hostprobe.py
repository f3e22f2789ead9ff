"""The host probe of a campaign (store.layout.PROBE_FILE, read by store.reader.read_probe), written once, when the campaign starts, so every
result can be read against the host it came from; the known traps and, on --resume, what changed
on the host since, as warnings before the first sample."""

from __future__ import annotations

from idsbench.errors import InputError
from idsbench.probe.collect import collect
from idsbench.probe.diff import diff, load
from idsbench.probe.warnings import warnings as trap_warnings
from idsbench.store import atomic
from idsbench.store.layout import PROBE_FILE, CampaignDir


def record_probe(layout: CampaignDir, *, probe_suricata: bool) -> list[str]:
    """Probe this host into the campaign (kept as first written on --resume); its warnings."""
    probe = collect(sensor=probe_suricata)
    out = trap_warnings(probe)
    path = layout.root / PROBE_FILE
    if not path.is_file():
        atomic.write_json(path, probe.model_dump(mode="json"))
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
