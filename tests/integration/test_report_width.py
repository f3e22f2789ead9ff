"""The report's results table fits a 1300-px window (issue 41 item 6), checked in real headless Chromium: a
campaign of three setups × two loads with CPU per packet (and its net of idle), every column of the table."""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from idsbench.report import write_report
from tests.fakecampaign import FakeCase, write_campaign

from .test_report_chromium import CHROMIUM, FLAGS, Cdp

pytestmark = pytest.mark.integration
WIDTH = 1300
PROBE = """JSON.stringify([...document.querySelectorAll('#case-results')].map(t => ({
  table: t.scrollWidth, box: t.parentElement.clientWidth, scrolls: t.parentElement.classList.contains('scroll'),
  heads: [...t.querySelectorAll('th')].map(h => h.textContent)})))"""


def test_the_results_table_fits_a_1300_px_window(tmp_path):
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium)")
    cpu = [0.2, 0.21, 0.19, 0.2, 0.2, 0.2]
    cases = [FakeCase(setup=s, replayers=r, samples=6, cpu_s=cpu, idle_cores=0.004,
                      labels=["emulated"] if s == "vm" else []) for s in ("baremetal", "container-vtap", "vm")
             for r in (1, 4)]
    report = write_report(write_campaign(tmp_path / "c", cases, name="width"))
    assert "scrolls sideways inside its box" in report.read_text()  # says what scrolls where it would
    with tempfile.TemporaryDirectory(prefix="idsbench-chromium-") as profile:
        cdp = Cdp([CHROMIUM, *FLAGS, f"--user-data-dir={profile}"])
        try:
            target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            cdp.call("Page.enable", session=session)
            cdp.call("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": 1000, "deviceScaleFactor": 1,
                                                            "mobile": False}, session)
            cdp.call("Page.navigate", {"url": report.resolve().as_uri()}, session)
            cdp.wait_event("Page.loadEventFired")
            value = cdp.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session)
        finally:
            cdp.close()
    (t,) = json.loads(value["result"]["value"])
    print(f"results table {t['table']} px in a {t['box']} px box at a {WIDTH} px window")
    assert "sensor µs/pkt" in t["heads"] and "sensor µs/pkt net of idle" in t["heads"]
    assert t["scrolls"] and t["table"] <= t["box"], t
