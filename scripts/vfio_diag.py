"""A fast check of the nested VFIO lab's data path (issue 31): one outer VM boot, no sensor image.

    .venv/bin/python scripts/vfio_diag.py VARIANT [--wire] [--mtu N] [--no-vm | --vm-only] [--like-sensor]
                                          [--limit-mib N] [--outer-mib N] --out DIR       (`make vfio-diag`)
    python scripts/vfio_diag.py --inner DIR ...                                           (in the outer VM)

A diagnostic, not part of the package (issue 40): it uses idsbench's setup code for what the vm-vfio setup
does too (setups/vfio/device.py: the VF made and handed to drivers; wire/netns.py: the wire's namespace;
proc.Supervisor: the nested qemu) under a teardown stack, so the outer VM is left as it was found.

The outer VM is the lab's (lab/vfio.py: q35, a virtual IOMMU, an igb PF behind a root port, a virtio
sender port on the same hub) with the VARIANT's IOMMU arguments and kernel parameters (`base` is the
lab's), booted from the cached vm image. With `--wire` the PF is lent as the lab's NIC wire lends it (own
namespace, offloads off, promiscuous, MTU N). One VF gets the MAC, spoofchk and trust the vm-vfio setup
gives it, and frames addressed to it are sent from the virtio port (an AF_PACKET socket):

1. `igbvf`: the VF on the outer VM's igbvf at MTU N: its rx_packets.
2. `vfio`: the VF on vfio-pci, driven from userspace as the sensor VM's igbvf drives it through QEMU's
   vfio-pci: a type1 container, one DMA mapping (an RX ring and buffers at an IOVA), MSI-X vectors on
   eventfds, the VF reset and the VF_RESET mailbox handshake with the PF's igb, RX queue 0: descriptors
   written back (DMA through the emulated IOMMU), the VF's good-packet counter, the eventfd counts
   (MSI-X through interrupt remapping), a software interrupt (EICS).
3. `vm` (not with `--no-vm`): a minimal VM nested on the VF: this host's qemu (with its libraries and
   firmware, DIR/inner), the image's kernel and initrd with INNER_INIT as /init, started as the vm
   setup starts a sensor (-cpu max, 1 GiB, its kernel parameters; MTU N, offloads off, promiscuous),
   its igbvf's counters and interrupts on its console (DIR/inner/console.log); the frames, then the
   lab's trace by tcpreplay through the sender port's egress rewrite (where ../shared holds it).

The outer VM has the lab's memory (`--outer-mib`; above 2815 MiB part of its RAM lies above 4 GiB and the
VF's BARs move to the firmware's high 64-bit window, where the emulated igb answers no access: lab/vfio.py).
The outer qemu traces VT-d errors and warnings, interrupt remapping and the igb's filter drops and
writes (DIR/qemu.txt, counted in DIR/summary.json). Everything the outer VM saw (with the VF's and its root
port's resources and /proc/iomem): DIR/diag.json. `--limit-mib N`: the nested VM's qemu in a memory cgroup,
as a sensor VM's.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import fcntl
import json
import mmap
import os
import re
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.lab.vfio_inner import find_port
from idsbench.setups.vfio.device import Sysfs, make_vf, set_driver
from idsbench.teardown import TeardownStack

VF_MAC = "52:54:00:69:64:10"
SCRIPT = Path(__file__).resolve()
PCAP = SCRIPT.parents[1].parent / "shared" / "data" / "pcaps" / "sv_smtp-data-rejected.pcap"
FRAMES = 20
RX_WAIT_S = 20.0   # how long the nested VM may take to show what was sent (its console reports every 5 s)
TRACE_WAIT_S = 30.0

# The outer VM's IOMMU per variant: (qemu arguments before any PCI device, kernel parameters).
VARIANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "base": (("-device", "intel-iommu,intremap=on,caching-mode=on"), ("intel_iommu=on", "iommu=pt")),
    "no-pt": (("-device", "intel-iommu,intremap=on,caching-mode=on"), ("intel_iommu=on",)),
    "intremap-off": (("-device", "intel-iommu,intremap=off,caching-mode=on"),
                     ("intel_iommu=on", "iommu=pt", "vfio_iommu_type1.allow_unsafe_interrupts=1")),
    "virtio-iommu": (("-device", "virtio-iommu-pci"), ("iommu=pt", "vfio_iommu_type1.allow_unsafe_interrupts=1")),
}

# linux/vfio.h: _IO(';', 100 + n)
VFIO_GET_API_VERSION, VFIO_CHECK_EXTENSION, VFIO_SET_IOMMU = 0x3B64, 0x3B65, 0x3B66
VFIO_GROUP_GET_STATUS, VFIO_GROUP_SET_CONTAINER, VFIO_GROUP_GET_DEVICE_FD = 0x3B67, 0x3B68, 0x3B6A
VFIO_DEVICE_GET_REGION_INFO, VFIO_DEVICE_GET_IRQ_INFO, VFIO_DEVICE_SET_IRQS = 0x3B6C, 0x3B6D, 0x3B6E
VFIO_IOMMU_MAP_DMA, VFIO_IOMMU_UNMAP_DMA = 0x3B71, 0x3B72
VFIO_TYPE1v2_IOMMU = 3
VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_CONFIG_REGION_INDEX = 2, 7
IRQ_DATA_NONE, IRQ_DATA_EVENTFD, IRQ_ACTION_TRIGGER = 1, 4, 32

# igbvf registers (Linux drivers/net/ethernet/intel/igbvf/regs.h, mbx.h)
CTRL, STATUS, EICS, EIMS, EIAC, EIAM = 0x0000, 0x0008, 0x1520, 0x1524, 0x152C, 0x1530
IVAR0, IVAR_MISC, VGPRC = 0x1700, 0x1740, 0x0F10
RDBAL, RDBAH, RDLEN, SRRCTL, RDH, RDT, RXDCTL = 0x2800, 0x2804, 0x2808, 0x280C, 0x2810, 0x2818, 0x2828
V2PMAILBOX, VMBMEM = 0x0C40, 0x0800
MBX_REQ, MBX_ACK, MBX_VFU, MBX_PFSTS, MBX_PFACK, MBX_RSTI, MBX_RSTD = 0x1, 0x2, 0x4, 0x10, 0x20, 0x40, 0x80
VF_RESET_MSG, MSG_ACK, MSG_NACK = 0x01, 0x80000000, 0x40000000
# PF registers (igb's e1000_regs.h), read only here
PF_REGS = {"VFRE": 0x0C8C, "VFTE": 0x0C90, "VFLRE": 0x0C88, "MRQC": 0x5818, "VT_CTL": 0x581C,
           "VMOLR0": 0x5AD0, "VMOLR1": 0x5AD4, "RCTL": 0x0100, "RXDCTL0": 0xC028, "RXDCTL1": 0xC068}

RING = 32                     # descriptors (16 bytes each: RDLEN a multiple of 128)
IOVA = 0x10000000             # where the ring and the buffers sit for the VF
DMA_SIZE = 1 << 20
BUF = 2048


def log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


def sh(argv: list[str], timeout: float = 120.0) -> str:
    """A short command's output (stdout and stderr), whatever its exit status."""
    done = proc.run(argv, timeout=timeout, check=False)
    return (done.stdout + done.stderr).strip()


