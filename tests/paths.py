"""Where tests find the shared inputs: `../shared` beside the repository root (never an absolute path)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PCAPS = SHARED / "data" / "pcaps"
RULES = SHARED / "data" / "rules"
ET_OPEN = RULES / "et-open-2024-04-12.rules"
SOURCES = SHARED / "src"
