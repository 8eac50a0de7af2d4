"""A sysfs tree laid out as a real kernel lays it out, in a tmp dir, for the
NICs of the QEMU VM nodes (q35, Debian 12, kernel 6.1): a virtio-net
management NIC, emulated Intel 82576 (igb, 8086:10c9) PFs with SR-IOV (VFs
8086:10ca bound by igbvf) and, for mixed nodes, a ConnectX-7 PF.

The layout, from the kernel source:

- every device is a directory under ``devices/``: a PCI function under its
  host bridge (``devices/pci0000:00/0000:00:03.0``) or under the bridge it
  sits behind (``.../0000:00:02.0/0000:01:00.0``); ``bus/pci/devices/<bdf>``
  and ``class/net/<if>`` are relative symlinks into it.
- a netdev is a directory ``net/<if>`` under the device its driver gave it
  with SET_NETDEV_DEV, and ``net/<if>/device`` links back to that device.
  igb, igbvf and mlx5 give the PCI function, so ``class/net/<if>/device`` ->
  ``../../../0000:01:00.0``. virtio_net gives the virtio device
  (drivers/net/virtio_net.c ``virtnet_probe``: ``SET_NETDEV_DEV(dev,
  &vdev->dev)``), which register_virtio_device names ``virtio<N>``
  (drivers/virtio/virtio.c: ``dev_set_name(&dev->dev, "virtio%u",
  dev->index)``) and whose parent is the PCI function
  (drivers/virtio/virtio_pci_common.c ``virtio_pci_probe``:
  ``vp_dev->vdev.dev.parent = &pci_dev->dev``). So the netdev is at
  ``devices/pci0000:00/0000:00:03.0/virtio2/net/eth0``, the PCI function has
  no ``net/`` of its own, and ``class/net/eth0/device`` -> ``../../../virtio2``.
- ``lo`` is ``devices/virtual/net/lo`` and has no ``device`` link.
- the ``sriov_*`` files exist only on a PF whose SR-IOV capability has
  TotalVFs > 0 (drivers/pci/iov.c ``sriov_attrs_are_visible``); a VF has a
  ``physfn`` link and the PF ``virtfn<N>`` links, both ``../<bdf>``
  (Documentation/ABI/testing/sysfs-bus-pci).
"""

import os


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text if text.endswith("\n") else text + "\n")


def _link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


