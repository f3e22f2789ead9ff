"""The vm setup: the sensor in a QEMU guest fed by a macvtap (setup), the qemu command line and
accelerator choice (qemu), the guest image (image), the host↔guest control channel (guest), the
guest's files (guest_files/idsbench-init) and the VM's monitor sources (monitor)."""
