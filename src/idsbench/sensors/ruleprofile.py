"""Per-rule cost: the profiler's figures per sample, and what each sid is (docs/profiling.md, "Rule profiling").

Two profilers feed one series file, `rule_profile.csv` (store/rule_profile.py), written by the sample's
collection (`collect_sample`):
- Suricata (`suricata@8.0.6+profiling`): `rule_perf.log` (JSON, written when the engine stops) in the
  sample directory; time in CPU ticks (rdtsc), with a per-rule maximum.
- Snort 3 (`snort+profiling`): the "rule profile" table its profiler prints to stdout at exit (the sample's
  `stdout.txt`); time in microseconds, no per-rule maximum (ticks_max stays empty).
The store's reader reads the series file back; `catalog` names each sid from the rule files (message,
file, category, keyword hints) for the report and `idsbench results --rules`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from idsbench.store.layout import CONSOLE_FILE, RULE_PERF_FILE, SNORT_CONFIG_FILE
from idsbench.store.rule_profile import RuleCost, match_count, write_profile

# keywords that make a rule expensive or stateful, named in the report beside its cost
HINT_KEYWORDS = ("pcre", "flowbits", "byte_jump", "byte_test", "byte_extract", "isdataat", "dsize", "xbits",
                 "threshold", "base64_decode", "lua", "dataset", "fast_pattern")
_SID = re.compile(r"[(;]\s*sid\s*:\s*(\d+)\s*;")
_GID = re.compile(r"[(;]\s*gid\s*:\s*(\d+)\s*;")
_REV = re.compile(r"[(;]\s*rev\s*:\s*(\d+)\s*;")
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
                     checks=int(r.get("checks", 0)), matches=match_count(r.get("matches", 0)),
                     ticks_total=int(r.get("ticks_total", 0)), ticks_avg=float(r.get("ticks_avg", 0)),
                     ticks_max=int(r.get("ticks_max", 0)), unit="ticks")
            for r in chosen["rules"]]


# --- Snort 3's table (src/profiler/table_view.cc, 3.12) --------------------------------------------------
# Each column is an ostream `setw(width)`: right-aligned and padded to `width`, but a wider value is printed
# whole with no separator, so a 6-digit or longer sid runs into the gid ("     12012345" = gid 1, sid
# 2012345). Rows are therefore cut by the widths, not by whitespace. The time columns are integral µs
# (clock_usecs); rule_time (%) is a double with 5 decimals. Snort sets no locale (no digit grouping);
# grouping commas are accepted anyway.
_SNORT_FIELDS: tuple[tuple[str, int, bool], ...] = (  # (header name, width, left-aligned)
    ("#", 5, True), ("gid", 6, False), ("sid", 6, False), ("rev", 4, False), ("checks", 10, False),
    ("matches", 8, False), ("alerts", 7, False), ("time (us)", 10, False), ("avg/check", 10, False),
    ("avg/match", 10, False), ("avg/non-match", 14, False), ("timeouts", 9, False), ("suspends", 9, False),
    ("rule_time (%)", 14, False))
_SNORT_HEADER = " ".join(name for name, _, _ in _SNORT_FIELDS)
_SNORT_TITLE_TEXT = "rule profile ("
_SNORT_TITLE = re.compile(r"^rule profile \((?:worst (\d+)|all)(?:, sorted by ([a-z_]+))?\)\s*$")
_INT = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)")
_FLOAT = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_SNORT_LAST = len(_SNORT_FIELDS) - 1


def _field_ends(line: str, pos: int, width: int, left: bool) -> list[int]:
    """Where a field that starts at `pos` may end: exactly `width` when padded, else at or past it."""
    if pos >= len(line):
        return []
    run_end = pos
    while run_end < len(line) and line[run_end] != " ":
        run_end += 1
    if left:  # value first, then padding
        if run_end - pos < width:
            return [pos + width] if line[run_end:pos + width].strip() == "" and pos + width <= len(line) else []
        return list(range(pos + width, run_end + 1))
    if line[pos] == " ":  # padded: spaces then the value, ending at pos + width
        end = pos + width
        cell = line[pos:end]
        return [end] if end <= len(line) and cell.strip() and " " not in cell.strip() and cell[-1] != " " else []
    return list(range(pos + width, run_end + 1))


def _row_splits(line: str, pos: int = 0, index: int = 0) -> Iterator[list[str]]:
    """Every way to cut `line` into the table's cells (values as printed); none when it is not a row."""
    _, width, left = _SNORT_FIELDS[index]
    value = _FLOAT if index == _SNORT_LAST else _INT
    for end in _field_ends(line, pos, width, left):
        cell = line[pos:end].strip()
        if not value.fullmatch(cell):
            continue
        if index == _SNORT_LAST:
            if end == len(line):
                yield [cell]
            continue
        for rest in _row_splits(line, end, index + 1):
            yield [cell, *rest]


