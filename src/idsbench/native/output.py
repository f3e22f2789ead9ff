"""What a native program reports: the JSON object on its last line of output."""

from __future__ import annotations

import json


def json_report(text: str, program: str) -> tuple[dict[str, object] | None, str]:
    """The JSON object a native probe program printed as its last line, else (None, why not)."""
    try:
        doc = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
    except json.JSONDecodeError as exc:
        return None, f"{program} printed no JSON ({exc}): {text.strip()[:200]!r}"
    if not isinstance(doc, dict):
        return None, f"{program} printed no JSON object: {text.strip()[:200]!r}"
    return doc, ""
