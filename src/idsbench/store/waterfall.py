"""The loss waterfall as stored: where the packets of a sample or trial went (a search trial's
`waterfall` in search.json; `loss_ratio` is written beside the counts and recomputed when read).
`idsbench.accounting` computes it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field


class Waterfall(BaseModel):
    """Where the packets of a sample or trial went (frozen; unknown keys of stored files are ignored)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    sent: int
    loss_sender_pkts: int = 0
    loss_wire_pkts: int = 0
    loss_nic_pkts: int = 0
    loss_softnet_pkts: int = 0
    loss_capture_pkts: int = 0
    unprocessed_pkts: int = 0
    decoded_pkts: int = 0
    bypassed_pkts: int = 0          # dropped by design (bypassed flows): neither lost nor inspected
    unaccounted_pkts: int = 0
    invisible: tuple[str, ...] = ()

    @property
    def lost_pkts(self) -> int:
        return (self.loss_sender_pkts + self.loss_wire_pkts + self.loss_nic_pkts + self.loss_softnet_pkts
                + self.loss_capture_pkts)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def loss_ratio(self) -> float:
        """Every loss (and anything unaccounted) over what was sent: the search oracle."""
        if self.sent <= 0:
            return 0.0
        return (self.lost_pkts + max(0, self.unaccounted_pkts)) / self.sent