def _number(cell: str) -> int:
    return int(cell.replace(",", ""))


def _split_row(line: str, known: Collection[tuple[int, int, int]]) -> list[str] | None:
    """The row's cells; where a wide sid and a wide rev run together ("25228075500": sid 2522807 rev
    5500, or sid 252280 rev 75500) the cut whose (gid, sid, rev) is a loaded rule, else the first."""
    first = None
    for n, cells in enumerate(_row_splits(line)):
        if n == 0:
            first = cells
        if (_number(cells[1]), _number(cells[2]), _number(cells[3])) in known:
            return cells
        if n >= 15 or not known:
            break
    return first


def parse_snort_rule_profile(text: str, known: Collection[tuple[int, int, int]] = ()) -> list[RuleCost] | None:
    """Snort 3's "rule profile" table (the last one in `text`, its console output) -> one RuleCost per row
    (time in µs; the average recomputed from the total, as Snort prints it truncated to whole µs; no
    maximum). `known`: the (gid, sid, rev) of the rules loaded, which settles a row whose sid and rev ran
    together. None when `text` holds no such table (Snort prints none when no rule was evaluated); a title
    without Snort 3.12's header, or a row that breaks off, is a ValueError naming the line."""
    lines = text.splitlines()
    titles = [i for i, line in enumerate(lines) if _SNORT_TITLE.match(line.strip())]
    if not titles:
        return None
    start = titles[-1]
    header = lines[start + 1] if start + 1 < len(lines) else ""
    rule = lines[start + 2] if start + 2 < len(lines) else ""
    if " ".join(header.split()) != _SNORT_HEADER or set(rule.replace(" ", "")) != {"="}:
        raise ValueError(f"line {start + 2}: the rule profile's header is not Snort 3's "
                         f"({_SNORT_HEADER!r} over a '=' rule), got {header.strip()[:120]!r}")
    out: list[RuleCost] = []
    for number, line in enumerate(lines[start + 3:], start + 4):
        line = line.rstrip()
        cells = _split_row(line, known)
        if cells is None:
            if re.match(rf"{len(out) + 1}\s", line):  # the next row's rank, but not a row: cut off or damaged
                raise ValueError(f"line {number}: rule profile row {len(out) + 1} does not read as Snort's "
                                 f"columns: {line[:120]!r}")
            break  # the table ended (another table or Snort's exit lines follow)
        rank, gid, sid, rev, checks, matches, _alerts, total = (_number(c) for c in cells[:8])
        if rank != len(out) + 1:
            raise ValueError(f"line {number}: rule profile row ranked {rank} where {len(out) + 1} was due")
        out.append(RuleCost(gid=gid, sid=sid, rev=rev, checks=checks, matches=matches, ticks_total=total,
                            ticks_avg=round(total / checks, 4) if checks else 0.0, ticks_max=None, unit="us"))
    return out


_INCLUDE = re.compile(r"^\s*include\s+(\S.*?)\s*$")


