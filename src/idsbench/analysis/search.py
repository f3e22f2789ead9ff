"""A searched case's results-row fields (the contract of `idsbench search`)."""

from __future__ import annotations

from idsbench.store.schema import SearchResult


def search_fields(result: SearchResult | None) -> dict[str, object]:
    """`ndr_pps`, `ndr_mbps`, `ndr_bracket` ([lo, hi] pps), `pdr` ({tolerance: pps}), `search_trials`,
    `sender_limited`, `search_verified`; for a cpus search `min_cpus` (and `min_cpus_bracket`)."""
    if result is None:
        return {}
    out: dict[str, object] = {"search_axis": result.axis, "search_mode": result.mode,
                              "search_trials": len(result.trials) + len(result.verification),
                              "sender_ceiling_pps": result.sender_ceiling_pps,
                              "sender_limited": any(r.lower_bound for r in result.results)}
    if result.axis == "cpus":
        ndr = next((r for r in result.results if r.tolerance == 0), None)
        out["min_cpus"] = ndr.value if ndr else None
        out["min_cpus_bracket"] = list(ndr.bracket) if ndr and ndr.bracket else None
        out["search_verified"] = ndr.verified if ndr else None
        return out
    def mbps(pps: float | None) -> float | None:
        return round(pps * result.avg_frame_bytes * 8 / 1e6, 3) if pps is not None and result.avg_frame_bytes else None

    pdr: dict[str, float | None] = {}
    for r in result.results:
        lo_hi = None
        if r.bracket is not None:
            lo_hi = [_pps(result, r.bracket[0]), _pps(result, r.bracket[1])]
        if r.tolerance == 0:
            out.update({"ndr_pps": r.value_pps, "ndr_mbps": mbps(r.value_pps), "ndr_bracket": lo_hi,
                        "search_verified": r.verified})
            if result.axis == "replayers":
                out["ndr_replayers"] = r.value
        else:
            pdr[f"{r.tolerance:g}"] = r.value_pps
    out["pdr"] = pdr
    return out


def _pps(result: SearchResult, value: float) -> float | None:
    """An axis value in pps (replayers axis: the trial that tried it tells its offered load)."""
    if result.axis == "rate":
        return value
    for t in (*result.trials, *result.verification):
        if t.value == value and t.offered_pps is not None:
            return t.offered_pps
    return None
