"""The base of every stored record: frozen, and unknown keys of newer or older files ignored."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Frozen; unknown keys of newer or older files are ignored (never an error when reading)."""

    model_config = ConfigDict(frozen=True, extra="ignore")
