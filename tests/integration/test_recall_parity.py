"""Recall compares like with like (issue 41 item 1), with the real Suricata: tcpreplay's test capture holds
packets with bad checksums, and `suricata -r` with its default `pcap-file.checksum-checks: auto` fires
Suricata's checksum rules (sids 2200073-2200077) on them while the live af-packet sample (idsbench's
`checksum-checks: no`) cannot. The truth now runs with the live checksum mode: recall 1.0 on a lossless sample
with idsbench's config, with `checksum-checks: yes` (both validate: the truth and the sample both hold the
checksum alerts) and with `kernel`, which `-r` cannot mirror (the checksum sids it fired named and left out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from idsbench.analysis import case_table
from idsbench.run.campaign import run_campaign
from idsbench.spec import spec_from_dict
from idsbench.store.reader import load_campaign

from .conftest import TEST_PREFIX

pytestmark = pytest.mark.usefixtures("need_root")
CHECKSUM_SIDS = set(range(2200073, 2200078))


def _row(tmp_path: Path, state_dir: Path, cache_dir: Path, pcaps: Path, name: str,
         sets: dict[str, str]) -> tuple[dict[str, object], dict[int, int], dict[int, int]]:
    """(the results row, the truth's alerts by sid, the sample's) of one lossless sample."""
    doc = {"name": name, "samples": 1, "timing": {"settle_s": 0.5},
           "traffic": {"traces": [str(pcaps / "tcpreplay_test.pcap")], "replayers": [1], "rate": {"pps": 400}},
           "sensor": {"rules": ["builtin:events"], "set": sets}, "setup": {"cpus": 1.0}}
    out = tmp_path / name
    result = run_campaign(spec_from_dict(doc), out, state_dir=state_dir, cache_dir=cache_dir, name_prefix=TEST_PREFIX)
    assert result.failed == [], result.failed
    campaign = load_campaign(out)
    (row,) = [r.to_row() for r in case_table(campaign)]
    (sample,) = campaign.samples
    truth = campaign.truths[sample.case_id]
    assert row["status"] == "ok" and row["dropped_pkts"] == 0 and row["decoded_pkts"] == row["sent_pkts"] == 179, row
    return row, dict(truth.alerts_by_sid), dict(sample.summary.sensor.alerts_by_sid)


def test_recall_is_one_on_a_lossless_sample_of_a_capture_with_bad_checksums(tmp_path, state_dir, cache_dir, pcaps):
    # idsbench's live config (checksum-checks: no): the truth no longer holds checksum alerts it cannot see
    row, truth, live = _row(tmp_path, state_dir, cache_dir, pcaps, "nocheck", {})
    print("checksum-checks no:", truth, live, row["alert_recall"])
    assert truth and not CHECKSUM_SIDS & set(truth) and row["alert_recall"] == 1.0
    assert "alert_recall_excluded_sids" not in row

    # both validate: the truth holds the checksum alerts, and so does the sample
    row, truth, live = _row(tmp_path, state_dir, cache_dir, pcaps, "validate", {"af-packet.0.checksum-checks": "yes"})
    print("checksum-checks yes:", truth, live, row["alert_recall"])
    assert CHECKSUM_SIDS & set(truth) and CHECKSUM_SIDS & set(live)
    assert row["alert_recall"] == 1.0 and "alert_recall_excluded_sids" not in row

    # the kernel's marks cannot be mirrored by a file read: the checksum sids the truth fired are named
    row, truth, live = _row(tmp_path, state_dir, cache_dir, pcaps, "kernel", {"af-packet.0.checksum-checks": "kernel"})
    print("checksum-checks kernel:", truth, live, row["alert_recall"], row.get("alert_recall_excluded_sids"))
    excluded = row["alert_recall_excluded_sids"]
    assert isinstance(excluded, dict) and {int(s) for s in excluded} == CHECKSUM_SIDS & set(truth)
    assert all(why.startswith("checksum rule") for why in excluded.values())
    assert row["alert_recall"] == 1.0 and any("alert_recall leaves out" in w for w in row["warnings"])  # type: ignore[union-attr]