def rebind(bdf: str, driver: str | None) -> str | None:
    """Hand `bdf` to `driver` (None: unbound, no override), as the vm-vfio setup does; the driver it has then
    (a write the kernel refuses is logged, and the diagnostic goes on to report what it sees)."""
    fs = Sysfs()
    try:
        return set_driver(fs, bdf, driver, driver).driver
    except EnvironmentMissing as exc:
        log(f"rebind {bdf} to {driver}: {exc}")
        return fs.device(bdf).driver


def wait_until(done: Callable[[], bool], timeout_s: float, interval_s: float = 1.0) -> bool:
    """Poll `done` until it holds or `timeout_s` passes; whether it held."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval_s)
    return True


_RX = re.compile(r"^IBDIAG rx (\d+)")


def rx_packets(console: str) -> int | None:
    """The nested igbvf's rx_packets in its console's last `IBDIAG rx` line (None before the first)."""
    found = [int(m.group(1)) for line in console.splitlines() if (m := _RX.match(line))]
    return found[-1] if found else None


def mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def send_frames(ifname: str, n: int = FRAMES) -> int:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src = Path(f"/sys/class/net/{ifname}/address").read_text().strip()
    sent = 0
    for i in range(n):
        frame = mac_bytes(VF_MAC) + mac_bytes(src) + b"\x88\xb5" + struct.pack("!I", i) + b"idsbench-vfio-diag" * 3
        sent += s.send(frame) > 0
        time.sleep(0.05)
    s.close()
    return sent


def pf_regs(pf_bdf: str) -> dict[str, str]:
    """Plain (not read-to-clear) PF registers, and the receive-address entries that name a pool."""
    out: dict[str, str] = {}
    try:
        with open(f"/sys/bus/pci/devices/{pf_bdf}/resource0", "rb") as fh:
            bar = mmap.mmap(fh.fileno(), 0x10000, mmap.MAP_SHARED, mmap.PROT_READ)
    except OSError as exc:
        return {"error": str(exc)}

    def rd(off: int) -> int:
        return int(struct.unpack_from("<I", bar, off)[0])

    for name, off in PF_REGS.items():
        out[name] = f"{rd(off):#010x}"
    for i in range(24):
        off = 0x5400 + 8 * i if i < 16 else 0x54E0 + 8 * (i - 16)
        ral, rah = rd(off), rd(off + 4)
        if rah & 0x80000000:
            mac = struct.pack("<IH", ral, rah & 0xFFFF)
            out[f"RA{i}"] = f"{mac.hex(':')} pool-bits {(rah >> 18) & 0xFF:#04x}"
    bar.close()
    return out


class Dev:
    """A VFIO device's BAR0 and config space through the device fd (pread/pwrite)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.bar0 = self.region(0)[1]
        self.cfg = self.region(VFIO_PCI_CONFIG_REGION_INDEX)[1]

    def region(self, index: int) -> tuple[int, int]:
        buf = bytearray(struct.pack("<IIIIQQ", 32, 0, index, 0, 0, 0))
        fcntl.ioctl(self.fd, VFIO_DEVICE_GET_REGION_INFO, buf)
        _, _, _, _, size, offset = struct.unpack("<IIIIQQ", buf)
        return size, offset

    def rd(self, reg: int) -> int:
        return int(struct.unpack("<I", os.pread(self.fd, 4, self.bar0 + reg))[0])

    def wr(self, reg: int, val: int) -> None:
        os.pwrite(self.fd, struct.pack("<I", val & 0xFFFFFFFF), self.bar0 + reg)

    def cfg16(self, off: int, val: int | None = None) -> int:
        if val is not None:
            os.pwrite(self.fd, struct.pack("<H", val), self.cfg + off)
        return int(struct.unpack("<H", os.pread(self.fd, 2, self.cfg + off))[0])


