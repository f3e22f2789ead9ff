"""Older names read as today's (idsbench.legacy, issue 40): the engine "capture" is "nodetect" and
`sensor.capture_method` is the capture axis — in a spec (with a note for the user), in a stored campaign
(campaign.json, summary.json), in the case keys a trend joins on — and a campaign whose cases were named
otherwise is not resumed into a second set of directories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from idsbench import legacy
from idsbench.analysis import case_table
from idsbench.errors import SpecError
from idsbench.plan import plan
from idsbench.spec import load_spec, spec_from_dict
from idsbench.store.casekey import case_key
from idsbench.store.reader import load_campaign
from tests.fakecampaign import FakeCase, write_campaign


def _sensor(**sensor: object) -> dict[str, object]:
    return {"name": "x", "samples": 1, "sensor": sensor}


# --- a spec --------------------------------------------------------------------------------------------------
def test_the_engine_capture_is_nodetect_with_its_settings_table():
    old = spec_from_dict(_sensor(engine=["suricata", "capture"], set={"capture": {"threads": 1}, "a": 2}))
    new = spec_from_dict(_sensor(engine=["suricata", "nodetect"], set={"nodetect": {"threads": 1}, "a": 2}))
    assert old.sensor.engine == ["suricata", "nodetect"] and old.model_dump() == new.model_dump()
    assert old.sensor.overrides("nodetect") == {"threads": "1", "a": "2"}
    assert [c.case_id for c in plan(old)] == [c.case_id for c in plan(new)]
    assert spec_from_dict(_sensor(engine="capture")).sensor.engine == ["nodetect"]  # one name, not a list


@pytest.mark.parametrize("key", ["capture_method", "method"])
def test_capture_method_becomes_the_capture_axis(key: str):
    libpcap = spec_from_dict(_sensor(engine=["capture"], **{key: "libpcap"}))
    assert libpcap.sensor.capture == ["libpcap"] and "capture_method" not in libpcap.model_dump()["sensor"]
    (case,) = plan(libpcap)
    assert case.engine == "nodetect" and case.capture == "libpcap"
    # the default reader carries nothing over: the spec reads as one that never named it
    default = spec_from_dict(_sensor(engine=["suricata", "snort", "capture"], **{key: "afpacket"}))
    assert default.sensor.capture == [None]
    assert default.model_dump() == spec_from_dict(_sensor(engine=["suricata", "snort", "nodetect"])).model_dump()
    same = spec_from_dict(_sensor(engine=["nodetect"], capture="libpcap", **{key: "libpcap"}))
    assert same.sensor.capture == ["libpcap"]


@pytest.mark.parametrize("sensor, match", [
    ({"engine": ["nodetect"], "capture": "afpacket", "capture_method": "libpcap"}, "contradicts capture"),
    ({"engine": ["nodetect"], "capture_method": "pfring"}, "'pfring' is not a reader of the nodetect engine"),
    ({"engine": ["suricata", "capture"], "capture_method": "libpcap"}, "suricata have no 'libpcap' capture"),
    ({"engine": ["nodetect"], "capture_method": "libpcap", "method": "libpcap"}, "the same key"),
])
def test_a_capture_method_that_cannot_become_the_axis_is_refused(sensor: dict[str, object], match: str):
    with pytest.raises(SpecError, match=match) as err:
        spec_from_dict(_sensor(**sensor))
    assert err.value.fix


def test_load_spec_notes_what_it_renamed(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "old.toml"
    path.write_text('name = "x"\n[sensor]\nengine = ["capture"]\ncapture_method = "libpcap"\n'
                    '[sensor.set.capture]\nthreads = 1\n')
    spec = load_spec(path)
    assert spec.sensor.engine == ["nodetect"] and spec.sensor.capture == ["libpcap"]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith(f"idsbench: note: {path}: ") for line in err)
    assert "'capture' is now 'nodetect'" in err[0] and "[sensor.set.nodetect]" in err[1]
    assert "sensor.capture = 'libpcap'" in err[2]
    new = tmp_path / "new.toml"
    new.write_text('name = "x"\n[sensor]\nengine = ["nodetect"]\ncapture = "libpcap"\n')
    load_spec(new)
    assert capsys.readouterr().err == ""  # today's names: nothing to say


# --- a stored campaign ---------------------------------------------------------------------------------------
def _renamed(value: object, name: str) -> object:
    """A stored JSON document with the engine "suricata" named `name` wherever it names the engine."""
    if isinstance(value, dict):
        return {(name if k == "suricata" else k): (name if k == "engine" and v in ("suricata", ["suricata"])
                                                   else _renamed(v, name)) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, name) for v in value]
    return value


def _campaign(tmp_path: Path, name: str, engine: str) -> Path:
    root = write_campaign(tmp_path / name, [FakeCase(), FakeCase(replayers=2)], name="same")
    for path in [root / "campaign.json", *root.glob("cases/*/*/summary.json")]:
        path.write_text(json.dumps(_renamed(json.loads(path.read_text()), engine)))
    return root


def test_an_old_campaign_reads_with_todays_engine_name_and_joins_a_new_one(tmp_path: Path):
    old_root, new_root = _campaign(tmp_path, "old", "capture"), _campaign(tmp_path, "new", "nodetect")
    assert '"capture"' in (old_root / "campaign.json").read_text()  # written as an older idsbench did
    old, new = load_campaign(old_root), load_campaign(new_root)
    assert old.doc.spec.sensor.engine == ["nodetect"] and set(old.doc.environment.engines) == {"nodetect"}
    assert [c.engine for c in old.doc.cases] == ["nodetect", "nodetect"]
    assert {s.summary.case.engine for s in old.samples} == {"nodetect"}
    assert {s.summary.sensor.engine for s in old.samples} == {"nodetect"}
    rows = case_table(old)
    assert {r.params.engine for r in rows} == {"nodetect"} and len(rows) == 2
    keys = [case_key(c.doc, r.params, None, "one") for c in (old, new) for r in case_table(c)]
    assert keys[0] == keys[2] and keys[1] == keys[3] and keys[0].engine == "nodetect"  # a trend joins them


def test_legacy_maps_engine_keyed_tables_and_leaves_todays_documents_alone():
    doc = {"schema": 3, "environment": {"engines": {"capture": {"version": "v"}}},
           "inputs": {"rule_load": {"capture": {}, "capture et": {}, "suricata": {}},
                      "rules_on_hosts": {"h1": {"capture": {}}}},
           "cases": [{"case_id": "c", "engine": "capture"}]}
    out = legacy.campaign_doc(doc)
    assert out["environment"] == {"engines": {"nodetect": {"version": "v"}}}
    assert out["inputs"] == {"rule_load": {"nodetect": {}, "nodetect et": {}, "suricata": {}},
                             "rules_on_hosts": {"h1": {"nodetect": {}}}}
    assert out["cases"] == [{"case_id": "c", "engine": "nodetect"}]
    today = legacy.campaign_doc(out)
    assert today is out  # nothing old: the document itself
    assert legacy.summary_doc({"case": {"engine": "capture"}, "sensor": {"engine": "capture", "version": "x"},
                               "status": "ok"}) == {"case": {"engine": "nodetect"},
                                                    "sensor": {"engine": "nodetect", "version": "x"}, "status": "ok"}


def test_a_campaign_whose_cases_this_version_names_otherwise_is_not_resumed(tmp_path: Path):
    from idsbench.run.preflight import check_resume
    from idsbench.store.layout import CampaignDir

    root = write_campaign(tmp_path / "c", [FakeCase()])
    doc = json.loads((root / "campaign.json").read_text())
    spec_doc = load_campaign(root).doc.spec.model_dump(mode="json")
    planned = [c["case_id"] for c in doc["cases"]]
    check_resume(CampaignDir(root), root, spec_doc, True, planned)  # the same ids: resumed
    with pytest.raises(SpecError, match="names otherwise") as err:
        check_resume(CampaignDir(root), root, spec_doc, True, [f"{planned[0]}-renamed"])
    assert "version that started it" in (err.value.fix or "")
