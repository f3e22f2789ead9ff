"""Bad inputs, fuzzed: the spec loader, the eve.json reader and the pcap/pcapng reader either give a
correct result or one clear error naming the input — never a traceback, a hang or unbounded memory.

Mutations: truncation, bit flips, absurd lengths (caplen/snaplen/block length), wrong magic, huge or
negative numbers, unicode in names. Real captures from ../shared/data/pcaps seed the pcap cases.
"""

from __future__ import annotations

import json
import random
import resource
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from idsbench import settings as idsbench_settings
from idsbench.errors import IdsbenchError, InputError
from idsbench.sensors.suricata.eve import scan_eve
from idsbench.spec import load_spec
from idsbench.traffic.pcap import read_info
from tests.paths import PCAPS

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _need_pcaps() -> list[Path]:
    found = sorted(PCAPS.glob("*.pcap")) if PCAPS.is_dir() else []
    if not found:
        reason = f"the shared captures are not at {PCAPS} (../shared/data/pcaps beside the checkout)"
        if idsbench_settings.strict():
            pytest.fail(reason)
        pytest.skip(reason)
    return found


# --- spec loader ----------------------------------------------------------------------------------

toml_scalars = st.one_of(st.integers(min_value=-2**70, max_value=2**70), st.floats(allow_nan=False),
                         st.text(max_size=30), st.booleans())
spec_keys = st.sampled_from(["name", "samples", "traffic", "sensor", "setup", "timing", "nmae", "ünïcode",
                             "replayers", "rate", "cpus", "memory", "kinds", "engine", "rules", "set"])
toml_values = st.recursive(toml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(spec_keys, inner, max_size=4)), max_leaves=12)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"


@FUZZ
@given(doc=st.dictionaries(spec_keys, toml_values, max_size=6))
def test_any_spec_document_loads_or_names_the_problem(tmp_path_factory, doc):
    path = tmp_path_factory.mktemp("spec") / "fuzz.toml"
    path.write_text("\n".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in doc.items()))
    try:
        load_spec(path)
    except IdsbenchError as exc:
        assert str(path) in str(exc) and "\n" not in exc.message.split(":")[0]


@FUZZ
@given(text=st.text(max_size=400))
def test_any_text_as_spec_is_a_one_line_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("spec") / "fuzz.toml"
    path.write_text(text)
    try:
        load_spec(path)
    except IdsbenchError as exc:
        assert str(path) in str(exc)