class RealSysfs(object):
    """Builds the tree under ``root`` (``<tmp>/sys``)."""

    def __init__(self, root):
        self.root = str(root)
        for d in ("bus/pci/devices", "class/net", "class/infiniband", "devices/virtual/net/lo", "module"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        _write(os.path.join(self.root, "devices/virtual/net/lo/mtu"), "65536")
        _link(os.path.join(self.root, "class/net/lo"), "../../devices/virtual/net/lo")

    def _dev(self, rel):
        return os.path.join(self.root, "devices", rel)

    def pci(self, rel, vendor, device, cls="0x020000", driver=None, numa_node=-1):
        """A PCI function at devices/<rel> (rel like pci0000:00/0000:00:03.0)."""
        bdf = os.path.basename(rel)
        path = self._dev(rel)
        _write(os.path.join(path, "vendor"), "0x" + vendor)
        _write(os.path.join(path, "device"), "0x" + device)
        _write(os.path.join(path, "class"), cls)
        _write(os.path.join(path, "numa_node"), str(numa_node))
        depth = rel.count("/") + 1
        _link(os.path.join(self.root, "bus/pci/devices", bdf), "../../../devices/" + rel)
        if driver:
            os.makedirs(os.path.join(self.root, "bus/pci/drivers", driver), exist_ok=True)
            _link(os.path.join(path, "driver"), "../" * (depth + 1) + "bus/pci/drivers/" + driver)
        return path

    def netdev(self, owner_rel, name, mac="52:54:00:12:34:56", mtu=1500, speed=1000):
        """A netdev under the device at devices/<owner_rel>, as its driver's
        SET_NETDEV_DEV puts it, with class/net/<name>."""
        path = self._dev(owner_rel + "/net/" + name)
        for key, value in (("address", mac), ("mtu", mtu), ("type", 1), ("operstate", "up"), ("speed", speed)):
            _write(os.path.join(path, key), str(value))
        _link(os.path.join(path, "device"), "../../../" + os.path.basename(owner_rel))
        _link(os.path.join(self.root, "class/net", name), "../../devices/" + owner_rel + "/net/" + name)
        return path

    def virtio_net(self, bdf="0000:00:03.0", index=2, name="eth0", driver_bound=True):
        """virtio-net over virtio-pci (1af4:1041): the netdev under virtio<index>."""
        rel = "pci0000:00/" + bdf
        self.pci(rel, "1af4", "1041", driver="virtio-pci" if driver_bound else None)
        child = rel + "/virtio%d" % index
        os.makedirs(self._dev(child), exist_ok=True)
        _link(self._dev(child + "/subsystem"), "../../../../bus/virtio")
        os.makedirs(os.path.join(self.root, "bus/virtio"), exist_ok=True)
        if driver_bound:
            self.netdev(child, name, mtu=1500)
        return rel

    def sriov_pf(self, bdf, name, vendor="8086", device="10c9", vf_device="10ca", totalvfs=7, numvfs=0,
                 driver="igb", vf_driver="igbvf", bridge="0000:00:02.0", rdma=None, vf_names=None, unbound_vfs=()):
        """An SR-IOV PF behind a root port, with its netdev and numvfs VFs
        (offset 0x80, stride 2, as the 82576 has); the VFs of unbound_vfs
        have no driver and so no netdev."""
        rel = "pci0000:00/%s/%s" % (bridge, bdf)
        if not os.path.isdir(self._dev("pci0000:00/" + bridge)):
            self.pci("pci0000:00/" + bridge, "8086", "29c9", cls="0x060400", driver="pcieport")
        path = self.pci(rel, vendor, device, driver=driver)
        if totalvfs:
            for key, value in (("sriov_totalvfs", totalvfs), ("sriov_numvfs", numvfs), ("sriov_offset", 128),
                               ("sriov_stride", 2), ("sriov_vf_device", vf_device),
                               ("sriov_drivers_autoprobe", 1)):
                _write(os.path.join(path, key), str(value))
        if driver:
            self.netdev(rel, name, mtu=1500)
        if rdma:
            os.makedirs(os.path.join(path, "infiniband", rdma), exist_ok=True)
            _link(os.path.join(self.root, "class/infiniband", rdma), "../../devices/%s/infiniband/%s" % (rel, rdma))
        domain, bus, slotfn = bdf.split(":")
        pf_devfn = int(slotfn.split(".")[0], 16) * 8 + int(slotfn.split(".")[1])
        for i in range(numvfs):
            rid = pf_devfn + 128 + 2 * i
            vf_bdf = "%s:%02x:%02x.%d" % (domain, int(bus, 16) + (rid >> 8), (rid & 0xff) >> 3, rid & 7)
            vf_rel = "pci0000:00/%s/%s" % (bridge, vf_bdf)
            bound = vf_driver and i not in unbound_vfs
            self.pci(vf_rel, vendor, vf_device, driver=vf_driver if bound else None)
            _link(self._dev(vf_rel + "/physfn"), "../" + bdf)
            _link(os.path.join(path, "virtfn%d" % i), "../" + vf_bdf)
            if bound:
                self.netdev(vf_rel, (vf_names or {}).get(i, "%sv%d" % (name, i)), mtu=1500)
        return rel

    def rxe(self, name, netdev, ipv4=None):
        """A Soft-RoCE device over ``netdev`` (``rdma link add <name> type rxe
        netdev <netdev>``): devices/virtual/infiniband/<name>, no device link
        (rxe_register_device registers it with no parent), its netdev in
        ``parent`` and in port 1's GID ndevs, link layer Ethernet."""
        path = self._dev("virtual/infiniband/" + name)
        _write(os.path.join(path, "parent"), netdev)
        _write(os.path.join(path, "node_type"), "1: CA")
        port = os.path.join(path, "ports", "1")
        _write(os.path.join(port, "state"), "4: ACTIVE")
        _write(os.path.join(port, "phys_state"), "5: LinkUp")
        _write(os.path.join(port, "link_layer"), "Ethernet")
        gids = [("fe80:0000:0000:0000:5054:00ff:fe01:0001", "IB/RoCE v1"),
                ("fe80:0000:0000:0000:5054:00ff:fe01:0001", "RoCE v2")]
        if ipv4:
            a, b, c, d = (int(x) for x in ipv4.split("."))
            v4 = "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)
            gids += [(v4, "IB/RoCE v1"), (v4, "RoCE v2")]
        for i, (gid, gtype) in enumerate(gids):
            _write(os.path.join(port, "gids", str(i)), gid)
            _write(os.path.join(port, "gid_attrs", "types", str(i)), gtype)
            _write(os.path.join(port, "gid_attrs", "ndevs", str(i)), netdev)
        _link(os.path.join(self.root, "class/infiniband", name), "../../devices/virtual/infiniband/" + name)
        return path
