"""The wire between sender and sensor: network namespaces joined by a veth pair (netns), and the
macvtap through which container-vtap and VM sensors see it (macvtap)."""
