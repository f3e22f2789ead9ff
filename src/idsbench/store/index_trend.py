"""Reading the result store for trends: the keyed cases of one series (or all), in time order, and
the campaign facts a change is explained with."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from idsbench.probemodel import HostProbe
from idsbench.store.campaigndoc import Environment, Inputs, stored_spec
from idsbench.store.casekey import CampaignFacts, KeyedCase, key_from_fields
from idsbench.store.index import connect
from idsbench.store.schema import CaseResult


def keyed_cases(root: Path | str, series_id: str | None = None) -> list[KeyedCase]:
    """Every indexed case (or those of one series) with its key, oldest campaign first."""
    with connect(root, read_only=True) as con:
        sql = ("SELECT c.campaign_id, k.created_unix, c.key, c.row FROM cases c JOIN campaigns k USING (campaign_id)"
               + (" WHERE c.series_id = ?" if series_id else "")
               + " ORDER BY k.created_unix NULLS LAST, c.campaign_id, c.ordinal")
        rows = con.execute(sql, [series_id] if series_id else []).fetchall()
    return [KeyedCase(cid, created, key_from_fields(json.loads(key)), CaseResult.model_validate_json(row))
            for cid, created, key, row in rows]


def campaign_facts(root: Path | str, campaign_ids: Sequence[str]) -> dict[str, CampaignFacts]:
    """The stored spec, environment, inputs and probe of the given campaigns."""
    if not campaign_ids:
        return {}
    with connect(root, read_only=True) as con:
        rows = con.execute("SELECT campaign_id, spec, environment, inputs, probe FROM campaigns "
                           "WHERE list_contains(?, campaign_id)", [list(campaign_ids)]).fetchall()
    out = {}
    for cid, spec, env, inputs, probe in rows:
        typed, problem = stored_spec(json.loads(spec or "{}"))
        out[cid] = CampaignFacts(typed, Environment.model_validate_json(env or "{}"),
                                 Inputs.model_validate_json(inputs or "{}"), _probe(probe), problem)
    return out


def _probe(text: str | None) -> HostProbe | None:
    try:
        return HostProbe.model_validate_json(text) if text and text != "null" else None
    except ValidationError:  # a probe this version cannot read: the trend compares environments instead
        return None
