"""The lab host image: the cached Debian rootfs with the host's Suricata, plus sshd, tcpreplay and a
Python venv holding idsbench's dependencies (not idsbench: provisioning installs that, as on a
real host). Built once per machine and dependency set; the lab never reaches a registry itself.

    ref = ensure_lab_image(cache_dir, log)     # localhost/idsbench-labhost:<key>
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.hosts.wheel import dependency_pins
from idsbench.setups.container.image import ensure_image
from idsbench.setups.container.runtime import podman_runtime, ulimit_args
from idsbench.setups.container.setup import host_suricata_version

REPOSITORY = "localhost/idsbench-labhost"
LAB_PACKAGES = ("openssh-server", "tcpreplay", "python3", "python3-venv", "ethtool", "iproute2", "sudo", "procps",
                "gcc", "libc6-dev")  # the C compiler builds idsbench's native programs (ibreplay…) on the host
VENV = "/opt/idsbench/venv"
LAB_IMAGE_VERSION = "1"  # bump when the Containerfile below changes
BUILD_TIMEOUT_S = 1200.0
CONTAINERFILE = """\
FROM {base}
COPY wheels /tmp/idsbench-wheels
RUN python3 -m venv {venv} \\
 && {venv}/bin/pip install --no-index --no-cache-dir --disable-pip-version-check -q \\
    --find-links /tmp/idsbench-wheels -r /tmp/idsbench-wheels/requirements.txt \\
 && rm -rf /tmp/idsbench-wheels \\
 && mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh
LABEL org.idsbench.labhost={key}
"""

Log = Callable[[str], None]


def image_exists(ref: str) -> bool:
    return proc.run(podman_runtime().argv("image", "exists", ref), check=False, timeout=60).returncode == 0


def ensure_lab_image(cache_dir: Path, log: Log | None = None) -> str:
    say = log or (lambda _l: None)
    rt = podman_runtime()
    base = ensure_image(rt, cache_dir, host_suricata_version(), LAB_PACKAGES, log=say)
    pins = dependency_pins()
    key = hashlib.sha256(json.dumps([LAB_IMAGE_VERSION, base.ref, pins]).encode()).hexdigest()[:12]
    ref = f"{REPOSITORY}:{key}"
    if image_exists(ref):
        return ref
    pins_key = hashlib.sha256(json.dumps(pins).encode()).hexdigest()[:12]
    wheels = download_wheels(pins, Path(cache_dir) / "lab" / f"wheels-{pins_key}", say)
    with tempfile.TemporaryDirectory(prefix="idsbench-labimage-") as tmp:
        context = Path(tmp)
        shutil.copytree(wheels, context / "wheels")
        (context / "wheels" / "requirements.txt").write_text("".join(f"{n}=={v}\n" for n, v in pins.items()))
        (context / "Containerfile").write_text(CONTAINERFILE.format(base=base.ref, venv=VENV, key=key))
        say(f"build the lab host image {ref}")
        done = proc.run(rt.argv("build", "--pull=never", "--network", "none", *ulimit_args(), "-t", ref,
                                "-f", str(context / "Containerfile"), str(context)),
                        timeout=BUILD_TIMEOUT_S, check=False)
    if done.returncode != 0 or not image_exists(ref):
        raise EnvironmentMissing(f"Building the lab host image failed: {(done.stderr or done.stdout)[-800:]}",
                                 fix="check podman (`podman --runtime runc info`) and free disk space.")
    return ref


def download_wheels(pins: dict[str, str], dest: Path, log: Log) -> Path:
    """Binary wheels of exactly the controller's dependency versions (cached)."""
    done_marker = dest / ".complete"
    wanted = "\n".join(f"{n}=={v}" for n, v in pins.items()) + "\n"
    if done_marker.is_file() and done_marker.read_text() == wanted:
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    log(f"download {len(pins)} dependency wheels into {dest}")
    done = proc.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                     "--disable-pip-version-check", "-q", "-d", str(dest),
                     *(f"{n}=={v}" for n, v in pins.items())], timeout=BUILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise EnvironmentMissing(f"Downloading the lab's dependency wheels failed: {(done.stderr or done.stdout)[-600:]}",
                                 fix="the controller needs PyPI access once to build the lab image.")
    done_marker.write_text(wanted)
    return dest
