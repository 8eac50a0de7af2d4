# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discover NIC physical functions, their VFs and RDMA devices from sysfs.

Everything is read under a sysfs root (``/sys`` on a host, the twin's FUSE
tree in tests), and netdev, PCI function and RDMA device are tied together
through the links the kernel makes (``class/net/<if>/device``,
``<pci>/infiniband/<dev>``, ``<pci>/virtfnN``, ``<vf>/physfn``), never by
name patterns: RDMA devices may be ``mlx5_N`` or ``rocep59s0f0``.
Plain Python, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import re

ETH_TYPE = "1"
IB_TYPE = "32"
BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
# A virtio device (drivers/virtio/virtio.c names it virtio<N>): virtio_net
# hangs its netdev under it, and virtio-pci makes it a child of the PCI
# function (<pci>/virtio2/net/eth0, class/net/eth0/device -> ../../../virtio2).
VIRTIO_RE = re.compile(r"^virtio\d+$")


class SysfsError(Exception):
    pass


# A read-only run (nic_facts) reads the same sysfs files several times: the
# NIC discovery, the VF plan, the QoS and the PCIe reads each walk the PFs and
# their VFs. Within ``snapshot()`` each file, directory and link is read once
# and the answer kept for the rest of the block. Never around a write or a
# wait: a kept answer does not change (sriov.wait_vfs would wait in vain).
_KEPT = None
_MISSING = object()


class snapshot(object):
    """``with snapshot():`` keeps every answer of _read, _listdir and
    _link_base until the outermost block ends."""

    def __enter__(self):
        global _KEPT
        self._outer = _KEPT
        if _KEPT is None:
            _KEPT = {}
        return self

    def __exit__(self, *exc):
        global _KEPT
        _KEPT = self._outer
        return False


def _kept(kind, path, read):
    if _KEPT is None:
        return read(path)
    key = (kind, path)
    if key not in _KEPT:
        _KEPT[key] = read(path)
    return _KEPT[key]


