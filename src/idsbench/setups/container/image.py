"""The sensor image: the cached rootfs (`rootfs.py`) imported into podman/docker, once per machine.

The image is `localhost/idsbench-suricata:<suricata version>-<rootfs hash>`; its labels record the
Suricata version and the rootfs key. A setup refuses an image whose Suricata differs from the host's
(container and bare-metal results must come from the same engine).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.infra import rootfs
from idsbench.setups.container.runtime import Runtime

REPOSITORY = "localhost/idsbench-suricata"
LABEL_VERSION = "org.idsbench.suricata-version"
LABEL_ROOTFS = "org.idsbench.rootfs"
IMPORT_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class Image:
    ref: str
    suricata_version: str
    rootfs_key: str
    built_now: bool = False
    build_s: float = 0.0


def image_ref(manifest: rootfs.Manifest) -> str:
    digest = hashlib.sha256(manifest.key.encode()).hexdigest()[:10]
    return f"{REPOSITORY}:{manifest.suricata_version}-{digest}"


def parse_labels(inspect_output: str) -> dict[str, str]:
    text = inspect_output.strip()
    if not text or text in ("null", "<no value>", "map[]"):
        return {}
    return dict(json.loads(text))


def check_version(image: Image, host_version: str) -> None:
    if image.suricata_version != host_version:
        raise EnvironmentMissing(
            f"The container image {image.ref} holds Suricata {image.suricata_version}, but the host "
            f"runs {host_version}: container and bare-metal results would not be comparable.",
            fix=f"remove the image (`podman rmi {image.ref}` / `docker rmi {image.ref}`) and its "
            "rootfs under <cache>/rootfs; the next run rebuilds both from the host's Suricata source.",
        )


def existing_image(rt: Runtime, ref: str) -> Image | None:
    done = proc.run(rt.argv("image", "inspect", "--format", "{{json .Config.Labels}}", ref),
                   check=False, timeout=60)
    if done.returncode != 0:
        return None
    labels = parse_labels(done.stdout)
    if LABEL_VERSION not in labels:
        return None
    return Image(ref, labels[LABEL_VERSION], labels.get(LABEL_ROOTFS, ""))


def ensure_image(rt: Runtime, cache_dir: Path, host_version: str, extra_packages: Sequence[str] = (),
                 log: Callable[[str], None] | None = None) -> Image:
    """The runtime's sensor image, importing the (cached) rootfs when the runtime lacks it."""
    root = rootfs.ensure_rootfs(cache_dir, extra_packages, log=log)
    manifest = rootfs.read_manifest(root)
    ref = image_ref(manifest)
    found = existing_image(rt, ref)
    if found is not None:
        check_version(found, host_version)
        return found
    started = time.monotonic()
    tarball = Path(cache_dir) / "rootfs" / f"{manifest.key}.import-{os.getpid()}.tar"
    try:
        (log or (lambda _l: None))(f"import the rootfs into {rt.name} as {ref}")
        _run(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", str(tarball), "."], "pack")
        _run(rt.argv("import",
                          "--change", f"LABEL {LABEL_VERSION}={manifest.suricata_version}",
                          "--change", f"LABEL {LABEL_ROOTFS}={manifest.key}",
                          "--change", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                          "--change", 'CMD ["/bin/sh"]',
                          str(tarball), ref), "import")
    finally:
        tarball.unlink(missing_ok=True)
    made = existing_image(rt, ref)
    if made is None:
        raise EnvironmentMissing(f"{rt.name} import of {ref} left no labelled image.",
                                 fix=f"check `{rt.name} images`; remove {ref} and retry.")
    check_version(made, host_version)
    return Image(made.ref, made.suricata_version, made.rootfs_key, True, round(time.monotonic() - started, 1))


def _run(argv: list[str], what: str) -> None:
    done = proc.run(argv, check=False, timeout=IMPORT_TIMEOUT_S)
    if done.returncode != 0:
        raise EnvironmentMissing(
            f"Building the sensor image failed ({what}: `{' '.join(argv[:4])} …`, exit "
            f"{done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}",
            fix="check free disk space under the cache dir and the runtime's storage; retry.",
        )
