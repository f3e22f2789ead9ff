"""Exec a program with files opened at fixed descriptor numbers (how qemu gets the macvtap fd).

    python -m idsbench.setups.vm_exec --open 3=/run/.../tap -- qemu-system-x86_64 ... -netdev tap,fd=3

The supervisor starts this helper like any child (session, cgroup, affinity); it opens the files
read-write without close-on-exec and replaces itself with the program, keeping its PID.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: vm_exec [--open FD=PATH]... -- PROGRAM [ARG]...", file=sys.stderr)
        return 2
    split = argv.index("--")
    opts, program = argv[:split], argv[split + 1:]
    if not program or len(opts) % 2:
        print("vm_exec: expected --open FD=PATH pairs and a program", file=sys.stderr)
        return 2
    for flag, spec in zip(opts[::2], opts[1::2]):
        fd_text, _, path = spec.partition("=")
        if flag != "--open" or not fd_text.isdigit() or not path:
            print(f"vm_exec: bad option {flag} {spec}", file=sys.stderr)
            return 2
        fd = os.open(path, os.O_RDWR)
        if fd != int(fd_text):
            os.dup2(fd, int(fd_text), inheritable=True)
            os.close(fd)
        else:
            os.set_inheritable(fd, True)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        print(f"vm_exec: cannot run {program[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
