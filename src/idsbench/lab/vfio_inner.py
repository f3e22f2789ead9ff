"""The nested lab's inside (lab/vfio.py boots the outer VM and runs this as its command):

    python -m idsbench.lab.vfio_inner SPEC.json OUT_DIR

On the outer VM — a host with an emulated IOMMU, an igb SR-IOV NIC (the PF) and a virtio NIC joined to
the igb's wire — it prepares the host as its administrator would (`modprobe vfio-pci igb`), names the
two ports in the spec (wire.sender_interface = the virtio port, wire.sensor_interface = setup.sriov_pf
= the PF), runs the campaign as `idsbench run` would (campaign dir in the outer VM's tmpfs, copied to
OUT_DIR/campaign), then checks that nothing is left: the PF back on igb with no VFs and autoprobe as
it was, no namespace, link, qemu, holder process, cgroup or teardown state of the run. Everything it saw
goes to OUT_DIR/inner.json; exit 0 only when the campaign ran every sample ok and nothing is left.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from idsbench import proc, settings
from idsbench.probe.iommu import IommuFacts, PciDevice, iommu_facts, pci_device
from idsbench.run.progress import Progress
from idsbench.store.layout import LAB_CAMPAIGN_DIR
from idsbench.store.record import Record
from idsbench.store.writers import mirror_campaign, write_lab_inner

CAMPAIGN_TMP = Path("/tmp/idsbench-vfiolab/campaign")
PORT_TIMEOUT_S = 30.0  # from `modprobe igb` to its interface (no udev in the outer VM)


@dataclass(frozen=True)
class HostState:
    """What the run must give back as it found it."""

    pf_driver: str | None
    pf_numvfs: int | None
    pf_autoprobe: bool | None
    pf_override: str | None
    vfs: tuple[str, ...]
    links: tuple[str, ...]
    netns: tuple[str, ...]
    qemu_pids: tuple[int, ...]
    sleep_pids: tuple[int, ...]
    cgroups: tuple[str, ...]
    state_files: tuple[str, ...]


def _out(argv: list[str]) -> str:
    return proc.run(argv, check=False).stdout


def _comm_pids(name: str) -> tuple[int, ...]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and entry.name != str(os.getpid()):
            try:
                if (entry / "comm").read_text().strip().startswith(name):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return tuple(sorted(pids))


def host_state(pf_bdf: str, prefix: str) -> HostState:
    pf = pci_device(pf_bdf)
    links = tuple(sorted(line.split(":")[1].strip().split("@")[0]
                         for line in _out(["ip", "-o", "link", "show"]).splitlines() if ":" in line))
    cg = Path("/sys/fs/cgroup")
    groups = tuple(sorted(str(p.relative_to(cg)) for p in cg.rglob("*") if p.is_dir() and prefix in p.name)) \
        if cg.is_dir() else ()
    state = settings.state_dir()
    return HostState(pf_driver=pf.driver, pf_numvfs=pf.sriov_numvfs, pf_autoprobe=pf.sriov_autoprobe,
                     pf_override=pf.driver_override, vfs=pf.virtfns, links=links,
                     netns=tuple(sorted(_out(["ip", "netns", "list"]).split())),
                     qemu_pids=_comm_pids("qemu-system"), sleep_pids=_comm_pids("sleep"), cgroups=groups,
                     state_files=tuple(sorted(p.name for p in state.glob("*.json"))) if state.is_dir() else ())


class InnerReport(Record):
    """OUT_DIR/inner.json: what the outer VM saw before and after the campaign."""

    pf: str
    pf_bdf: str
    sender: str
    iommu: IommuFacts
    pf_device: PciDevice
    before: HostState
    campaign_s: float | None = None      # None: the campaign did not end (see error)
    ran: int | None = None
    failed: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    error: str | None = None             # the exception the campaign ended with
    after: HostState | None = None
    leftovers: tuple[str, ...] = ()      # what differs after the run (empty: the host is as it was)
    inner_s: float | None = None


def leftovers(before: HostState, after: HostState) -> list[str]:
    """What differs after the run (empty: the host is as it was)."""
    out = []
    for key, old in asdict(before).items():
        new = getattr(after, key)
        if new != old:
            out.append(f"{key}: {old!r} before, {new!r} after")
    return out


def port_of(driver: str) -> tuple[str, str] | None:
    """(interface, PCI function) of the one network port driven by `driver`; None when there is none."""
    for net in sorted(Path("/sys/class/net").iterdir()):
        try:
            if os.path.basename(os.readlink(net / "device" / "driver")) == driver:
                return net.name, os.path.basename(os.readlink(net / "device"))
        except OSError:
            continue
    return None


def find_port(driver: str, timeout_s: float = PORT_TIMEOUT_S) -> tuple[str, str]:
    """`port_of(driver)`, polled until the driver (loaded just before) has made its interface."""
    deadline = time.monotonic() + timeout_s
    while (found := port_of(driver)) is None:
        if time.monotonic() > deadline:
            raise SystemExit(f"vfio lab: no network interface driven by {driver} in the outer VM after "
                             f"{timeout_s:g} s")
        time.sleep(0.1)
    return found


class PhaseLog(Progress):
    """Progress lines with the seconds since the campaign started, every phase too (the only view into
    the outer VM while it runs: its output.txt)."""

    def __init__(self, total: int):
        super().__init__(total, stream=sys.stdout, live=False)
        self.t0 = time.monotonic()

    def phase(self, name: str) -> None:
        print(f"{time.monotonic() - self.t0:8.1f}s {self._current} {name}", flush=True)


def mirror(src: Path, dst: Path, every_s: float = 30.0) -> threading.Event:
    """Copy the campaign (in the outer VM's tmpfs) to the shared OUT_DIR every `every_s` while it runs, so
    the sensor VMs' consoles and the samples can be followed from the host; set the event to stop."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            if src.exists():
                mirror_campaign(src, dst)

    threading.Thread(target=loop, name="mirror", daemon=True).start()
    return stop


def main(argv: list[str]) -> int:
    spec_json, out = Path(argv[0]), Path(argv[1])
    from idsbench.dispatch import run_campaign
    from idsbench.spec import spec_from_dict

    t0 = time.monotonic()
    proc.run(["modprobe", "-a", "vfio-pci", "igb"], check=False)  # no udev here: the admin's step
    pf_if, pf_bdf = find_port("igb")
    sender_if, _ = find_port("virtio_net")
    doc = json.loads(spec_json.read_text())
    doc.setdefault("wire", {}).update(sender_interface=sender_if, sensor_interface=pf_if)
    doc.setdefault("setup", {}).update(sriov_pf=pf_if)
    spec = spec_from_dict(doc, source=str(spec_json), base_dir=spec_json.parent)
    prefix = settings.name_prefix()
    facts = iommu_facts()
    before = host_state(pf_bdf, prefix)
    report = InnerReport(pf=pf_if, pf_bdf=pf_bdf, sender=sender_if, iommu=facts, pf_device=pci_device(pf_bdf),
                         before=before)
    shutil.rmtree(CAMPAIGN_TMP, ignore_errors=True)
    CAMPAIGN_TMP.parent.mkdir(parents=True, exist_ok=True)
    ok = False
    following = mirror(CAMPAIGN_TMP, out / LAB_CAMPAIGN_DIR)
    try:
        t1 = time.monotonic()
        result = run_campaign(spec, CAMPAIGN_TMP, progress=PhaseLog(len(spec.setup.kinds) * spec.samples))
        report = report.model_copy(update={"campaign_s": round(time.monotonic() - t1, 1), "ran": result.ran,
                                           "failed": tuple(result.failed), "warnings": tuple(result.warnings)})
        ok = not result.failed
    except Exception as exc:  # reported, then the host state is still checked
        report = report.model_copy(update={"error": f"{type(exc).__name__}: {exc}"})
    finally:
        following.set()
        after = host_state(pf_bdf, prefix)
        left = leftovers(before, after)
        report = report.model_copy(update={"after": after, "leftovers": tuple(left),
                                           "inner_s": round(time.monotonic() - t0, 1)})
        if CAMPAIGN_TMP.exists():
            mirror_campaign(CAMPAIGN_TMP, out / LAB_CAMPAIGN_DIR)
        write_lab_inner(out, report)
    print(f"vfio lab: campaign {'ok' if ok else 'FAILED'}; leftovers: {left or 'none'}")
    return 0 if ok and not left else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
