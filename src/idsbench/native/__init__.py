"""Small native programs shipped as C sources in this package and built on first use.

`program(name)` compiles `native/src/<name>.c` with the system C compiler into
`<cache>/native/<name>-<digest>` (digest of the source, the flags and the compiler version), once
per machine; concurrent builders wait on a lock and reuse the result. `make setup` builds them all
ahead of time (`python -m idsbench.native`), so a run never waits for a compiler.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from idsbench import proc, settings
from idsbench.buildonce import build_once
from idsbench.errors import EnvironmentMissing

SRC = Path(__file__).resolve().parent / "src"  # package data (pyproject: native/src/*)
CFLAGS = ("-O2", "-g", "-Wall", "-Wextra", "-std=gnu11")
# Extra compiler/linker flags per program (every native/src/<name>.c is a program).
# ibsynth is a shared library (loaded with ctypes), not a program; ibmemlock one Suricata preloads (bypass).
# ibcapture and ibtick are static: the capture engine mounts them into containers and VM guests as they are,
# whatever C library the image has.
EXTRA_FLAGS: dict[str, tuple[str, ...]] = {"ibreplay": ("-pthread", "-lm"), "ibtrace": ("-lm",),
                                           "ibsynth": ("-shared", "-fPIC"), "ibcapture": ("-pthread", "-static"),
                                           "ibmemlock": ("-shared", "-fPIC", "-ldl"),
                                           "ibtick": ("-static",),
                                           "ibtimer": ("-static",), "ibtsc": ("-static",)}


def names() -> list[str]:
    """Every program shipped: the stems of native/src/*.c."""
    return sorted(p.stem for p in SRC.glob("*.c"))


def source_path(name: str) -> Path:
    return SRC / f"{name}.c"


def _compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise EnvironmentMissing("No C compiler found to build idsbench's native programs.",
                                 fix="apt-get install gcc (`make setup` does it).")
    return cc


def _flags(name: str) -> tuple[str, ...]:
    return (*CFLAGS, *EXTRA_FLAGS.get(name, ()))


def _digest(name: str, cc: str) -> str:
    h = hashlib.sha256(source_path(name).read_bytes())
    for header in sorted(source_path(name).parent.glob("*.h")):  # shared headers the sources include
        h.update(header.name.encode() + b"\0" + header.read_bytes())
    h.update("\0".join(_flags(name)).encode())
    h.update(_compiler_identity(cc).encode())
    return h.hexdigest()[:16]


def _compiler_identity(cc: str) -> str:
    """The compiler binary (symlinks resolved) with its size and mtime: changes when the compiler is
    upgraded, and costs a stat rather than running `cc --version` (~0.1 s on a busy host) on every
    lookup of a program."""
    path = shutil.which(cc) or cc
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError as exc:
        raise EnvironmentMissing(f"The C compiler {cc} cannot be found ({exc}).",
                                 fix="reinstall gcc (apt-get install gcc).") from exc
    return f"{real}|{st.st_size}|{st.st_mtime_ns}"


def program(name: str, cache: Path | None = None) -> Path:
    """Path of the built program `name`, building it first when the cache lacks it."""
    if not source_path(name).is_file():
        raise KeyError(f"no native program {name!r}; known: {', '.join(names())}")
    cc = _compiler()
    target = (cache or settings.cache_dir()) / "native" / f"{name}-{_digest(name, cc)}"

    def compile_to(tmp: Path) -> None:
        argv = [cc, *CFLAGS, "-o", str(tmp), str(source_path(name)), *EXTRA_FLAGS.get(name, ())]
        done = proc.run(argv, timeout=600, check=False)
        if done.returncode != 0:
            raise EnvironmentMissing(
                f"Building the native program {name} failed (`{' '.join(argv)}`): "
                f"{done.stderr.strip()[-800:]}",
                fix="check that gcc and the C library headers are installed (apt-get install gcc libc6-dev).")

    return build_once(target, compile_to)


def build_all(cache: Path | None = None) -> dict[str, Path]:
    return {name: program(name, cache) for name in names()}


def main() -> int:
    for name, path in build_all().items():
        print(f"native: {name} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
