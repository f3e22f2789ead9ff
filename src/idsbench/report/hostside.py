"""The host-side profile of a VM or container case, as the report's profile section shows it beside
the sensor's own profile (analysis/hostside.py computes it)."""

from __future__ import annotations

from typing import Any

from idsbench.analysis.hostside import case_host_side
from idsbench.report.fmt import number
from idsbench.store.reader import Campaign

SUBJECTS = {"qemu": "qemu (vCPU, main-loop, I/O and vhost tasks)", "runtime": "the container runtime's processes"}


def host_side_view(campaign: Campaign, case_id: str) -> dict[str, Any] | None:  # Any: a Jinja template's view
    h = case_host_side(campaign, case_id)
    if h is None:
        return None
    label = "emulated (TCG)" if h.emulated else ("KVM" if h.accel == "kvm" else "")
    return {
        "subject": SUBJECTS.get(h.subject, h.subject), "label": label, "emulated": h.emulated,
        "split": ("each thread's /proc CPU time split by its perf samples" if h.split == "perf" else
                  "by thread role only (no perf record in these samples)"),
        "categories": [{"title": c.title, "cpu_s": number(c.cpu_s, 2), "share": f"{c.share:.1%}"} for c in h.categories],
        "total": number(h.cpu_s, 2), "window": number(h.window_s, 1), "used": h.used,
        "monitor_column": h.monitor_column, "monitor": number(h.monitor_cpu_s, 2) if h.monitor_cpu_s is not None else None,
        "gap": "–" if h.worst_gap is None else f"{h.worst_gap:+.1%}",
        "measured_by": h.measured_by, "measured": number(h.measured_cpu_s, 2) if h.measured_cpu_s is not None else None,
        "threads": [{"name": n, "role": r, "cpu_s": number(s, 2)} for n, r, s in h.threads[:12]],
        "notes": list(h.notes)}
