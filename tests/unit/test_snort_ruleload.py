"""Rounds of `snort -T` until a rule file loads, with a fake config test that behaves as Snort does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from idsbench.errors import InputError
from idsbench.sensors.snort.ruleload import make_loadable

RULES = [
    'alert udp any any -> any 514 (msg:"syslog"; sid:1000002; rev:3;)',
    'alert tcp any any -> any 587 (msg:"mail"; content:"MAIL FROM"; nocase; sid:1000001; rev:1;)',
    'alert dns any any -> any any (msg:"q"; dns.query; content:"x"; sid:3;)',
    'alert tcp any any -> any any (msg:"bt"; byte_test:0,<,200,0,string,dec; sid:4;)',
]


def snort_like(path: Path) -> str:
    """Rejects active lines with a 0-byte byte_test, as Snort 3.12 does; validates otherwise."""
    errors = [f"ERROR: {path}:{n} invalid argument byte_test: = 0"
              for n, line in enumerate(path.read_text().splitlines(), start=1)
              if not line.startswith("#") and re.search(r"byte_test:0,", line)]
    if errors:
        return "\n".join([*errors, f"FATAL: see prior {len(errors)} errors (0 warnings)"]) + "\n"
    return "Snort successfully validated the configuration (with 0 warnings).\n"


def test_convert_then_drop_what_snort_rejects(tmp_path: Path) -> None:
    src = tmp_path / "suricata.rules"
    src.write_text("# header\n" + "\n".join(RULES) + "\n")
    load = make_loadable(src, tmp_path / "snort.rules", snort_like)
    assert (load.rules, load.converted, load.loaded, load.rounds) == (4, 3, 2, 2)
    assert load.share_loaded == 0.5
    assert load.not_converted == {"dns.query has no Snort 3 equivalent": 1}
    assert load.rejected == {"invalid argument byte_test: = 0": 1}
    lines = load.path.read_text().splitlines()
    assert len(lines) == 5 and lines[4].startswith("# idsbench: rejected by snort -T: alert tcp")
    assert 'content:"MAIL FROM", nocase;' in lines[2]


def test_as_is_and_failures(tmp_path: Path) -> None:
    src = tmp_path / "snort.rules"
    src.write_text(RULES[0] + "\n")
    load = make_loadable(src, tmp_path / "out.rules", snort_like, convert=False)
    assert (load.rules, load.converted, load.loaded, load.rounds) == (1, 1, 1, 1)
    with pytest.raises(InputError, match="without naming a rule: FATAL: bad lua"):
        make_loadable(src, tmp_path / "o2.rules", lambda _: "FATAL: bad lua\n", convert=False)
    with pytest.raises(InputError, match="Cannot read the rule file"):
        make_loadable(tmp_path / "none.rules", tmp_path / "o3.rules", snort_like)
