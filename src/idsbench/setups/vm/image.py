"""The VM guest image: a Debian rootfs (with Suricata and a kernel) turned into a bootable,
cached triple kernel + initrd + raw ext4 disk, with idsbench's guest init installed.

The rootfs comes from `infra.rootfs.ensure_rootfs` (debootstrap, cached); the disk is made with
`mkfs.ext4 -d` (no loop mount) and the init written into it with `debugfs`, so the shared rootfs
is never modified. VMs boot it with `snapshot=on`: the cached disk is never written.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.resources
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.infra.rootfs import ensure_rootfs

IMAGE_FORMAT = 1
GUEST_INIT = "/usr/local/sbin/idsbench-init"
# What the guest needs beyond the container rootfs: a kernel (with its initrd), the tools the
# init uses to set up the capture NIC, and mountpoint/kmod for boot.
GUEST_PACKAGES = ("linux-image-amd64", "iproute2", "ethtool", "kmod", "util-linux")
DISK_SLACK_BYTES = 384 * 1024**2


@dataclass(frozen=True)
class GuestImage:
    dir: Path
    kernel: Path
    initrd: Path
    disk: Path
    kernel_release: str
    suricata_version: str
    key: str
    build_s: float

    def to_json(self) -> dict[str, object]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


def init_script() -> bytes:
    return (importlib.resources.files("idsbench.setups.vm") / "guest_files" / "idsbench-init").read_bytes()


def image_key(rootfs: Path) -> str:
    """Changes when the rootfs is rebuilt (its dpkg status), the guest init or this format change."""
    status = rootfs / "var" / "lib" / "dpkg" / "status"
    try:
        packages = hashlib.sha256(status.read_bytes()).hexdigest()
    except OSError as exc:
        raise EnvironmentMissing(f"{rootfs} is not a Debian rootfs ({status} unreadable).",
                                 fix="remove it from the cache dir so it is rebuilt.") from exc
    h = hashlib.sha256(f"{IMAGE_FORMAT}\0{rootfs.resolve()}\0{packages}\0".encode())
    h.update(init_script())
    return h.hexdigest()[:16]


def find_kernel(rootfs: Path) -> tuple[str, Path, Path]:
    """(release, vmlinuz, initrd) of the newest kernel installed in the rootfs."""
    found = []
    for vmlinuz in (rootfs / "boot").glob("vmlinuz-*"):
        release = vmlinuz.name.removeprefix("vmlinuz-")
        initrd = rootfs / "boot" / f"initrd.img-{release}"
        if initrd.is_file():
            found.append((_release_sort_key(release), release, vmlinuz, initrd))
    if not found:
        raise EnvironmentMissing(
            f"no kernel with an initrd in {rootfs}/boot.",
            fix="the guest rootfs needs the package linux-image-amd64 (with initramfs-tools); "
                "remove the cached rootfs so it is rebuilt with it.",
        )
    _, release, vmlinuz, initrd = max(found)
    return release, vmlinuz, initrd


def _release_sort_key(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release))


def suricata_version_in(rootfs: Path) -> str:
    done = proc.run(["chroot", str(rootfs), "suricata", "-V"], timeout=60, check=False)
    match = re.search(r"version (\S+)", done.stdout + done.stderr)
    if done.returncode != 0 or not match:
        raise EnvironmentMissing(
            f"Suricata does not run inside the guest rootfs {rootfs} (exit {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[:300]}",
            fix="remove the cached rootfs so it is rebuilt with suricata.",
        )
    return match.group(1)


def load_image(image_dir: Path) -> GuestImage | None:
    """The cached image in `image_dir`, or None when there is none (or it is incomplete)."""
    try:
        doc = json.loads((image_dir / "image.json").read_text())
        image = GuestImage(dir=Path(doc["dir"]), kernel=Path(doc["kernel"]), initrd=Path(doc["initrd"]),
                           disk=Path(doc["disk"]), kernel_release=str(doc["kernel_release"]),
                           suricata_version=str(doc["suricata_version"]), key=str(doc["key"]),
                           build_s=float(doc["build_s"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not all(p.is_file() for p in (image.kernel, image.initrd, image.disk)):
        return None
    return image


def cached_images(cache_dir: Path) -> list[GuestImage]:
    root = cache_dir / "vm"
    images = [load_image(d) for d in sorted(root.glob("image-*"))] if root.is_dir() else []
    return [i for i in images if i is not None]


def ensure_image(cache_dir: Path, rootfs: Path | None = None, extra_packages: tuple[str, ...] = ()) -> GuestImage:
    """The guest image for `rootfs` (default: the shared rootfs with GUEST_PACKAGES), built once."""
    if rootfs is None:
        rootfs = ensure_rootfs(cache_dir, extra_packages=(*GUEST_PACKAGES, *extra_packages))
    rootfs = Path(rootfs)
    key = image_key(rootfs)
    root = cache_dir / "vm"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"image-{key}"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per cache dir; the others wait and reuse
        image = load_image(final)
        if image is not None:
            return image
        return _build(rootfs, key, final)


def _build(rootfs: Path, key: str, final: Path) -> GuestImage:
    for prog, pkg in (("mkfs.ext4", "e2fsprogs"), ("debugfs", "e2fsprogs"), ("chroot", "coreutils")):
        if shutil.which(prog) is None:
            raise EnvironmentMissing(f"`{prog}` is needed to build the VM guest image.",
                                     fix=f"apt-get install {pkg}")
    t0 = time.monotonic()
    release, vmlinuz, initrd = find_kernel(rootfs)
    version = suricata_version_in(rootfs)
    shutil.rmtree(final, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{key}-", dir=final.parent))
    try:
        shutil.copyfile(vmlinuz, work / "vmlinuz")
        shutil.copyfile(initrd, work / "initrd.img")
        disk = work / "root.img"
        with open(disk, "wb") as fh:
            fh.truncate(_disk_size(rootfs))
        proc.run(["mkfs.ext4", "-q", "-F", "-L", "idsroot", "-E", "root_owner=0:0", "-d", str(rootfs),
                 str(disk)], timeout=1800)
        _install_init(disk, work)
        image = GuestImage(dir=final, kernel=final / "vmlinuz", initrd=final / "initrd.img",
                           disk=final / "root.img", kernel_release=release, suricata_version=version,
                           key=key, build_s=round(time.monotonic() - t0, 1))
        (work / "image.json").write_text(json.dumps(image.to_json(), indent=1))
        os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return image


def _disk_size(rootfs: Path) -> int:
    used = 0
    for dirpath, dirnames, filenames in os.walk(rootfs):
        for name in dirnames + filenames:
            try:
                used += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                continue
    size = int(used * 1.15) + DISK_SLACK_BYTES
    return (size + (1 << 20) - 1) & ~((1 << 20) - 1)  # whole MiB


def _install_init(disk: Path, work: Path) -> None:
    """Write the guest init into the ext4 image (debugfs, no mount)."""
    src = work / "idsbench-init"
    src.write_bytes(init_script())
    parent = os.path.dirname(GUEST_INIT)
    commands = "\n".join([
        f"mkdir {parent}",  # an error if it exists; debugfs carries on
        f"write {src} {GUEST_INIT}",
        f"set_inode_field {GUEST_INIT} mode 0100755",
        f"set_inode_field {GUEST_INIT} uid 0",
        f"set_inode_field {GUEST_INIT} gid 0",
    ]) + "\n"
    script = work / "debugfs.cmd"
    script.write_text(commands)
    proc.run(["debugfs", "-w", "-f", str(script), str(disk)], timeout=120)
    check = proc.run(["debugfs", "-R", f"stat {GUEST_INIT}", str(disk)], timeout=60, check=False)
    if "Size: " not in check.stdout or f"Size: {len(init_script())}" not in check.stdout:
        raise EnvironmentMissing(f"could not install the guest init into {disk}: {check.stdout[:300]}",
                                 fix="check that e2fsprogs' debugfs works on this host.")
    src.unlink()
    script.unlink()
