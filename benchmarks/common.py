"""What every benchmark ends with: its misses, and an exit status that says whether it met its targets."""

from __future__ import annotations


def finish(misses: list[str]) -> int:
    """Print the targets missed (or that all were met); 1 if any was missed."""
    if misses:
        print("\nMISSED targets:\n  " + "\n  ".join(misses))
        return 1
    print("\nall targets met")
    return 0
