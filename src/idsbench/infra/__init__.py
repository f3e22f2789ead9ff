"""Host infrastructure the setups build on: cgroups (limits and accounting, v1 and v2) and the
cached Debian root filesystem that container images and VM disks are made from."""
