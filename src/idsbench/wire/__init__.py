"""The wire between sender and sensor: network namespaces joined by a veth pair (embedded default)."""
