"""Per-rule cost: the profiler's figures per sample, and what each sid is (docs/architecture.md, "Rule profiling").

A profiling run (`suricata@8.0.6+profiling`) leaves Suricata's `rule_perf.log` (JSON, written when the
engine stops) in the sample directory; the sample's collection turns it into `rule_profile.csv`, one row
per rule the engine checked: gid, sid, rev, checks, matches, ticks_total, ticks_avg, ticks_max. The store's
reader reads that series file back; `catalog` names each sid from the rule files (message, file,
category, keyword hints) for the report and `idsbench results --rules`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from idsbench.store.rule_profile import RULE_PROFILE_FILE, RuleCost, write_profile

SURICATA_RULE_PERF = "rule_perf.log"
# keywords that make a rule expensive or stateful, named in the report beside its cost
HINT_KEYWORDS = ("pcre", "flowbits", "byte_jump", "byte_test", "byte_extract", "isdataat", "dsize", "xbits",
                 "threshold", "base64_decode", "lua", "dataset", "fast_pattern")
_SID = re.compile(r"[(;]\s*sid\s*:\s*(\d+)\s*;")
_GID = re.compile(r"[(;]\s*gid\s*:\s*(\d+)\s*;")
_MSG = re.compile(r'msg\s*:\s*"((?:[^"\\]|\\.)*)"')
_ET_CATEGORY = re.compile(r"^(ET|ETPRO|GPL)\s+([A-Z][A-Z0-9_]*)\b")


def parse_suricata_rule_perf(text: str) -> list[RuleCost]:
    """Suricata's rule_perf.log (JSON lines, one per sort order) -> the rules of the "ticks" line (or the
    first line when none is sorted by ticks); ValueError when no line holds rules."""
    blocks = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        doc = json.loads(line)
        if isinstance(doc, dict) and isinstance(doc.get("rules"), list):
            blocks.append(doc)
    if not blocks:
        raise ValueError("no rule profile (a JSON line with 'rules') in the file")
    chosen = next((b for b in blocks if b.get("sort") == "ticks"), blocks[0])
    return [RuleCost(gid=int(r.get("gid", 1)), sid=int(r["signature_id"]), rev=int(r.get("rev", 0)),
                     checks=int(r.get("checks", 0)), matches=int(r.get("matches", 0)),
                     ticks_total=int(r.get("ticks_total", 0)), ticks_avg=float(r.get("ticks_avg", 0)),
                     ticks_max=int(r.get("ticks_max", 0)))
            for r in chosen["rules"]]


def collect(sample_dir: Path) -> Path | None:
    """A profiling run's rule_perf.log -> rule_profile.csv beside it; None when the run did not profile.
    ValueError when the engine's file is there but holds no profile."""
    source = sample_dir / SURICATA_RULE_PERF
    if not source.is_file():
        return None
    out = sample_dir / RULE_PROFILE_FILE
    write_profile(out, parse_suricata_rule_perf(source.read_text(errors="replace")))
    return out


@dataclass(frozen=True)
class RuleInfo:
    """What a sid is: its message, the file it came from, its category, its costly keywords."""

    sid: int
    msg: str
    file: str
    category: str
    hints: tuple[str, ...]


def category_of(msg: str, file: str) -> str:
    """ET's category: `ET POLICY ...` -> `emerging-policy` (the file it ships in upstream); else the file's stem."""
    m = _ET_CATEGORY.match(msg)
    if m:
        prefix = "emerging" if m.group(1) in ("ET", "ETPRO") else "gpl"
        return f"{prefix}-{m.group(2).lower()}"
    return Path(file).stem


def catalog(rule_files: Iterable[Path]) -> dict[int, RuleInfo]:
    """sid -> RuleInfo for the active (not commented-out) gid-1 rules of the files."""
    out: dict[int, RuleInfo] = {}
    for path in rule_files:
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            sid_m = _SID.search(line)
            if not sid_m:
                continue
            gid_m = _GID.search(line)
            if gid_m and gid_m.group(1) != "1":
                continue
            msg_m = _MSG.search(line)
            msg = msg_m.group(1) if msg_m else ""
            body = line.partition("(")[2]
            hints = tuple(k for k in HINT_KEYWORDS if re.search(rf"[(;]\s*{k}\s*[:;]", "(" + body))
            sid = int(sid_m.group(1))
            out.setdefault(sid, RuleInfo(sid, msg, Path(path).name, category_of(msg, str(path)), hints))
    return out
