"""vm-vfio: a sensor VM owning a PCI function through VFIO (a whole NIC, or an SR-IOV VF)."""