def mailbox_reset(dev: Dev, report: dict[str, Any]) -> None:
    """igbvf's e1000_reset_hw_vf: CTRL.RST, wait for RSTD, VF_RESET to the PF, wait for its ACK + MAC."""
    seen = 0

    def poll(bits: int, timeout_s: float) -> bool:
        nonlocal seen
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            seen |= dev.rd(V2PMAILBOX)   # PFSTS/PFACK/RSTD clear on read: keep what was seen
            if seen & bits:
                seen &= ~bits
                return True
            time.sleep(0.01)
        return False

    dev.wr(CTRL, dev.rd(CTRL) | 0x04000000)
    report["rstd"] = poll(MBX_RSTD, 1.0)  # igbvf goes on without it too
    dev.wr(V2PMAILBOX, MBX_VFU)
    report["vfu_locked"] = bool(dev.rd(V2PMAILBOX) & MBX_VFU)
    dev.wr(VMBMEM, VF_RESET_MSG)
    dev.wr(V2PMAILBOX, MBX_REQ)
    report["pf_ack"] = poll(MBX_PFACK, 10.0)
    report["pf_sts"] = poll(MBX_PFSTS, 10.0)
    dev.wr(V2PMAILBOX, MBX_VFU)
    msg = [dev.rd(VMBMEM + 4 * i) for i in range(3)]
    dev.wr(V2PMAILBOX, MBX_ACK)
    report["reply"] = [f"{w:#010x}" for w in msg]
    report["reply_mac"] = struct.pack("<II", msg[1], msg[2])[:6].hex(":")
    report["reset_acked"] = msg[0] == (VF_RESET_MSG | MSG_ACK)


