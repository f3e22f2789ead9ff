"""examples/tuning.toml: the default configuration against the tune plan overlay, A/B in the report."""

from __future__ import annotations

import pytest
import tomllib

from idsbench.report import write_report
from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from ..paths import REPO
from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")
EXAMPLES = REPO / "examples"


def test_tuning_example_runs_both_configurations_and_reports_the_ab(tmp_path, state_dir, cache_dir):
    doc = tomllib.loads((EXAMPLES / "tuning.toml").read_text())
    doc["samples"] = 2
    doc["traffic"]["traces"] = ["builtin:mixed?packets=40000"]
    spec = spec_from_dict(doc, base_dir=EXAMPLES)
    out = tmp_path / "ab"
    result = run_campaign(spec, out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    assert result.failed == []
    campaign = load_campaign(out)
    by_config = {c.params.config: c.case_id for c in campaign.cases}
    assert set(by_config) == {"default", "tuning/tuned.yaml"}
    tuned = campaign.samples_of(by_config["tuning/tuned.yaml"])
    # the overlay reached Suricata (its sections replace the generated ones) and only the tuned case
    assert all("'af-packet' redefined" in (s.path / "stdout.txt").read_text() for s in tuned)
    assert all("redefined" not in (s.path / "stdout.txt").read_text()
               for s in campaign.samples_of(by_config["default"]))
    assert all(s.status == "ok" for s in campaign.samples)
    assert campaign.doc.inputs.configs["tuning/tuned.yaml"].sha256
    html = write_report(out).read_text()
    section = html[html.index('id="ab"'):]
    assert "default → tuning/tuned.yaml" in section and "drop %" in section and "sensor CPU %" in section
