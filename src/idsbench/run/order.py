"""The order a campaign's samples run in, decided once when the campaign is created and recorded in
campaign.json (`CampaignDoc.order`): a spec's `order`, or by default "interleaved" when more than one case
has more than one sample (rounds, so drift falls on every case alike and the analysis pairs them), the
cases of each round shuffled with a seed drawn then (RMIT). A resumed campaign keeps its recorded order;
an older one, what its spec said ("cases" when nothing)."""

from __future__ import annotations

import secrets

from idsbench.errors import SpecError
from idsbench.plan import Case, Sample, interleaved_rounds, run_order
from idsbench.store.campaigndoc import CampaignDoc
from idsbench.store.schema import RunOrderRecord


def default_order(requested: str | None, cases: list[Case]) -> str:
    """The order the spec asks for (`CampaignSettings.order`); unset: interleaved when there are rounds to
    interleave."""
    if requested is not None:
        return requested
    return "interleaved" if len(cases) > 1 and any(len(c.samples) > 1 for c in cases) else "cases"


def decide_order(requested: str | None, cases: list[Case], previous: CampaignDoc | None,
                 seed: int | None = None) -> RunOrderRecord:
    """A new campaign's order (`requested`: the spec's, else `default_order`; its rounds realized with `seed`,
    else a fresh one), or the one `previous` (the campaign being resumed) recorded; a spec that names another
    order than that is a SpecError."""
    if previous is not None:
        recorded = previous.run_order
        if requested is not None and requested != recorded.order:
            raise SpecError(f"this campaign runs its samples in the order {recorded.order!r} (campaign.json), the "
                            f"spec asks for {requested!r}.",
                            fix=f"resume with order = \"{recorded.order}\" (or none) in the spec, or start a new "
                                "campaign in another --out directory.")
        return recorded
    order = default_order(requested, cases)
    if order != "interleaved":
        return RunOrderRecord(order="cases")
    seed = secrets.randbits(31) if seed is None else seed
    rounds = tuple(tuple(c.case_id for c, _ in round_) for round_ in interleaved_rounds(cases, seed))
    return RunOrderRecord(order="interleaved", seed=seed, rounds=rounds)


def samples_in_order(cases: list[Case], record: RunOrderRecord) -> list[tuple[Case, Sample]]:
    return run_order(cases, record.order, record.seed)
