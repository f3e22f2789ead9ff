"""Detection fidelity: the alerts of a live sample against the offline ground truth, per signature."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Recall:
    recall: float | None   # alerts the truth expects that the sample raised (None: the truth has none)
    extra: int             # alerts beyond the truth's count for their signature (or for signatures it lacks)


def recall(live: Mapping[int, int], truth: Mapping[int, int], exclude: Iterable[int] = ()) -> Recall:
    """Per-signature recall: Σ min(live, truth) / Σ truth, over the sids not in `exclude` (those only one of the
    two configurations can fire: GroundTruth.excluded_sids)."""
    sids = (set(live) | set(truth)) - set(exclude)
    expected = sum(truth.get(sid, 0) for sid in sids)
    matched = sum(min(live.get(sid, 0), truth.get(sid, 0)) for sid in sids)
    extra = sum(max(0, live.get(sid, 0) - truth.get(sid, 0)) for sid in sids)
    return Recall(round(matched / expected, 6) if expected else None, extra)