def vfio_probe(vf: str, sender: str, report: dict[str, Any]) -> None:
    group = os.path.basename(os.readlink(f"/sys/bus/pci/devices/{vf}/iommu_group"))
    report["group"] = group
    container = os.open("/dev/vfio/vfio", os.O_RDWR)
    report["api"] = fcntl.ioctl(container, VFIO_GET_API_VERSION)
    report["type1v2"] = fcntl.ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU)
    gfd = os.open(f"/dev/vfio/{group}", os.O_RDWR)
    status = bytearray(struct.pack("<II", 8, 0))
    fcntl.ioctl(gfd, VFIO_GROUP_GET_STATUS, status)
    report["group_viable"] = bool(struct.unpack("<II", status)[1] & 1)
    fcntl.ioctl(gfd, VFIO_GROUP_SET_CONTAINER, struct.pack("<i", container))
    try:
        fcntl.ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU)
    except OSError as exc:
        report["set_iommu_error"] = str(exc)
        raise
    fd = fcntl.ioctl(gfd, VFIO_GROUP_GET_DEVICE_FD, bytearray(vf.encode() + b"\0"))
    dev = Dev(fd)
    report["cmd_before"] = f"{dev.cfg16(4):#06x}"
    report["cmd_after"] = f"{dev.cfg16(4, dev.cfg16(4) | 0x6):#06x}"  # memory space + bus master

    mem = mmap.mmap(-1, DMA_SIZE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, mmap.PROT_READ | mmap.PROT_WRITE)
    vaddr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    fcntl.ioctl(container, VFIO_IOMMU_MAP_DMA, struct.pack("<IIQQQ", 32, 3, vaddr, IOVA, DMA_SIZE))
    report["dma_mapped"] = f"{IOVA:#x}+{DMA_SIZE:#x}"

    irq = bytearray(struct.pack("<IIII", 16, 0, VFIO_PCI_MSIX_IRQ_INDEX, 0))
    fcntl.ioctl(fd, VFIO_DEVICE_GET_IRQ_INFO, irq)
    nvec = min(3, struct.unpack("<IIII", irq)[3])
    efds = [os.eventfd(0, os.EFD_NONBLOCK) for _ in range(nvec)]
    fcntl.ioctl(fd, VFIO_DEVICE_SET_IRQS, struct.pack(f"<IIIII{nvec}i", 20 + 4 * nvec,
                                                      IRQ_DATA_EVENTFD | IRQ_ACTION_TRIGGER,
                                                      VFIO_PCI_MSIX_IRQ_INDEX, 0, nvec, *efds))
    report["msix_vectors"] = nvec

    def counts() -> list[int]:
        out = []
        for e in efds:
            try:
                out.append(int.from_bytes(os.read(e, 8), "little"))
            except OSError as exc:
                if exc.errno != errno.EAGAIN:
                    raise
                out.append(0)
        return out

    try:
        mb: dict[str, Any] = {}
        mailbox_reset(dev, mb)
        report["mailbox"] = mb
        report["status"] = f"{dev.rd(STATUS):#010x}"
        # interrupts: RX queue 0 -> vector 0, TX -> 1, mailbox -> 2
        dev.wr(IVAR0, 0x8180)
        dev.wr(IVAR_MISC, 0x82)
        dev.wr(EIAC, 0x7)
        dev.wr(EIAM, 0x7)
        dev.wr(EIMS, 0x7)
        report["eventfds_after_reset"] = counts()
        dev.wr(EICS, 0x1)  # a software interrupt on vector 0
        time.sleep(1.0)
        report["eventfds_after_eics"] = counts()
        # RX queue 0: ring at IOVA, buffers after it
        dev.wr(RXDCTL, 0)
        for i in range(RING):
            struct.pack_into("<QQ", mem, 16 * i, IOVA + 0x1000 + BUF * i, 0)
        dev.wr(RDBAL, IOVA)
        dev.wr(RDBAH, 0)
        dev.wr(RDLEN, RING * 16)
        dev.wr(SRRCTL, 0x80000000 | 0x02000000 | (BUF >> 10))
        dev.wr(RDH, 0)
        dev.wr(RDT, 0)
        dev.wr(RXDCTL, 0x02000000 | (8 << 16) | (8 << 8) | 16)
        dev.wr(RDT, RING - 1)
        report["rx_regs"] = {n: f"{dev.rd(r):#010x}" for n, r in
                             (("RDBAL", RDBAL), ("RDLEN", RDLEN), ("SRRCTL", SRRCTL), ("RXDCTL", RXDCTL),
                              ("RDH", RDH), ("RDT", RDT))}
        report["pf_regs_before_send"] = pf_regs(report["pf_bdf"])
        gprc0 = dev.rd(VGPRC)
        report["sent"] = send_frames(sender)
        time.sleep(3.0)
        done = [i for i in range(RING) if struct.unpack_from("<I", mem, 16 * i + 8)[0] & 1]
        lengths = [struct.unpack_from("<H", mem, 16 * i + 12)[0] for i in done]
        report["rx"] = {"descriptors_done": len(done), "lengths": lengths[:5], "RDH": dev.rd(RDH),
                        "VGPRC_delta": dev.rd(VGPRC) - gprc0, "eventfds": counts(),
                        "first_bytes": bytes(mem[0x1000:0x1000 + 14]).hex() if done else None}
        report["pf_regs_after_send"] = pf_regs(report["pf_bdf"])
    finally:
        fcntl.ioctl(fd, VFIO_DEVICE_SET_IRQS, struct.pack("<IIIII", 20, IRQ_DATA_NONE | IRQ_ACTION_TRIGGER,
                                                          VFIO_PCI_MSIX_IRQ_INDEX, 0, 0))
        fcntl.ioctl(container, VFIO_IOMMU_UNMAP_DMA, struct.pack("<IIQQ", 24, 0, IOVA, DMA_SIZE))
        for e in efds:
            os.close(e)
        os.close(fd)
        os.close(gfd)
        os.close(container)


INNER_INIT = r"""#!/bin/sh
# the vfio_diag VM's init (the image's initrd: klibc sh, modprobe, ipconfig): igbvf up, counters to the console
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mkdir -p /proc /sys /dev; mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
echo "IBDIAG boot $(cat /proc/uptime)"
modprobe igbvf
i=0; while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 120 ]; do sleep 1; i=$((i+1)); done
if [ -x /usr/sbin/ip-ib ]; then  # as the vm setup's guest init sets its capture NIC up
  ip-ib link set dev eth0 mtu $(cat /mtu)
  ethtool-ib -K eth0 rx off tx off sg off tso off gso off gro off lro off 2>&1 | while read -r l; do echo "IBDIAG ethtool $l"; done
  ip-ib link set dev eth0 promisc on up
  ip-ib -s link show dev eth0 | while read -r l; do echo "IBDIAG ip $l"; done
else
  ipconfig -t 30 -d 198.18.5.2::0.0.0.0:255.255.255.0::eth0:none 2>&1 | while read -r l; do echo "IBDIAG ipconfig $l"; done
fi
i=0; while [ "$(cat /sys/class/net/eth0/carrier 2>/dev/null)" != 1 ] && [ $i -lt 60 ]; do sleep 1; i=$((i+1)); done
dmesg | while read -r l; do case "$l" in *igbvf*|*eth0*|*DMAR*|*MSI*|*PF*) echo "IBDIAG dmesg $l";; esac; done
echo "IBDIAG ready $(cat /sys/class/net/eth0/address) carrier $(cat /sys/class/net/eth0/carrier) $(cat /proc/uptime)"
n=0; S=/sys/class/net/eth0/statistics
while [ $n -lt 200 ]; do
  echo "IBDIAG rx $(cat $S/rx_packets) err $(cat $S/rx_errors) drop $(cat $S/rx_dropped) missed $(cat $S/rx_missed_errors)"
  while read -r l; do case "$l" in *eth0*|*igbvf*) echo "IBDIAG irq $l";; esac; done < /proc/interrupts
  sleep 5; n=$((n+1))
done
poweroff -f
"""