def snort_rule_files(config: Path) -> list[Path]:
    """The rule files a run's snort.lua includes in its `ips.rules` block (sensors/snort/config.py)."""
    try:
        text = config.read_text(errors="replace")
    except OSError:
        return []
    block = re.search(r"ips\.rules\s*=\s*\[\[\n(.*?)\]\]", text, re.S)
    return [Path(m.group(1)) for line in (block.group(1).splitlines() if block else [])
            if (m := _INCLUDE.match(line))]


def _active_lines(files: Iterable[Path]) -> Iterator[tuple[Path, str]]:
    """(file, stripped line) of every line of the readable files that is not blank or commented out."""
    for path in files:
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                yield Path(path), line


def loaded_rules(files: Iterable[Path]) -> set[tuple[int, int, int]]:
    """(gid, sid, rev) of the active rules in `files` (gid 1 unless the rule names one)."""
    out: set[tuple[int, int, int]] = set()
    for _path, line in _active_lines(files):
        sid_m = _SID.search(line)
        if sid_m:
            gid_m, rev_m = _GID.search(line), _REV.search(line)
            out.add((int(gid_m.group(1)) if gid_m else 1, int(sid_m.group(1)), int(rev_m.group(1)) if rev_m else 0))
    return out


def write_without_category(source: Path, category: str, out: Path) -> int:
    """`source` without the rules of one category as `catalog` names them (e.g. "gpl-netbios"): the
    "without" side of a ruleset axis that measures what the category costs. Returns how many rules went."""
    gone = {sid for sid, info in catalog([source]).items() if info.category == category}
    kept = [line for line in source.read_text(errors="replace").splitlines()
            if not ((m := _SID.search(line)) and int(m.group(1)) in gone)]
    out.write_text("\n".join(kept) + "\n")
    return len(gone)


def profile_of(sample_dir: Path) -> tuple[str, list[RuleCost]] | None:
    """(the file it came from, the rules) of the profile a run left in `sample_dir`; None when it left
    none. ValueError (naming the file) when the engine's output is there but does not read as a profile."""
    suricata = sample_dir / RULE_PERF_FILE
    if suricata.is_file():
        try:
            return RULE_PERF_FILE, parse_suricata_rule_perf(suricata.read_text(errors="replace"))
        except (ValueError, KeyError) as exc:
            raise ValueError(f"{RULE_PERF_FILE}: {exc}") from exc
    console = sample_dir / CONSOLE_FILE  # Snort prints its rule profile there
    if console.is_file():
        try:
            text = console.read_text(errors="replace")
            known = loaded_rules(snort_rule_files(sample_dir / SNORT_CONFIG_FILE)) if _SNORT_TITLE_TEXT in text else set()
            rules = parse_snort_rule_profile(text, known)
        except ValueError as exc:
            raise ValueError(f"{CONSOLE_FILE}: {exc}") from exc
        if rules is not None:
            return CONSOLE_FILE, rules
    return None


def collect(sample_dir: Path) -> Path | None:
    """A profiling run's profile (Suricata's rule_perf.log or Snort's table) -> rule_profile.csv beside it;
    None when the run did not profile. ValueError when the engine's output holds no readable profile."""
    found = profile_of(sample_dir)
    if found is None:
        return None
    return write_profile(sample_dir, found[1])


def profiling_requested(engine: str) -> bool:
    """Does the spec's engine name ask for rule profiling (`…+profiling`)?"""
    return "profiling" in engine.split("+")[1:]


def collect_sample(sample_dir: Path, engine: str) -> list[str]:
    """The sample's collection step: `collect`, and a warning when a profiling engine left no profile or
    one that does not read (the sample keeps its other results)."""
    try:
        if collect(sample_dir) is None and profiling_requested(engine):
            return [f"{engine} left no rule profile ({RULE_PERF_FILE}, or Snort's rule profile table in "
                    f"{CONSOLE_FILE}; Snort prints none when no rule was evaluated): this sample has none"]
    except ValueError as exc:
        return [f"the rule profile does not read ({exc}): this sample has none"]
    return []


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
    for path, line in _active_lines(rule_files):
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
