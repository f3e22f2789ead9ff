"""Opens a generated report.html in real headless Chromium (DevTools protocol over a pipe): every figure
renders, no console errors, no request leaves file:/data:, and a full-page screenshot is saved."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any

import pytest

from idsbench.report import write_report
from tests.fakecampaign import standard_campaign

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe"]
PROBE = """JSON.stringify({
  imgs: [...document.querySelectorAll('img')].map(i => ({name: i.dataset.figure || i.alt,
        complete: i.complete, w: i.naturalWidth, h: i.naturalHeight,
        shown: i.getBoundingClientRect().width, src: i.getAttribute('src').slice(0, 40)})),
  svgs: [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width),
  urls: [...document.querySelectorAll('[src],[href]')].map(e => e.getAttribute('src') || e.getAttribute('href')),
  sheets: [...document.styleSheets].map(s => s.href),
  rows: document.querySelectorAll('#case-results tbody tr').length,
  height: document.documentElement.scrollHeight})"""


class Cdp:
    """Minimal Chrome DevTools Protocol client over --remote-debugging-pipe (fds 3 and 4)."""

    def __init__(self, argv: list[str]):
        self._to_r, self._to_w = os.pipe()
        self._from_r, self._from_w = os.pipe()
        fds = (self._to_r, self._from_w)

        def wire_fds() -> None:  # in the child: chrome reads commands on fd 3, writes replies to fd 4
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in fds]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.proc = subprocess.Popen(argv, pass_fds=(3, 4), preexec_fn=wire_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(self._to_r)
        os.close(self._from_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe: {self.proc.stderr.read().decode()[-2000:]}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            ev = self._read(deadline)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    if not os.path.exists(CHROMIUM):
        pytest.skip("chromium is not installed (apt-get install chromium)")
    root, cases = standard_campaign(tmp_path_factory.mktemp("chromium") / "campaign", samples=5)
    report = write_report(root)
    with tempfile.TemporaryDirectory(prefix="idsbench-chromium-") as profile:
        cdp = Cdp([CHROMIUM, *FLAGS, f"--user-data-dir={profile}"])
        try:
            target = cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network"):
                cdp.call(f"{domain}.enable", session=session)
            cdp.call("Emulation.setDeviceMetricsOverride", {"width": 1500, "height": 1000,
                                                            "deviceScaleFactor": 1, "mobile": False}, session)
            cdp.call("Page.navigate", {"url": report.resolve().as_uri()}, session)
            cdp.wait_event("Page.loadEventFired")
            probe = cdp.call("Runtime.evaluate", {"expression": PROBE, "returnByValue": True}, session)
            dom = json.loads(probe["result"]["value"])
            shot = cdp.call("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": 1500, "height": dom["height"], "scale": 1}}, session, 120)
        finally:
            cdp.close()
    png = root / "report-screenshot.png"
    png.write_bytes(base64.b64decode(shot["data"]))
    return {"root": root, "cases": cases, "dom": dom, "events": cdp.events, "png": png}


def test_every_figure_rendered(rendered):
    imgs = rendered["dom"]["imgs"]
    assert [i["name"] for i in imgs] == [
        "sensor_cpu_time", "sensor_mem_time", "host_cpu_time", "packets_cumulative",
        "host_cpu_time_without_slowest", "drop_ratio_load", "sensor_cpu_load", "overhead_vs_baseline",
        "sent_rate_time", "sender_fidelity", "loss_waterfall", "trace_throughput"]
    for img in imgs:
        assert img["src"].startswith("data:image/svg+xml;base64,"), img
        assert img["complete"] and img["w"] > 300 and img["h"] > 200 and img["shown"] > 300, img
    assert rendered["dom"]["rows"] == len(rendered["cases"])


def test_no_console_errors_and_nothing_external(rendered):
    errors = [e for e in rendered["events"]
              if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    requests = [e["params"]["request"]["url"] for e in rendered["events"]
                if e.get("method") == "Network.requestWillBeSent"]
    assert requests and all(u.startswith(("file://", "data:")) for u in requests), requests
    dom = rendered["dom"]
    assert all(s is None for s in dom["sheets"])  # inline CSS only
    assert not [u for u in dom["urls"] if u.startswith(("http:", "https:", "//"))]


def test_screenshot_saved(rendered):
    data = rendered["png"].read_bytes()
    assert data.startswith(b"\x89PNG")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width == 1500 and height == rendered["dom"]["height"] > 5000
    assert len(data) > 200_000  # figures, not a blank page