def newc(files: dict[str, tuple[int, bytes]]) -> bytes:
    """An uncompressed cpio (newc) archive: name -> (mode, data); appended to an initrd, it overrides it."""
    out = b""
    for ino, (name, (mode, data)) in enumerate([*files.items(), ("TRAILER!!!", (0, b""))], start=1):
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0)
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + name.encode() + b"\0"
        out += b"\0" * (-len(out) % 4) + data
        out += b"\0" * (-len(out) % 4)
    return out


def sensor_devices(d: Path) -> list[str]:
    """The devices a sensor VM has besides its VF (setups/vm/qemu.py: a virtio disk, the control port on
    virtio-serial, three 9p shares), ahead of it, so the VF lands where it does there (00:05.0)."""
    disk = d / "blank.img"
    with open(disk, "wb") as fh:
        fh.truncate(64 << 20)
    argv = ["-drive", f"file={disk},if=virtio,format=raw,snapshot=on,cache=unsafe",
            "-device", "virtio-serial-pci,id=vser"]
    for n in range(3):
        argv += ["-fsdev", f"local,id=fs{n},path={d},security_model=passthrough,readonly=on",
                 "-device", f"virtio-9p-pci,fsdev=fs{n},mount_tag=ib{n}"]
    return argv


def inner_vm(stack: TeardownStack, out: Path, vf: str, sender: str, ready_s: float = 360.0,
             like_sensor: bool = False, limit_mib: int | None = None) -> dict[str, Any]:
    """Boot the minimal VM on the VF (vfio-pci), send frames once its igbvf is up, read its counters.
    `like_sensor`: with the sensor VM's other devices ahead of the VF. `limit_mib`: its qemu in a memory
    cgroup of that size from its first instruction, as the vm setup starts a sensor VM (guest RAM + qemu's
    overhead; the VF pins all of the guest's RAM inside it)."""
    from idsbench.infra import cgroups
    from idsbench.proc import Supervisor
    from idsbench.setups.vm.qemu import TCG_TB_MIB

    d = out / "inner"
    console = d / "console.log"
    console.unlink(missing_ok=True)
    report: dict[str, Any] = {"driver": rebind(vf, "vfio-pci")}
    # as the vm setup starts a sensor VM (setups/vm/qemu.py: -cpu max, its kernel parameters), 1 GiB
    argv = [str(d / "qemu-system-x86_64"), "-L", str(d / "share"), "-machine", "q35",
            "-accel", f"tcg,thread=multi,tb-size={TCG_TB_MIB}", "-cpu", "max", "-m", "1024", "-smp", "1", "-nodefaults",
            "-display", "none", "-no-reboot",
            "-serial", f"file:{console}", "-kernel", str(d / "vmlinuz"), "-initrd", str(d / "initrd.img"),
            "-append", "console=ttyS0 panic=-1 quiet net.ifnames=0 mitigations=off tsc=reliable no_timer_check "
            "ipv6.disable=1", *(sensor_devices(d) if like_sensor else []), "-device", f"vfio-pci,host={vf}"]
    env = dict(os.environ, LD_LIBRARY_PATH=str(d / "lib"))
    group = cgroups.create("ibdiag-vm", memory_bytes=limit_mib << 20) if limit_mib else None
    if group is not None:
        stack.push(cgroups.CgroupResource.of(group))  # removed also when this fails half-way
        report["limit_mib"] = limit_mib
    sup = Supervisor(stack)
    t0 = time.monotonic()
    # joined to the cgroup before exec (the exec shim): the pinned RAM is charged to it
    qemu = sup.start(argv, name="vfio-diag-vm", stdout=d / "qemu.txt", env=env,
                     cgroup_procs=group.procs_files if group is not None else ())
    report["pid"] = qemu.pid

    def text() -> str:
        return console.read_text(errors="replace") if console.exists() else ""

    def received(at_least: int) -> Callable[[], bool]:
        return lambda: (rx_packets(text()) or 0) >= at_least or qemu.poll() is not None

    try:
        wait_until(lambda: qemu.poll() is not None or "IBDIAG ready" in text(), ready_s, interval_s=2.0)
        report["ready_s"] = round(time.monotonic() - t0, 1)
        report["ready"] = "IBDIAG ready" in text()
        if report["ready"]:
            before = rx_packets(text()) or 0
            report["sent"] = send_frames(sender)
            wait_until(received(before + report["sent"]), RX_WAIT_S)  # or what arrived by then
            report["rx_after_frames"] = next((x for x in reversed(text().splitlines()) if x.startswith("IBDIAG rx")), None)
            if PCAP.exists():  # the lab's trace the lab's way: tcpreplay, the port's egress rewrite to the VF's MAC
                sh(["tc", "qdisc", "replace", "dev", sender, "clsact"])
                sh(["tc", "filter", "add", "dev", sender, "egress", "pref", "49", "matchall", "action", "pedit", "ex",
                    "munge", "eth", "dst", "set", VF_MAC])
                before = rx_packets(text()) or 0
                report["tcpreplay"] = sh(["tcpreplay", "-i", sender, "--pps", "20", str(PCAP)])[-300:]
                report["tc"] = sh(["tc", "-s", "filter", "show", "dev", sender, "egress"])[-400:]
                sent = re.search(r"Actual: (\d+) packets", report["tcpreplay"])
                wait_until(received(before + (int(sent.group(1)) if sent else 1)), TRACE_WAIT_S)
        lines = [line for line in text().splitlines() if line.startswith("IBDIAG")]
        report["lines"] = lines[:40] + (["..."] + lines[-6:] if len(lines) > 46 else [])
        rx = [line for line in lines if line.startswith("IBDIAG rx")]
        report["rx_last"] = rx[-1] if rx else None
    finally:
        report["exit"] = sup.stop(qemu, timeout=10.0)
        report["qemu_out"] = (d / "qemu.txt").read_text(errors="replace")[-2000:]
        if group is not None:  # read before the stack removes it
            report["cgroup"] = {"peak_mib": group.memory_peak_bytes() >> 20, "failcnt": group.memory_failcnt(),
                                "events": group.memory_events().describe(), "oom_kills": group.oom_kills()}
            group.remove()
    return report


