"""`suricata -T` through Suricata.config_test with the real binary: clear errors, real rulesets."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from idsbench.errors import InputError, SpecError
from idsbench.sensors.base import SensorOptions
from idsbench.sensors.suricata import Suricata
from tests.paths import ET_OPEN

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("suricata") is None, reason="suricata is not installed"),
]



def test_build_info_of_installed_binary() -> None:
    info = Suricata().build_info()
    assert str(info["version"]).startswith("7.")
    assert info["af_packet"] is True and "AF_PACKET" in info["features"]  # type: ignore[operator]
    assert Suricata().available() and not Suricata("no-such-suricata-binary").available()


def test_bundled_event_rules_load_cleanly(tmp_path: Path) -> None:
    sur = Suricata()
    rules = sur.resolve_rules(["builtin:events"])
    assert any(r.name == "decoder-events.rules" for r in rules)
    assert not any(r.name in ("dnp3-events.rules", "modbus-events.rules") for r in rules)
    sur.config_test(SensorOptions(rules=tuple(rules)), tmp_path)  # raises on any rule or config error


def test_rule_syntax_error_is_quoted_with_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rules"
    bad.write_text(
        'alert tcp any any -> any any (msg:"fine"; content:"a"; sid:1000001;)\n'
        'alert tcp any any -> any any (msg:"broken"; nosuchkeyword:"x"; sid:1000002;)\n'
    )
    with pytest.raises(InputError) as ei:
        Suricata().config_test(SensorOptions(rules=(bad,)), tmp_path / "work")
    msg = str(ei.value)
    assert str(bad) in msg and "at line 2" in msg
    assert "unknown rule keyword 'nosuchkeyword'" in msg


def test_missing_rule_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.rules"
    with pytest.raises(InputError, match="nope.rules"):
        Suricata().config_test(SensorOptions(rules=(missing,)), tmp_path / "work")
    with pytest.raises(InputError, match="nope.rules"):
        Suricata().resolve_rules([str(missing)])


def test_bad_override_is_a_spec_error(tmp_path: Path) -> None:
    rules = Suricata().resolve_rules(["builtin:events"])
    with pytest.raises(SpecError) as ei:
        Suricata().config_test(SensorOptions(rules=tuple(rules), overrides=(("detect.profile", "bogus"),)), tmp_path)
    assert "detect.profile=bogus" in str(ei.value) and "Valid options" in str(ei.value)


@pytest.mark.skipif(not ET_OPEN.exists(), reason=f"ET Open ruleset {ET_OPEN} is absent")
def test_et_open_ruleset_loads(tmp_path: Path) -> None:
    Suricata().config_test(SensorOptions(rules=(ET_OPEN,)), tmp_path, timeout_s=300)
    log = (tmp_path / "suricata.log").read_text()
    assert "rules successfully loaded, 0 rules failed" in log
