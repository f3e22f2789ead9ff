"""Sensor setups (baremetal, container, vm) and the cgroups that hold them to their limits."""
