"""Emulated impairment on the sender's end of the wire: a lossy SPAN port or tap.

Loss: a 7-instruction eBPF classifier on the interface's egress (clsact, direct action) consumes each
packet with the given probability (`bpf_get_prandom_u32`), so it works on kernels without netem
(this machine's has no sch_netem). It answers TC_ACT_STOLEN, not SHOT: the sender is told the packet
left (as with a real tap, it cannot know), so it does not retry — tcpreplay retries dropped sends.
A consumed packet never reaches the interface, so it is the difference between what the replayers
counted and the interface's tx counter: the waterfall books it as wire loss on an impaired wire.
The program is loaded with the bpf() syscall, pinned for `tc` in a private bpffs mount that is
removed again right after the filter holds it; the filter goes with the namespace. Delay, jitter and
reordering need netem.
"""

from __future__ import annotations

import ctypes
import os
import struct
import tempfile
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing

SYS_BPF = 321                  # x86_64
BPF_PROG_LOAD, BPF_OBJ_PIN = 5, 6
BPF_PROG_TYPE_SCHED_CLS = 3
FUNC_GET_PRANDOM_U32 = 7
TC_ACT_OK, TC_ACT_STOLEN = 0, 4
RANDOM_RANGE = 1 << 31


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def drop_program(loss: float) -> bytes:
    """eBPF: consume (TC_ACT_STOLEN) when a random 31-bit number is below loss × 2^31, else pass."""
    if not 0 <= loss <= 1:
        raise ValueError(f"loss {loss} is not a fraction")
    threshold = min(int(loss * RANDOM_RANGE), RANDOM_RANGE - 1)
    return b"".join([
        _insn(0x85, imm=FUNC_GET_PRANDOM_U32),   # call bpf_get_prandom_u32
        _insn(0x57, dst=0, imm=RANDOM_RANGE - 1),  # r0 &= 0x7fffffff
        _insn(0x35, dst=0, off=2, imm=threshold),  # if r0 >= threshold goto pass
        _insn(0xB7, dst=0, imm=TC_ACT_STOLEN),
        _insn(0x95),                               # exit
        _insn(0xB7, dst=0, imm=TC_ACT_OK),         # pass:
        _insn(0x95),
    ])


def _bpf(cmd: int, attr: bytes) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(attr, 128)
    fd = int(libc.syscall(SYS_BPF, cmd, buf, 128))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


def load_program(insns: bytes) -> int:
    code = ctypes.create_string_buffer(insns, len(insns))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    attr = struct.pack("<IIQQIIQ", BPF_PROG_TYPE_SCHED_CLS, len(insns) // 8, ctypes.addressof(code),
                       ctypes.addressof(license_), 1, len(log), ctypes.addressof(log))
    try:
        return _bpf(BPF_PROG_LOAD, attr)
    except OSError as exc:
        raise EnvironmentMissing(f"the kernel refused the loss emulator's eBPF program ({exc.strerror}): "
                                 f"{log.value.decode(errors='replace').strip()[:300]}",
                                 fix="run as root on a kernel with CONFIG_BPF_SYSCALL and CONFIG_NET_CLS_BPF, "
                                     "or drop [wire] impair.loss.") from exc


def drop_fraction(ns: str, ifname: str, loss: float) -> None:
    """Drop `loss` of the packets leaving `ifname` (in netns `ns`), before they reach the wire."""
    attach_classifier(ns, ifname, drop_program(loss), "egress")


def attach_classifier(ns: str, ifname: str, insns: bytes, direction: str) -> None:
    """Load an eBPF classifier and attach it (clsact, direct action) to `ifname`'s `direction`
    ("ingress" or "egress") in netns `ns`; the filter goes with the namespace."""
    fd = load_program(insns)
    mnt = Path(tempfile.mkdtemp(prefix="idsbench-bpf-", dir="/run"))
    try:
        proc.run(["mount", "-t", "bpf", "bpf", str(mnt)])
        try:
            pin = mnt / "prog"
            path = ctypes.create_string_buffer(str(pin).encode())
            _bpf(BPF_OBJ_PIN, struct.pack("<QI", ctypes.addressof(path), fd))
            proc.run(["tc", "qdisc", "replace", "dev", ifname, "clsact"], netns=ns)
            proc.run(["tc", "filter", "replace", "dev", ifname, direction, "bpf", "da", "pinned", str(pin)], netns=ns)
        finally:
            proc.run(["umount", str(mnt)], check=False)
    finally:
        os.close(fd)
        mnt.rmdir()