def _read_text(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return _MISSING


def _read(path, default=None):
    text = _kept("read", path, _read_text)
    return default if text is _MISSING else text


def _int(value, default=None):
    try:
        return int(value, 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        return default


def _list_entries(path):
    try:
        return tuple(sorted(os.listdir(path)))
    except (IOError, OSError):
        return ()


def _listdir(path):
    return list(_kept("listdir", path, _list_entries))


def _link_target_base(path):
    try:
        return os.path.basename(os.readlink(path))
    except (IOError, OSError):
        return None


def _link_base(path):
    return _kept("link", path, _link_target_base)


def _virtfn_index(name):
    m = re.match(r"^virtfn(\d+)$", name)
    return int(m.group(1)) if m else None


class Sysfs(object):
    """Paths under one sysfs root."""

    def __init__(self, root="/sys"):
        self.root = root.rstrip("/") or "/"

    def p(self, *parts):
        return os.path.join(self.root, *parts)

    def pci(self, bdf, *parts):
        return self.p("bus", "pci", "devices", bdf, *parts)

    def netdev(self, name, *parts):
        return self.p("class", "net", name, *parts)

    def rdma(self, name, *parts):
        return self.p("class", "infiniband", name, *parts)


def rdma_port_info(fs, dev):
    """State, link layer and GID table of port 1 of an RDMA device."""
    port = fs.rdma(dev, "ports", "1")
    gids = []
    for entry in _listdir(os.path.join(port, "gids")):
        idx = _int(entry)
        if idx is None:
            continue
        gid = _read(os.path.join(port, "gids", entry))
        if not gid or gid == "0000:0000:0000:0000:0000:0000:0000:0000":
            continue
        gtype = _read(os.path.join(port, "gid_attrs", "types", entry))
        ndev = _read(os.path.join(port, "gid_attrs", "ndevs", entry))
        gids.append({"index": idx, "gid": gid, "type": gtype, "ndev": ndev,
                     "ipv4": gid_ipv4(gid)})
    gids.sort(key=lambda g: g["index"])
    state = _read(os.path.join(port, "state"))
    return {
        "state": state.split(":", 1)[-1].strip() if state else None,
        "phys_state": (_read(os.path.join(port, "phys_state")) or "").split(":", 1)[-1].strip() or None,
        "link_layer": _read(os.path.join(port, "link_layer")),
        "rate": _read(os.path.join(port, "rate")),
        "gids": gids,
        "roce_v2_gid_index": roce_v2_index(gids),
    }


def gid_ipv4(gid):
    """``0000:...:ffff:0a00:0001`` -> ``10.0.0.1``; None for other GIDs."""
    parts = gid.split(":")
    if len(parts) != 8 or parts[:5] != ["0000"] * 5 or parts[5] != "ffff":
        return None
    a, b = int(parts[6], 16), int(parts[7], 16)
    return "%d.%d.%d.%d" % (a >> 8, a & 0xff, b >> 8, b & 0xff)


def roce_v2_index(gids):
    """The GID index NCCL and perftest should use: the RoCE v2 entry with an
    IPv4 address if there is one, else the first RoCE v2 entry."""
    v2 = [g for g in gids if g.get("type") == "RoCE v2"]
    with_ip = [g for g in v2 if g.get("ipv4")]
    pick = (with_ip or v2 or [None])[0]
    return pick["index"] if pick else None


def _rdma_of_pci(fs, bdf):
    devs = _listdir(fs.pci(bdf, "infiniband"))
    return devs[0] if devs else None


def soft_rdma_of_netdev(fs, netdev):
    """The software RDMA device (Soft-RoCE rxe, siw) running over a netdev,
    or None. Such a device has no parent device, so it is not under the PCI
    function's infiniband/ (drivers/infiniband/sw/rxe/rxe_verbs.c
    ``rxe_register_device``: ``ib_register_device(dev, ibdev_name, NULL)``,
    class/infiniband/rxe0 -> ../../devices/virtual/infiniband/rxe0); it names
    its netdev in its ``parent`` file (rxe's ``parent_show``) and, as
    ``ib_device_set_netdev`` ties port 1 to it, in that port's GID ``ndevs``."""
    if not netdev:
        return None
    for dev in _listdir(fs.p("class", "infiniband")):
        if os.path.exists(fs.rdma(dev, "device")):
            continue  # a hardware device: found under its PCI function
        names = [_read(fs.rdma(dev, "parent"))]
        names += [_read(fs.rdma(dev, "ports", "1", "gid_attrs", "ndevs", i))
                  for i in _listdir(fs.rdma(dev, "ports", "1", "gid_attrs", "ndevs"))[:1]]
        if netdev in names:
            return dev
    return None


def _netdevs_of_pci(fs, bdf):
    """The netdevs of a PCI function: under its own net/ (mlx5, igb, ...), or
    under the net/ of its virtio child (virtio-net over virtio-pci)."""
    names = _listdir(fs.pci(bdf, "net"))
    if names:
        return names
    for child in _listdir(fs.pci(bdf)):
        if VIRTIO_RE.match(child):
            names += _listdir(fs.pci(bdf, child, "net"))
    return names


def pci_of_netdev(fs, name):
    """The PCI address of the function a netdev belongs to, from
    class/net/<if>/device: the function itself, or a virtio<N> device whose
    parent is the function; None for virtual netdevs and other buses."""
    link = fs.netdev(name, "device")
    base = _link_base(link)
    if not base:
        return None
    if BDF_RE.match(base):
        return base
    if VIRTIO_RE.match(base):
        parent = os.path.basename(os.path.dirname(os.path.realpath(link)))
        if BDF_RE.match(parent):
            return parent
    return None


def _netdev_of_pci(fs, bdf):
    names = _netdevs_of_pci(fs, bdf)
    if len(names) > 1:
        # switchdev puts representors here too: the uplink has phys_port_name pN
        uplink = [n for n in names if re.match(r"^p\d+$", _read(fs.pci(bdf, "net", n, "phys_port_name"), "") or "")]
        if uplink:
            return uplink[0]
    return names[0] if names else None


def vf_list(fs, pf_bdf):
    vfs = []
    for entry in _listdir(fs.pci(pf_bdf)):
        idx = _virtfn_index(entry)
        if idx is None:
            continue
        vf_bdf = _link_base(fs.pci(pf_bdf, entry))
        netdev = _netdev_of_pci(fs, vf_bdf) if vf_bdf else None
        group = _link_base(fs.pci(vf_bdf, "iommu_group")) if vf_bdf else None
        vfs.append({
            "index": idx,
            "pci_address": vf_bdf,
            "netdev": netdev,
            "rdma_device": _rdma_of_pci(fs, vf_bdf) if vf_bdf else None,
            "driver": _link_base(fs.pci(vf_bdf, "driver")) if vf_bdf else None,
            "mtu": _int(_read(fs.netdev(netdev, "mtu"))) if netdev else None,
            "iommu_group": group,
            "iommu_group_devices": _listdir(fs.p("kernel", "iommu_groups", group, "devices")) if group else [],
        })
    vfs.sort(key=lambda v: v["index"])
    return vfs


def sriov_info(fs, bdf):
    total = _read(fs.pci(bdf, "sriov_totalvfs"))
    if total is None:
        return {"capable": False, "totalvfs": None, "numvfs": None}
    return {
        "capable": True,
        "totalvfs": _int(total),
        "numvfs": _int(_read(fs.pci(bdf, "sriov_numvfs"))),
        "vf_device": _read(fs.pci(bdf, "sriov_vf_device")),
        "offset": _int(_read(fs.pci(bdf, "sriov_offset"))),
        "stride": _int(_read(fs.pci(bdf, "sriov_stride"))),
        "drivers_autoprobe": _read(fs.pci(bdf, "sriov_drivers_autoprobe")) == "1",
        "iov_bars_assigned": iov_bars_assigned(_read(fs.pci(bdf, "resource"))),
    }


def iov_bars_assigned(resource):
    """Whether the kernel gave the PF's IOV BARs an address: lines 7..12 of
    its `resource` file (after BARs 0-5 and the ROM). None when the file is
    missing or short. When none has an address, writing sriov_numvfs answers
    ENOMEM (no MMIO window for the VFs)."""
    lines = (resource or "").splitlines()
    if len(lines) < 13:
        return None
    starts = []
    for line in lines[7:13]:
        try:
            starts.append(int(line.split()[0], 16))
        except (IndexError, ValueError):
            return None
    return any(starts)


def pf_facts(fs, bdf, netdev=None):
    """Everything about one PCI function that is a PF (or a plain NIC)."""
    vendor = (_read(fs.pci(bdf, "vendor")) or "").replace("0x", "")
    device = (_read(fs.pci(bdf, "device")) or "").replace("0x", "")
    driver = _link_base(fs.pci(bdf, "driver"))
    netdev = netdev or _netdev_of_pci(fs, bdf)
    rdma = _rdma_of_pci(fs, bdf) or soft_rdma_of_netdev(fs, netdev)
    ntype = _read(fs.netdev(netdev, "type")) if netdev else None
    speed = _int(_read(fs.netdev(netdev, "speed"))) if netdev else None
    facts = {
        "name": netdev,
        "pci_address": bdf,
        "vendor": vendor,
        "device": device,
        "vendor_device": "%s:%s" % (vendor, device),
        "driver": driver,
        "bound": driver is not None,
        "numa_node": _int(_read(fs.pci(bdf, "numa_node"))),
        "link_type": {ETH_TYPE: "ETH", IB_TYPE: "IB"}.get(ntype),
        "speed_mbps": speed if speed is not None and speed > 0 else None,
        "operstate": _read(fs.netdev(netdev, "operstate")) if netdev else None,
        "mtu": _int(_read(fs.netdev(netdev, "mtu"))) if netdev else None,
        "mac": _read(fs.netdev(netdev, "address")) if netdev else None,
        "iommu_group": _link_base(fs.pci(bdf, "iommu_group")),
        "driver_flavor": ("ofed" if (netdev and os.path.isdir(fs.netdev(netdev, "ecn")))
                          or os.path.exists(fs.pci(bdf, "mlx5_num_vfs")) else "inbox"),
        "sriov": sriov_info(fs, bdf),
        "vfs": vf_list(fs, bdf),
        "rdma_device": rdma,
        "rdma": rdma_port_info(fs, rdma) if rdma else None,
    }
    if facts["link_type"] is None and facts["rdma"]:
        facts["link_type"] = {"Ethernet": "ETH", "InfiniBand": "IB"}.get(facts["rdma"]["link_layer"])
    return facts


def discover(sysfs_root="/sys"):
    """Every NIC PF on the host, keyed by nothing: a list sorted by PCI address.

    A PF is a PCI network function that is not itself a VF.  PFs whose driver
    is unbound have no netdev but are still found on the PCI bus when their
    class is a network or InfiniBand controller.
    """
    fs = Sysfs(sysfs_root)
    if not os.path.isdir(fs.p("bus", "pci", "devices")):
        raise SysfsError("%s is not a sysfs tree (no bus/pci/devices)" % fs.root)
    found = {}
    for name in _listdir(fs.p("class", "net")):
        bdf = pci_of_netdev(fs, name)
        if not bdf:
            continue
        if os.path.exists(fs.pci(bdf, "physfn")):
            continue
        found.setdefault(bdf, name)
    for bdf, _vendor in pci_functions(sysfs_root, ("0x0200", "0x0207")):
        if bdf in found or os.path.exists(fs.pci(bdf, "physfn")):
            continue
        found[bdf] = None
    return [pf_facts(fs, bdf, found[bdf]) for bdf in sorted(found)]


def pci_functions(sysfs_root="/sys", classes=()):
    """``[(bdf, vendor)]`` of the PCI functions whose class starts with one
    of ``classes`` (``0x0200`` Ethernet, ``0x03`` display), sorted; vendor
    as sysfs prints it, ``0x10de``."""
    fs = Sysfs(sysfs_root)
    out = []
    for bdf in _listdir(fs.p("bus", "pci", "devices")):
        if _read(fs.pci(bdf, "class"), "").startswith(tuple(classes)):
            out.append((bdf, _read(fs.pci(bdf, "vendor"), "").lower()))
    return out


def iommus(sysfs_root="/sys"):
    """The active IOMMUs (entries of class/iommu, dmar0 or ivhd0 style)."""
    return sorted(_listdir(Sysfs(sysfs_root).p("class", "iommu")))


def modules(sysfs_root="/sys"):
    """The kernel modules sysfs lists (loaded ones, and built-ins with parameters)."""
    return sorted(_listdir(Sysfs(sysfs_root).p("module")))


def cmdline(proc_root="/proc"):
    """The booted kernel command line, or None when it cannot be read."""
    text = _read(os.path.join(proc_root, "cmdline"))
    return text.strip() if text is not None else None


def iommu_active(sysfs_root="/sys"):
    return bool(iommus(sysfs_root))
