"""Exec shim: prepare the process, then become the program (same PID).

    python -I -S execshim.py [--cgroup-procs FILE]... [--cpus 0,2] [--open FD=PATH]... -- PROGRAM [ARG]...

`--cgroup-procs`: write our PID into each cgroup.procs file (so the program starts inside the
cgroup: every byte it allocates and every CPU cycle it uses are charged there); `--cpus`: CPU
affinity; `--open`: open PATH read-write at descriptor FD and keep it across exec (how qemu gets
the macvtap fd). The supervisor runs this file instead of using `preexec_fn`, which is unsafe
while other threads (the monitor) run. Standard library only: it runs with `-I -S` (fast start).
"""

from __future__ import annotations

import os
import sys


def _usage(message: str) -> int:
    print(f"execshim: {message}; usage: execshim [--cgroup-procs FILE]... [--cpus LIST] "
          "[--open FD=PATH]... -- PROGRAM [ARG]...", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    if "--" not in argv:
        return _usage("no -- before the program")
    split = argv.index("--")
    opts, program = argv[:split], argv[split + 1:]
    if not program or len(opts) % 2:
        return _usage("expected OPTION VALUE pairs and a program")
    for flag, value in zip(opts[::2], opts[1::2]):
        if flag == "--cgroup-procs":
            with open(value, "w") as fh:
                fh.write("0")
        elif flag == "--cpus":
            os.sched_setaffinity(0, {int(c) for c in value.split(",") if c})
        elif flag == "--open":
            fd_text, _, path = value.partition("=")
            if not fd_text.isdigit() or not path:
                return _usage(f"bad --open {value}")
            fd = os.open(path, os.O_RDWR)
            if fd != int(fd_text):
                os.dup2(fd, int(fd_text), inheritable=True)
                os.close(fd)
            else:
                os.set_inheritable(fd, True)
        else:
            return _usage(f"unknown option {flag}")
    try:
        os.execvp(program[0], program)  # the shim's whole purpose: become the program (proc.py starts the shim)
    except OSError as exc:
        print(f"execshim: cannot run {program[0]}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
