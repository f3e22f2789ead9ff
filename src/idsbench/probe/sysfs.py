"""Small readers for sysfs/procfs files under a root directory (`/` on a live host, a fake tree in tests)."""

from __future__ import annotations

from pathlib import Path


def read_text(path: Path) -> str | None:
    """The file's stripped text, or None when it is absent or unreadable."""
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.split()[0]) if text else None
    except ValueError:
        return None


def parse_cpulist(text: str | None) -> list[int]:
    """"0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]; "" or None -> []. Stride forms (0-7:2) too."""
    out: list[int] = []
    if not text:
        return out
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        stride = 1
        if ":" in part:
            part, stride_text = part.split(":", 1)
            stride = int(stride_text.split("/")[0])
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.extend(range(int(lo), int(hi) + 1, stride))
        else:
            out.append(int(part))
    return sorted(set(out))


def format_cpulist(cpus: list[int] | tuple[int, ...]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's own notation)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def bracketed_choice(text: str | None) -> str | None:
    """"always [madvise] never" -> "madvise" (sysfs marks the active choice)."""
    if not text:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text.strip() or None
