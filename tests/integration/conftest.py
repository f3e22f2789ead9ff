"""Shared fixtures for integration tests: root, real programs, per-test state and cache dirs."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from idsbench.analysis.sample import SampleFigures, sample_figures
from idsbench.proc import Supervisor
from idsbench.settings import strict
from idsbench.store.reader import load_campaign
from idsbench.teardown import TeardownStack
from tests.integration.warm import shared_noise_probe
from tests.paths import PCAPS, RULES, SHARED  # noqa: F401 (re-exported for the tests)

# Namespaces, containers and cgroups of this test session start with this (several checkouts may
# run their suites at once: each sets its own IDSBENCH_TEST_PREFIX).
TEST_PREFIX = os.environ.get("IDSBENCH_TEST_PREFIX", "ibc")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


def unavailable(reason: str) -> None:
    """A test that cannot run here: it fails under strict mode (CI), else it is skipped."""
    if strict():
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def one_noise_probe_per_session() -> Iterator[None]:
    """Every campaign's preflight busy-loops the sensor's CPUs for 6-12 s to judge the host's noise
    (probe/noise.py); in one test session it is measured once per set of CPUs and trial scale and reused
    (tests/integration/warm.py). test_host_noise_probe checks the real probe; no test reads the labels the
    measurement gives, and each campaign still records the measurement in its probe.json."""
    with shared_noise_probe():
        yield


@pytest.fixture(scope="session")
def need_root():
    if os.geteuid() != 0:
        pytest.skip("integration tests need root (namespaces, veth, cgroups)")
    for prog in ("suricata", "tcpreplay", "ip", "ethtool"):
        if shutil.which(prog) is None:
            pytest.skip(f"{prog} is not installed (run `make setup`)")


@pytest.fixture
def pcaps():
    if not PCAPS.is_dir():
        pytest.skip(f"shared test captures not found at {PCAPS} (../shared/data/pcaps beside the checkout)")
    return PCAPS


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One cache for the session (builtin traces are synthesized once)."""
    return tmp_path_factory.mktemp("cache")


def prefixed_namespaces() -> set[str]:
    """Network namespaces named with this session's test prefix."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in namespaces.splitlines() if line.startswith(TEST_PREFIX)}


@pytest.fixture
def state_dir(tmp_path):
    """A state dir of the test's own; asserts the test left no resources behind (namespaces a killed
    earlier run left are not this test's: they are compared, not counted)."""
    d = tmp_path / "state"
    d.mkdir()
    before = prefixed_namespaces()
    yield d
    leftovers = list(d.glob("*.json"))
    ours = sorted(prefixed_namespaces() - before)
    assert not leftovers and not ours, f"test left resources: {leftovers} {ours}"


# A capture ring that rides out the pauses of a shared 2-core host (Suricata's default, ~2k frames per
# thread, overflows in 70 ms at 30k pps; this shared VM pauses a sensor or a sender for up to ~0.4 s, and an
# absolute-schedule sender then sends the late packets at once): a test then measures the sensor's
# sustained capacity, not the host's scheduling noise.
PAUSE_RIDING_RING = {"af-packet.0.ring-size": 16384}


def write_costly_rules(rules: Path) -> Path:
    """400 content-less PCRE rules: every TCP packet costs the sensor tens of µs, so a modest,
    steady rate (easy for the sender) needs a known share of a core (~38% at 30k pps here)."""
    rules.write_text("".join(
        f'alert tcp any any -> any any (msg:"idsbench cost {i}"; pcre:"/[a-z]{{3}}[0-9]{{2}}q{i}x/i"; '
        f"sid:{1999000 + i}; rev:1;)\n" for i in range(400)))
    return rules


@pytest.fixture
def costly_rules(tmp_path) -> Path:
    """write_costly_rules' file, for one test."""
    return write_costly_rules(tmp_path / "costly.rules")


@pytest.fixture(scope="module")
def costly_rules_module(tmp_path_factory) -> Path:
    """write_costly_rules' file, for a module's campaign."""
    return write_costly_rules(tmp_path_factory.mktemp("rules") / "costly.rules")


def sample_figures_of(campaign_dir: Path) -> dict[tuple[str, int], SampleFigures]:
    """What analysis derives per sample (resources, time to stable…) from the stored raw series."""
    from idsbench.analysis.sample import SampleFigures  # noqa: F401

    campaign = load_campaign(campaign_dir)
    return {(s.case_id, s.index): sample_figures(s, campaign.doc.settle_s) for s in campaign.samples}


@pytest.fixture
def sup(state_dir: Path) -> Iterator[Supervisor]:
    """A supervisor whose teardown must succeed when the test ends."""
    stack = TeardownStack(state_dir)
    try:
        yield Supervisor(stack)
    finally:
        failures = stack.close()
        assert not failures, failures
