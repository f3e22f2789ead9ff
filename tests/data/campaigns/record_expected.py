"""Record what an idsbench checkout reads from a stored campaign: run with THAT checkout's python, e.g.
`/work/main/.venv/bin/python tests/data/campaigns/record_expected.py tests/data/campaigns/main-0c08791`.

Writes `<campaign>/expected.json`: the `results --format json` rows, the report's inputs (the environment
table, the spec/inputs/cases JSON it embeds, its header facts) and every case's key (store.casekey), as
that code gives them. tests/unit/test_campaign_fixture.py checks the current code against it.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from idsbench.cli.main import main
from idsbench.report.html import _environment, _meta
from idsbench.store.casekey import case_key
from idsbench.store.reader import load_campaign, read_probe_doc


def record(root: Path) -> dict[str, object]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["results", str(root), "--format", "json"]) == 0
    campaign = load_campaign(root)
    meta = {k: v for k, v in _meta(campaign).items() if k != "root"}
    probe = read_probe_doc(root)
    keys = {c.case_id: case_key(campaign.doc, c.params, probe, "fixture").fields() for c in campaign.cases}  # type: ignore[arg-type]
    return {"rows": json.loads(out.getvalue()), "row_keys": [list(r) for r in json.loads(out.getvalue())],
            "environment": [list(e) for e in _environment(campaign)], "meta": meta,
            "spec_json": campaign.doc.model_dump(mode="json", include={"spec", "inputs", "cases"}),
            "case_keys": keys, "warnings": list(campaign.warnings)}


if __name__ == "__main__":
    root = Path(sys.argv[1])
    (root / "expected.json").write_text(json.dumps(record(root), indent=1) + "\n")