WIRE_NS = "ibdiag-sensor"


def _port(driver: str) -> tuple[str, str] | None:
    try:
        return find_port(driver)
    except SystemExit:  # not (yet) there
        return None


def inner(out: Path, wire: bool = False, mtu: int = 1500, vm_only: bool = False, like_sensor: bool = False,
          limit_mib: int | None = None) -> int:
    """In the outer VM: everything it changes (the wire's namespace, the VF, the VF's driver, the nested qemu
    and its cgroup) is a teardown record, undone at the end as the vm-vfio setup undoes it."""
    from idsbench.wire.netns import OFFLOADS, add_netns

    report: dict[str, Any] = {"cmdline": Path("/proc/cmdline").read_text().strip(), "mtu": mtu}
    sh(["modprobe", "-a", "virtio_iommu", "igb", "igbvf", "vfio-pci"])  # virtio_iommu: its variant only
    wait_until(lambda: _port("igb") is not None and _port("virtio_net") is not None, 10.0, interval_s=0.1)
    pf, pf_bdf = find_port("igb")
    sender, _ = find_port("virtio_net")
    report.update(pf=pf, pf_bdf=pf_bdf, sender=sender)
    with TeardownStack() as stack:
        pf_ip = ["ip"]
        if wire:  # the PF as the lab's NIC wire lends it (wire/nic.py): in a namespace, offloads off, promiscuous
            add_netns(stack, WIRE_NS)  # deleted at the end: the PF goes back to the outer VM's namespace
            sh(["ip", "link", "set", "dev", pf, "netns", WIRE_NS])
            sh(["ip", "netns", "exec", WIRE_NS, "ethtool", "-K", pf, *[a for f in OFFLOADS for a in (f, "off")]])
            sh(["ip", "-n", WIRE_NS, "link", "set", "dev", pf, "mtu", str(mtu)])
            sh(["ip", "-n", WIRE_NS, "link", "set", "dev", pf, "promisc", "on", "up"])
            pf_ip = ["ip", "-n", WIRE_NS]
            report["wire"] = sh(pf_ip + ["-d", "link", "show", "dev", pf])
        for argv in (pf_ip + ["link", "set", "dev", pf, "up"], ["ip", "link", "set", "dev", sender, "up"]):
            sh(argv)
        vf = make_vf(stack, pf_bdf)  # autoprobe off, one VF; the count and autoprobe set back at the end
        report["vf"] = vf
        report["ip_vf"] = sh(pf_ip + ["link", "set", "dev", pf, "vf", "0", "mac", VF_MAC, "spoofchk", "off",
                                      "trust", "on"])
        report["iommu_groups"] = len(list(Path("/sys/kernel/iommu_groups").glob("*")))
        dev = Path("/sys/bus/pci/devices") / pf_bdf
        bridge = (dev.resolve()).parent.name  # the PF's root port
        report["resources"] = {b: [line for line in (Path("/sys/bus/pci/devices") / b / "resource").read_text()
                                   .splitlines() if not line.startswith("0x0000000000000000 0x0000000000000000")]
                               for b in (bridge, pf_bdf, vf)}
        report["iomem"] = Path("/proc/iomem").read_text().splitlines()
        try:
            if vm_only:  # the lab's order: no driver of the outer VM has spoken to the PF for this VF before the VM
                report["vfio"] = {"driver": rebind(vf, "vfio-pci"), "pf_bdf": pf_bdf, "vm_only": True}
            else:
                report["igbvf"] = outer_igbvf(vf, sender, mtu)
                log(f"igbvf: {report['igbvf']}")
                # 2. the VF on vfio-pci, from userspace
                v: dict[str, Any] = {"driver": rebind(vf, "vfio-pci"), "pf_bdf": pf_bdf}
                report["vfio"] = v
                try:
                    vfio_probe(vf, sender, v)
                except Exception as exc:  # reported with what was seen so far
                    v["error"] = f"{type(exc).__name__}: {exc}"
                log(f"vfio: {json.dumps(v)}")
                report["interrupts_vfio"] = [line.strip() for line in Path("/proc/interrupts").read_text().splitlines()
                                             if "vfio" in line]
                (out / "diag.json").write_text(json.dumps(report, indent=1, default=str))
            # 3. the VF in a minimal VM (kernel + initrd; --like-sensor: a sensor VM's devices too) on vfio-pci
            if (out / "inner" / "qemu-system-x86_64").exists():
                report["vm"] = inner_vm(stack, out, vf, sender, like_sensor=like_sensor, limit_mib=limit_mib)
                log(f"vm: {json.dumps(report['vm'])}")
        finally:
            rebind(vf, None)  # then the stack removes the VF, the namespace
            report["dmesg"] = [line for line in sh(["dmesg"]).splitlines()
                               if any(k in line for k in ("DMAR", "vfio", "igb", "iommu", "IOMMU", "remapping"))][-80:]
            (out / "diag.json").write_text(json.dumps(report, indent=1, default=str))
    return 0


