"""`read_info`'s fast path: the native `ibtrace` program (native/src/ibtrace.c) streams the capture
once (memory flat in the file size) while this process hashes it in a parallel thread.

`scan(path) -> TraceInfo` gives the same fields and values as the numpy path in `traffic.pcap`
(`tests/unit/test_traffic_traceinfo_native.py` compares them); a corrupt capture raises the same
`InputError` naming the file.
"""

from __future__ import annotations

import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from idsbench import native, proc
from idsbench.errors import EnvironmentMissing, InputError
from idsbench.store.environment import sha256_file
from idsbench.traffic import protocols as dis

PROGRAM = "ibtrace"
HASH_CHUNK = 8 << 20
MIN_RATE_BYTES_S = 20e6  # timeout: the scan may not be slower than this

Tally = tuple[int, int, int]   # (key, packets, bytes): per IP protocol, service port or second


class IbtraceReport(BaseModel):
    """ibtrace's JSON document (native/src/ibtrace.c `print_report`, schema 1)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    format: str
    link_type: int
    packets: int
    bytes: int = 0
    wire_bytes: int = 0
    min_ns: int = 0
    max_ns: int = 0
    min_frame: int = 0
    max_frame: int = 0
    flows: dict[str, int] = {}
    proto: tuple[Tally, ...] = ()      # IP protocol (-1: not IP)
    ports: tuple[Tally, ...] = ()      # well-known service port
    per_second: tuple[Tally, ...] = ()  # second since the first packet


def run_ibtrace(path: Path, program: Path) -> IbtraceReport:
    """ibtrace's JSON document for `path` (InputError for a corrupt capture)."""
    ports = ",".join(str(p) for p in sorted(dis.WELL_KNOWN_PORTS))
    timeout = 60.0 + path.stat().st_size / MIN_RATE_BYTES_S
    done = proc.run([str(program), "--ports", ports, str(path)], timeout=timeout, check=False)
    if done.returncode == 3:
        what = done.stderr.strip().removeprefix("ibtrace: corrupt: ")
        raise InputError(f"{path}: {what}.", fix=dis.CORRUPT_FIX)
    if done.returncode != 0:
        raise EnvironmentMissing(f"{program.name} failed on {path} (exit {done.returncode}): "
                                 f"{done.stderr.strip()[:400]}",
                                 fix="report this; `read_info(..., engine='python')` reads it without the native helper.")
    try:
        return IbtraceReport.model_validate_json(done.stdout)
    except ValidationError as exc:
        raise EnvironmentMissing(f"{program.name} printed an unexpected report for {path}: {exc.errors()[0]['msg']}.",
                                 fix="rebuild the native helpers (`make native`).") from exc


def scan(path: Path, program: Path | None = None, *, sha256: bool = True) -> tuple[IbtraceReport, str]:
    """(ibtrace's document, sha256 of the file or "" without `sha256`), hashed while ibtrace runs."""
    digests: list[str] = []
    errors: list[BaseException] = []

    def hash_it() -> None:
        try:
            digests.append(sha256_file(path, HASH_CHUNK))
        except OSError as exc:
            errors.append(exc)

    hasher = threading.Thread(target=hash_it, daemon=True)
    if sha256:
        hasher.start()
    try:
        doc = run_ibtrace(path, program or native.program(PROGRAM))
    finally:
        if sha256:
            hasher.join()
    if errors:
        raise errors[0]
    return doc, digests[0] if digests else ""


def tallies(doc: IbtraceReport) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """(by transport, by well-known service port) as `dissect.proto_mix` orders them."""
    t_names = ["non-ip", "other-ip", *dis.PROTO_NAMES.values()]
    t_pk, t_by = [0] * len(t_names), [0] * len(t_names)
    for proto, pkts, nbytes in doc.proto:
        name = "non-ip" if proto < 0 else dis.PROTO_NAMES.get(proto, "other-ip")
        t_pk[t_names.index(name)] += pkts
        t_by[t_names.index(name)] += nbytes
    s_names = ["other", *sorted(set(dis.WELL_KNOWN_PORTS.values()))]
    s_pk, s_by = [0] * len(s_names), [0] * len(s_names)
    for port, pkts, nbytes in doc.ports:
        k = s_names.index(dis.WELL_KNOWN_PORTS[port]) if port in dis.WELL_KNOWN_PORTS else 0
        s_pk[k] += pkts
        s_by[k] += nbytes
    return dis.ordered_tally(t_pk, t_by, t_names), dis.ordered_tally(s_pk, s_by, s_names)

