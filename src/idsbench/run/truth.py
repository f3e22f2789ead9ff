"""The ground truth of detection: what the engine alerts on a case's traffic when it reads every
packet offline (same rules, same config, and the live capture's detection-relevant settings: an engine's
`offline_parity`, sensors/suricata/parity.py), per signature — the reference for `alert_recall`. The sids
only one of the two configurations can fire are named in `GroundTruth.excluded_sids` (with why) and left
out of the recall.

One offline run per replayer's copy of the trace (distinct flows carry rewritten addresses, and rules
may depend on them), summed; cached under `<cache>/truth/` by the digest of engine version, rules,
overrides, overlay and capture. Only for cases where it is exact: one loop, no duration, and either
one replayer or distinct flows (identical copies interleave their sessions on the wire).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path

from idsbench.plan import Case
from idsbench.run.context import CampaignContext
from idsbench.run.facts import case_options, with_capture
from idsbench.store import atomic
from idsbench.store.environment import sha256_file
from idsbench.store.layout import PREFLIGHT_DIR
from idsbench.store.schema import GroundTruth
from idsbench.store.writers import write_truth

TRUTH_VERSION = 2  # 2: Suricata's offline run takes the live checksum mode; exclusions cached beside the alerts


def applies(case: Case) -> bool:
    return case.loops == 1 and case.duration_s is None and (case.replayers == 1 or case.flows == "distinct")


def ground_truths(ctx: CampaignContext, cases: list[Case]) -> None:
    """Write `<campaign>/truth/<case_id>.json` for every case it applies to (cached runs)."""
    if not ctx.settings.sensor.ground_truth:
        return
    digest = functools.cache(sha256_file)  # cases share traces and rules: each file is hashed once
    for case in cases:
        if not applies(case):
            continue
        truth = case_truth(ctx, case, digest)
        if truth is not None:
            write_truth(ctx.layout.root, truth)


def case_truth(ctx: CampaignContext, case: Case, digest: Callable[[Path], str]) -> GroundTruth | None:
    started = time.monotonic()
    engine = ctx.engine(case)
    total: dict[int, int] = {}
    excluded: dict[int, str] = {}
    shas = []
    for pcap in ctx.replay_paths(case):
        sha = digest(pcap)
        shas.append(sha)
        found = _cached(ctx, case, pcap, sha, digest)
        if found is None:
            return None
        alerts, left_out = found
        for sid, n in alerts.items():
            total[sid] = total.get(sid, 0) + n
        excluded.update(left_out)
    return GroundTruth(case_id=case.case_id, engine=engine.name, engine_version=ctx.engine_versions[case.engine],
                       traces=tuple(shas), alerts_by_sid=total, excluded_sids=dict(sorted(excluded.items())),
                       packets=ctx.traces[case.trace].packets * case.replayers,
                       elapsed_s=round(time.monotonic() - started, 3))


def _cached(ctx: CampaignContext, case: Case, pcap: Path, sha: str,
            digest: Callable[[Path], str]) -> tuple[dict[int, int], dict[int, str]] | None:
    """(alerts per sid, the sids only one configuration can fire with why) of one copy of the trace."""
    # the case's capture method too: what the offline run mirrors (checksum mode, defrag) depends on it
    engine, options = ctx.engine(case), with_capture(case_options(ctx, case), ctx.settings, case)
    h = hashlib.sha256(f"{TRUTH_VERSION}\0{engine.name}\0{ctx.engine_versions[case.engine]}\0{sha}".encode())
    for rule in options.rules:
        h.update(digest(rule).encode())
    h.update(json.dumps(sorted(options.overrides)).encode())
    if options.config_overlay is not None:
        h.update(digest(options.config_overlay).encode())
    h.update(json.dumps([options.capture, options.capture_options]).encode())  # the live settings it mirrors
    path = ctx.cache_dir / "truth" / f"{h.hexdigest()[:32]}.json"
    try:
        doc = json.loads(path.read_text())
        return ({int(k): int(v) for k, v in doc["alerts"].items()},
                {int(k): str(v) for k, v in doc["excluded"].items()})
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass
    work = ctx.layout.root / PREFLIGHT_DIR / f"truth-{sha[:12]}"
    work.mkdir(parents=True, exist_ok=True)
    alerts = engine.offline_alerts(pcap, options, work)
    if alerts is None:
        return None
    parity = getattr(engine, "offline_parity", None)  # engines whose offline run cannot match every live setting
    excluded: dict[int, str] = parity(options, work).excluded(alerts, options.rules) if callable(parity) else {}
    atomic.write_json(path, {"alerts": {str(k): v for k, v in sorted(alerts.items())},
                             "excluded": {str(k): v for k, v in excluded.items()}})
    return alerts, excluded