def _carrier(ifname: str) -> bool:
    try:
        return Path(f"/sys/class/net/{ifname}/carrier").read_text(errors="replace").strip() == "1"
    except OSError:  # a link that is not up has no carrier to read
        return False


def outer_igbvf(vf: str, sender: str, mtu: int) -> dict[str, Any]:
    """1. The VF on the outer VM's igbvf: frames addressed to it, its rx_packets."""
    ctl: dict[str, Any] = {"driver": rebind(vf, "igbvf")}
    net = Path(f"/sys/bus/pci/devices/{vf}/net")
    wait_until(lambda: net.is_dir() and any(net.iterdir()), 5.0, interval_s=0.1)
    vif = next((p.name for p in net.iterdir()), None) if net.is_dir() else None
    if vif:
        ctl["mtu"] = sh(["ip", "link", "set", "dev", vif, "mtu", str(mtu)]) or mtu
        sh(["ip", "link", "set", "dev", vif, "up"])
        stats = Path(f"/sys/class/net/{vif}/statistics/rx_packets")
        wait_until(lambda: _carrier(vif), 30.0, interval_s=0.5)
        before = int(stats.read_text())
        ctl["sent"] = send_frames(sender)
        wait_until(lambda: int(stats.read_text()) - before >= ctl["sent"], 3.0, interval_s=0.1)
        ctl["rx_packets"] = int(stats.read_text()) - before
        ctl["interrupts"] = [line.strip() for line in Path("/proc/interrupts").read_text().splitlines()
                             if vif in line or "igbvf" in line]
    return ctl


GLIBC = ("libc.so", "libm.so", "ld-linux", "libpthread.so", "libdl.so", "librt.so", "libresolv.so")
TOOL_LIBS = ("libbpf.so.1", "libbsd.so.0", "libelf.so.1", "libmd.so.0", "libmnl.so.0", "libz.so.1", "libcap.so.2")
FIRMWARE = ("bios-256k.bin", "kvmvapic.bin", "linuxboot_dma.bin", "linuxboot.bin")


def prepare_inner(d: Path, kernel: Path, initrd: Path, mtu: int = 1500) -> None:
    """This host's qemu (the outer image has none: the lab's has, but is not always built) with its
    libraries and firmware, the image's kernel, and its initrd with INNER_INIT as /init, into `d`."""
    import shutil

    d.mkdir(parents=True, exist_ok=True)
    (d / "lib").mkdir(exist_ok=True)
    (d / "share").mkdir(exist_ok=True)
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        raise SystemExit("no qemu-system-x86_64 on this host")
    shutil.copy(os.path.realpath(qemu), d / "qemu-system-x86_64")
    for line in sh(["ldd", qemu]).splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > 2 and parts[2].startswith("/") and not any(g in parts[0] for g in GLIBC):
            shutil.copy(os.path.realpath(parts[2]), d / "lib" / parts[0])
    for name in FIRMWARE:
        for src in (Path("/usr/share/qemu") / name, Path("/usr/share/seabios") / name):
            if src.exists():
                shutil.copy(os.path.realpath(src), d / "share" / name)
                break
    shutil.copy(kernel, d / "vmlinuz")
    files = {"init": (0o100755, INNER_INIT.encode()), "mtu": (0o100644, f"{mtu}\n".encode())}
    for tool in ("ip", "ethtool"):  # this host's (the same release), with the libraries the initrd lacks
        path = shutil.which(tool, path="/usr/sbin:/sbin:/usr/bin")
        if path is None:
            continue
        files[f"usr/sbin/{tool}-ib"] = (0o100755, Path(path).read_bytes())
        for line in sh(["ldd", path]).splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) > 2 and parts[2].startswith("/") and parts[0] in TOOL_LIBS:
                files[f"usr/lib/x86_64-linux-gnu/{parts[0]}"] = (0o100644, Path(os.path.realpath(parts[2])).read_bytes())
    base = initrd.read_bytes()  # the kernel takes an uncompressed archive only at a 4-byte-aligned offset
    (d / "initrd.img").write_bytes(base + b"\0" * (-len(base) % 4) + newc(files))


