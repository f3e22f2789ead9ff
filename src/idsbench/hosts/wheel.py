"""idsbench as a wheel for the hosts (built once per source digest), and its dependency pins.

Hosts must run the very code the controller runs: the wheel is built from this checkout
(`pip wheel --no-deps`), cached under `<cache>/hosts/wheels/<digest>/`, and a host's installed
package is compared with `digest.digest()` before any sample runs.
"""

from __future__ import annotations

import fcntl
import importlib.metadata as metadata
import importlib.util
import shutil
import sys
from pathlib import Path

from idsbench import proc
from idsbench.errors import EnvironmentMissing
from idsbench.hosts.digest import PACKAGE_DIR, digest

WHEEL_TIMEOUT_S = 300.0


def project_root() -> Path:
    """The source checkout holding this package (src layout), or EnvironmentMissing."""
    root = PACKAGE_DIR.parents[1]
    if PACKAGE_DIR.parent.name == "src" and (root / "pyproject.toml").is_file():
        return root
    raise EnvironmentMissing(
        f"idsbench is installed from a wheel ({PACKAGE_DIR}), not a source checkout, so no wheel of "
        "exactly this code can be built for the hosts.",
        fix="install idsbench editable from its checkout (`make setup`) on the controller.")


def build_wheel(cache_dir: Path) -> Path:
    """The wheel of the running code; built when this digest has none yet."""
    key = digest()
    base = Path(cache_dir) / "hosts" / "wheels"
    out = base / key
    base.mkdir(parents=True, exist_ok=True)
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted(out.glob("idsbench-*.whl"))
        if found:
            return found[0]
        tmp = base / f"{key}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        # setuptools needs the `wheel` package to build one; without it, let pip fetch both (PyPI).
        isolation = [] if importlib.util.find_spec("wheel") is None else ["--no-build-isolation"]
        done = proc.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation,
                         "--disable-pip-version-check", "-q", "-w", str(tmp), str(project_root())],
                        timeout=WHEEL_TIMEOUT_S, check=False)
        wheels = sorted(tmp.glob("idsbench-*.whl"))
        if done.returncode != 0 or not wheels:
            shutil.rmtree(tmp, ignore_errors=True)
            raise EnvironmentMissing(f"Building the idsbench wheel failed: {(done.stderr or done.stdout)[-600:]}",
                                     fix="check that `pip wheel .` works in the checkout.")
        for extra in tmp.iterdir():
            if extra not in wheels[:1]:
                extra.unlink()
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
        # build/ of setuptools would otherwise keep stale copies of removed modules
        shutil.rmtree(project_root() / "build", ignore_errors=True)
        return sorted(out.glob("idsbench-*.whl"))[0]


def dependency_pins(dist: str = "idsbench") -> dict[str, str]:
    """name -> installed version of every runtime dependency of `dist` (closure, no extras)."""
    from packaging.requirements import Requirement  # a dependency of ansible-core (controller only)

    pins: dict[str, str] = {}
    todo = [dist]
    seen = {dist.lower()}
    while todo:
        for text in metadata.requires(todo.pop()) or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            name = req.name.lower().replace("_", "-")
            if name in seen:
                continue
            seen.add(name)
            try:
                pins[name] = metadata.version(req.name)
            except metadata.PackageNotFoundError as exc:
                raise EnvironmentMissing(f"{req.name} (needed by {dist}) is not installed on the controller.",
                                         fix="run `make setup`.") from exc
            todo.append(req.name)
    return dict(sorted(pins.items()))
