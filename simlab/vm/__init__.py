"""Real-kernel nodes: GPU nodes as QEMU virtual machines.

Where the podman twin answers with a FUSE sysfs and tool twins that this
project wrote, a VM node runs a real Debian 12 kernel, systemd, udev,
NetworkManager, rdma-core and perftest, with emulated hardware that real
drivers bind to:

* q35 with the emulated Intel VT-d IOMMU (present only while the node's BIOS
  has VT-d enabled, as firmware would do);
* one or two Intel 82576 NICs (``igb``, PCI id 8086:10c9) as the fabric: real
  SR-IOV PFs with up to 7 VFs bound by ``igbvf``; RoCE v2 over them with
  Soft-RoCE (``rdma_rxe``);
* a virtio management NIC with SSH forwarded to 127.0.0.1 only.

QEMU 10 (Debian 13's, the first Debian QEMU with ``igb``) runs from a
debootstrap tree under ``out/vm`` through that tree's own dynamic loader, so
the machine running the lab needs nothing but debootstrap.  The guest boots
through its own GRUB from a disk image built once (:mod:`simlab.vm.image`);
each node gets a copy-on-write overlay of it.
"""
