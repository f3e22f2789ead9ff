"""The container and container-vtap setups (setup): podman/docker drivers (runtime), idsbench's own
dockerd (dockerd), the sensor image (image) and container accounting and OOM detection (monitor)."""