def run_diag(variant: str, out_dir: Path, nested: bool = True, wire: bool = False, mtu: int = 1500,
             vm_only: bool = False, like_sensor: bool = False, limit_mib: int | None = None,
             outer_mib: int | None = None) -> dict[str, Any]:
    from idsbench import settings
    from idsbench.lab.vfio import IR_TRACE, OUTER_TRACES, LabOptions, outer_nic_args, trace_args, trace_counts
    from idsbench.proc import Supervisor
    from idsbench.setups.vm.guestrun import GuestCommand, GuestRunOptions, run_in_guest

    machine_args, kernel_args = VARIANTS[variant]
    out = out_dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = (("PYTHONDONTWRITEBYTECODE", "1"), ("HOME", "/root"), ("LC_ALL", "C.UTF-8"),
           ("PATH", f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin"))
    command = GuestCommand(argv=(sys.executable, str(SCRIPT), "--inner", str(out),
                                 "--mtu", str(mtu), *(["--wire"] if wire else []),
                                 *(["--vm-only"] if vm_only else []),
                                 *(["--like-sensor"] if like_sensor else []),
                                 *(["--limit-mib", str(limit_mib)] if limit_mib else [])), env=env)
    if nested:
        from idsbench.setups.vm.image import ensure_image

        image = ensure_image(settings.cache_dir(), None, ("tcpreplay",))  # run_in_guest's (cached) image
        prepare_inner(out / "inner", image.kernel, image.initrd, mtu)
    opts = GuestRunOptions(name=f"{settings.name_prefix()}-vfiodiag", vcpus=2,
                           memory_mib=outer_mib or LabOptions().memory_mib, accel="tcg",
                           tcg_threads="multi", boot_timeout_s=120.0, timeout_s=540.0 if nested else 100.0,
                           machine="q35,kernel-irqchip=split", machine_args=machine_args,
                           read_only=(SCRIPT.parent, *((PCAP.parent,) if PCAP.exists() else ())),
                           qemu_args=(*outer_nic_args(), *trace_args((*OUTER_TRACES, IR_TRACE))), kernel_args=kernel_args)
    t0 = time.monotonic()
    with TeardownStack(state_dir=settings.state_dir()) as td:
        result = run_in_guest(Supervisor(td), command, out, cache_dir=settings.cache_dir(), options=opts)
    diag_file = out / "diag.json"
    diag: dict[str, Any] = json.loads(diag_file.read_text()) if diag_file.exists() else {}
    counts = trace_counts(out / "qemu.txt")
    summary = {"variant": variant, "boot_s": result.boot_s, "run_s": result.run_s, "exit": result.exit_code,
               "failure": result.failure, "wall_s": round(time.monotonic() - t0, 1), "qemu_lines": counts,
               "igbvf": diag.get("igbvf"), "vfio": diag.get("vfio"), "vm": diag.get("vm")}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="scripts/vfio_diag.py")
    ap.add_argument("variant", nargs="?", choices=sorted(VARIANTS), default="base")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--no-vm", action="store_true", help="only the userspace checks (no nested VM)")
    ap.add_argument("--wire", action="store_true", help="the PF as the lab lends it: in a namespace, promiscuous")
    ap.add_argument("--mtu", type=int, default=1500, help="the VF's MTU (and the PF's with --wire); the lab's: 1508")
    ap.add_argument("--vm-only", action="store_true",
                    help="only the nested VM, on a VF no driver of the outer VM has used (the lab's order)")
    ap.add_argument("--like-sensor", action="store_true",
                    help="the nested VM with a sensor VM's other devices ahead of the VF (disk, serial, 9p)")
    ap.add_argument("--limit-mib", type=int, help="the nested VM's qemu in a memory cgroup of N MiB, as the vm "
                    "setup starts a sensor VM (1 GiB guest under TCG: 1344)")
    ap.add_argument("--outer-mib", type=int, help="the outer VM's memory (default: the lab's; above 2815 MiB part of it "
                    "lands above 4 GiB and the VF's BARs move to the firmware's high 64-bit window)")
    ap.add_argument("--inner", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inner:
        return inner(args.inner, wire=args.wire, mtu=args.mtu, vm_only=args.vm_only, like_sensor=args.like_sensor,
                     limit_mib=args.limit_mib)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout unwinds the teardown (qemu stopped)
    if args.out is None:
        ap.error("--out DIR is needed")
    print(json.dumps(run_diag(args.variant, args.out, nested=not args.no_vm, wire=args.wire, mtu=args.mtu,
                                     vm_only=args.vm_only, like_sensor=args.like_sensor, limit_mib=args.limit_mib,
                                     outer_mib=args.outer_mib), indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