def test_spec_with_unicode_name_and_absurd_values_is_rejected_clearly(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('name = "bänk-ütf"\nsamples = -3\n[traffic]\nreplayers = [99999999999]\n')
    with pytest.raises(IdsbenchError) as exc:
        load_spec(path)
    assert "samples" in str(exc.value) and "replayers" in str(exc.value) and "name" in str(exc.value)


# --- eve.json reader ------------------------------------------------------------------------------

STATS = (b'{"timestamp":"2026-01-01T00:00:01.000000+0000","event_type":"stats","stats":'
         b'{"uptime":1,"capture":{"kernel_packets":10,"kernel_drops":0},"decoder":{"pkts":10}}}\n')
ALERT = b'{"timestamp":"2026-01-01T00:00:01.000000+0000","event_type":"alert","alert":{"signature_id":7}}\n'


@FUZZ
@given(data=st.data())
def test_mutated_eve_files_scan_without_exceptions(tmp_path_factory, data):
    base = bytearray((STATS + ALERT) * data.draw(st.integers(1, 20)))
    for _ in range(data.draw(st.integers(0, 12))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert", "nest"]))
        pos = data.draw(st.integers(0, max(0, len(base) - 1)))
        if op == "flip" and base:
            base[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "cut":
            del base[pos:]
        elif op == "insert":
            base[pos:pos] = data.draw(st.binary(max_size=40))
        else:
            base[pos:pos] = b'{"event_type":"stats","stats":' + b"[" * 5000 + b"\n"
    path = tmp_path_factory.mktemp("eve") / "eve.json"
    path.write_bytes(bytes(base))
    seen: list[dict[str, object]] = []
    scan = scan_eve(path, ("stats", "alert"), seen.append, chunk_size=4096)
    assert scan.lines >= 0 and scan.corrupt_lines >= 0 and all(isinstance(r, dict) for r in seen)
    assert scan.count("stats") + scan.count("alert") <= scan.lines + 1


def test_eve_with_a_huge_line_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr("idsbench.sensors.suricata.eve.MAX_LINE_BYTES", 1 << 20)
    path = tmp_path / "eve.json"
    with path.open("wb") as fh:
        fh.write(STATS)
        fh.write(b"{" + b"x" * (8 << 20))  # an 8 MiB "line" with no newline, then a good record
        fh.write(b"\n" + STATS)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scan = scan_eve(path, ("stats",), lambda r: None, chunk_size=1 << 16)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert scan.count("stats") == 2 and scan.corrupt_lines == 1 and grown_kib < 6 * 1024


# --- pcap / pcapng reader -------------------------------------------------------------------------

PCAP_HEADER = struct.Struct("<IHHiIII")
RECORD_HEADER = struct.Struct("<IIII")


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    choice = rng.randrange(6)
    if choice == 0:  # truncate anywhere
        del data[rng.randrange(len(data)):]
    elif choice == 1:  # bit flips
        for _ in range(rng.randint(1, 20)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif choice == 2:  # wrong magic
        data[0:4] = struct.pack("<I", rng.getrandbits(32))
    elif choice == 3:  # absurd snaplen
        data[16:20] = struct.pack("<I", rng.choice([0, 0xFFFFFFFF, 0x7FFFFFFF, 1]))
    elif choice == 4 and len(data) > 40:  # absurd caplen/origlen of the first record
        data[32:40] = struct.pack("<II", rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 2**24]), rng.getrandbits(32))
    else:  # negative / huge timestamps
        data[24:32] = struct.pack("<iI", -rng.getrandbits(31), 0xFFFFFFFF)
    return bytes(data)


@pytest.mark.parametrize("seed", range(60))
def test_mutated_captures_read_or_raise_input_error(tmp_path, seed):
    pcaps = _need_pcaps()
    rng = random.Random(seed)
    source = pcaps[seed % len(pcaps)]
    path = tmp_path / f"ünï-{seed}.pcap"
    path.write_bytes(_mutate(source.read_bytes(), rng))
    try:
        info = read_info(path, cache_dir=tmp_path / "cache", use_cache=False)
    except InputError as exc:
        assert str(path) in str(exc)
        return
    assert info.packets >= 0 and info.bytes >= 0 and info.duration_s >= 0


@pytest.mark.parametrize("content", [b"", b"\x00" * 23, b"\x0a\x0d\x0d\x0a" + b"\xff" * 60,
                                     b"not a capture at all\n" * 100])
def test_trace_info_cli_ends_with_one_line_error(tmp_path, content):
    path = tmp_path / "bad.pcap"
    path.write_bytes(content)
    done = subprocess.run([sys.executable, "-m", "idsbench.cli.main", "trace", "info", str(path), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(path) in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_header_without_packets_is_an_empty_capture(tmp_path):
    path = tmp_path / "empty.pcap"
    path.write_bytes(PCAP_HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    info = read_info(path, cache_dir=tmp_path / "cache", use_cache=False)
    assert (info.packets, info.bytes, info.flows) == (0, 0, 0)


def test_trace_info_on_a_huge_caplen_ends_in_bounded_time(tmp_path):
    path = tmp_path / "huge.pcap"
    header = PCAP_HEADER.pack(0xA1B2C3D4, 2, 4, 0, 0, 0xFFFFFFFF, 1)
    path.write_bytes(header + RECORD_HEADER.pack(1, 0, 0xFFFFFFF0, 0xFFFFFFF0) + b"\x00" * 100)
    done = subprocess.run([sys.executable, "-m", "idsbench.cli.main", "trace", "info", str(path), "--no-cache"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr and str(path) in done.stderr
