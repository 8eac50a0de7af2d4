"""vfio_passthrough: the record of a VF handed to a VM, the GPUs near it, the
IOMMU isolation check, and the three files rendered from the records, against
a sysfs tree laid out as a kernel lays it out (real_sysfs.RealSysfs) for an
HGX-style 8-GPU server such as the XE9680: each GPU below a PCIe switch that
it shares with one ConnectX NIC, switches below root ports of both sockets.

Where the formats come from (checked in the sources, not guessed):

KubeVirt (kubevirt/kubevirt at d923fdb815cd2016ddaebdaaa51db04133576d72):
- staging/src/kubevirt.io/api/core/v1/types.go: ``PermittedHostDevices``
  (``pciHostDevices``) and ``PciHostDevice`` with the JSON fields
  ``pciVendorSelector`` ("The vendor_id:product_id tuple of the PCI device"),
  ``resourceName`` and ``externalResourceProvider`` (bool, omitempty);
  KubeVirt CR path ``spec.configuration.permittedHostDevices``.
- pkg/virt-operator/resource/generate/components/validations_generated.go: the
  CRD schema requires ``pciVendorSelector`` and ``resourceName`` (strings, no
  pattern); ``externalResourceProvider`` is a boolean.
- pkg/virt-handler/device-manager/device_controller.go lower-cases the
  selector (``strings.ToLower(pciDev.PCIVendorSelector)``) and
  pkg/virt-handler/device-manager/common.go ``GetDevicePCIID`` lower-cases the
  device's ``PCI_ID`` from its uevent; pci_device.go
  ``discoverPermittedHostPCIDevices`` matches the two exactly and takes only
  devices on vfio-pci. So the selector we write is ``vvvv:dddd`` in lower
  case, exactly the key virt-handler builds (no case folding needed).
- kubevirt/user-guide docs/compute/host-devices.md
  (https://kubevirt.io/user-guide/compute/host-devices/): the
  ``vendor_id:product_id`` form, resource names like ``intel.com/qat``.
- Resource names are Kubernetes extended resources: ``<DNS subdomain>/<name>``,
  the name a qualified name of at most 63 characters.

Nova (openstack/nova at 00a030403f672b975364c855b7d25b40ef83e757):
- nova/conf/pci.py: ``cfg.MultiStrOpt('device_spec', deprecated_opts=[
  DeprecatedOpt('passthrough_whitelist', group='pci'),
  DeprecatedOpt('pci_passthrough_whitelist', group='DEFAULT')])``; valid keys
  ``vendor_id``, ``product_id``, ``address``, ``devname`` and the tags
  ``physical_network``, ``trusted``, ``remote_managed``, ``managed``,
  ``live_migratable``, ``resource_class``, ``traits``
  (https://docs.openstack.org/nova/latest/configuration/config.html#pci.device_spec).
- nova/pci/devspec.py: vendor_id and product_id normalised with ``%04x``;
  address fields at most domain 0xFFFF, bus 0xFF, slot 0x1F, function 0x7.
- commit 14e68ac6e9 "Rename [pci]passthrough_whitelist to device_spec", first
  in tag 26.0.0 (Zed, 2022.2); release note
  releasenotes/notes/deprecate-passthrough_whitelist-config-name-0530d502c960d753.yaml.
- commit 12905dade3 "Add managed flag to PCI device specification", first in
  tag 31.0.0 (2025.1).
"""

import json
import os
import re

import pytest
import yaml

from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import vfio_passthrough as vp
from real_sysfs import RealSysfs, _link, _write

pytestmark = pytest.mark.layers(6)

# KubeVirt: the key virt-handler builds from a device's PCI_ID (lower case).
KUBEVIRT_SELECTOR_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{4}$")
K8S_QUALIFIED_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Nova: the keys its device_spec documents, and its address limits.
NOVA_KEYS = {"vendor_id", "product_id", "address", "devname", "physical_network", "trusted", "remote_managed",
             "managed", "live_migratable", "resource_class", "traits"}
NOVA_ADDRESS_RE = re.compile(r"^([0-9a-f]{4}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$")

RECORD_KEYS = {"pci_address", "vendor_device", "pf", "pf_pci_address", "vf_index", "driver", "iommu_group",
               "iommu_group_devices", "numa_node", "mac", "vlan", "gpus"}


class Host(object):
    """A fake host: RealSysfs plus PCIe switches, GPUs, ConnectX PFs with VFs
    and IOMMU groups, each device at the real path below its root port."""

    def __init__(self, tmp_path):
        self.rs = RealSysfs(tmp_path / "sys")
        self.root = self.rs.root
        self.fs = sysfs_nic.Sysfs(self.root)
        self.groups = 0

    def dev(self, rel, vendor, device, cls, driver=None, numa_node=-1):
        self.rs.pci(rel, vendor, device, cls=cls, driver=driver, numa_node=numa_node)
        return rel

    def bridge(self, rel, vendor="8086", device="352a", numa_node=-1):
        return self.dev(rel, vendor, device, "0x060400", driver="pcieport", numa_node=numa_node)

    def switch(self, root_port_rel, up, downs, numa_node):
        """A Broadcom PEX switch (1000:c030) below a root port: its upstream
        port and downstream ports, all PCI bridge functions."""
        self.bridge(root_port_rel, numa_node=numa_node)
        up_rel = self.bridge(root_port_rel + "/" + up, "1000", "c030", numa_node)
        return [self.bridge(up_rel + "/" + d, "1000", "c030", numa_node) for d in downs]

    def gpu(self, rel, device="2330", numa_node=0, cls="0x030200"):
        return self.dev(rel, "10de", device, cls, driver="nvidia", numa_node=numa_node)

    def iommu_group(self, *rels):
        n = str(self.groups)
        self.groups += 1
        for rel in rels:
            depth = rel.count("/") + 1
            _link(os.path.join(self.root, "devices", rel, "iommu_group"), "../" * (depth + 1) + "kernel/iommu_groups/" + n)
            _link(os.path.join(self.root, "kernel/iommu_groups", n, "devices", os.path.basename(rel)),
                  "../../../../devices/" + rel)
        return n

    def connectx(self, rel, name, numa_node, vf_drivers, vf_numa=True):
        """A ConnectX-7 PF (15b3:1021, mlx5_core) with one VF (15b3:101e) per
        entry of vf_drivers (the VF's driver, or None), at offset 1 stride 1,
        each VF in an IOMMU group of its own; a VF on mlx5_core has a netdev."""
        self.dev(rel, "15b3", "1021", "0x020000", driver="mlx5_core", numa_node=numa_node)
        path = os.path.join(self.root, "devices", rel)
        for key, value in (("sriov_totalvfs", 16), ("sriov_numvfs", len(vf_drivers)), ("sriov_offset", 1),
                           ("sriov_stride", 1), ("sriov_vf_device", "101e"), ("sriov_drivers_autoprobe", 1)):
            _write(os.path.join(path, key), str(value))
        self.rs.netdev(rel, name, mac="b8:3f:d2:00:00:%02x" % int(rel[-7:-5], 16), mtu=9000)
        self.iommu_group(rel)
        parent, pf_bdf = os.path.dirname(rel), os.path.basename(rel)
        domain, bus, _ = pf_bdf.split(":")
        vfs = []
        for i, driver in enumerate(vf_drivers):
            vf_bdf = "%s:%s:00.%d" % (domain, bus, i + 1)
            vf_rel = parent + "/" + vf_bdf
            self.dev(vf_rel, "15b3", "101e", "0x020000", driver=driver, numa_node=numa_node)
            if not vf_numa:
                os.unlink(os.path.join(self.root, "devices", vf_rel, "numa_node"))
            _link(os.path.join(self.root, "devices", vf_rel, "physfn"), "../" + pf_bdf)
            _link(os.path.join(path, "virtfn%d" % i), "../" + vf_bdf)
            if driver == "mlx5_core":
                self.rs.netdev(vf_rel, "%sv%d" % (name, i), mac="02:00:00:%s:00:%02x" % (bus, i))
            self.iommu_group(vf_rel)
            vfs.append(vf_rel)
        return vfs

    def pf(self, bdf):
        return sysfs_nic.pf_facts(self.fs, bdf)


def hgx(tmp_path, vf_numa=True):
    """Socket 0: two switches, each with one H100 (10de:2330) and one
    ConnectX-7; socket 1: one more pair. Also on socket 0: an NVSwitch
    (NVIDIA, bridge class 0x0680, not a GPU) and the BMC's VGA (Matrox, not
    NVIDIA) below root ports of their own."""
    h = Host(tmp_path)
    d = h.switch("pci0000:15/0000:15:01.0", "0000:16:00.0", ["0000:17:00.0", "0000:17:01.0"], 0)
    h.gpu(d[0] + "/0000:18:00.0", numa_node=0)
    h.connectx(d[1] + "/0000:19:00.0", "enp25s0f0np0", 0, ["mlx5_core", "mlx5_core", "vfio-pci", "vfio-pci"],
               vf_numa=vf_numa)
    d = h.switch("pci0000:37/0000:37:01.0", "0000:38:00.0", ["0000:39:00.0", "0000:39:01.0"], 0)
    h.gpu(d[0] + "/0000:3a:00.0", numa_node=0)
    h.connectx(d[1] + "/0000:3b:00.0", "enp59s0f0np0", 0, ["vfio-pci", "vfio-pci"])
    d = h.switch("pci0000:97/0000:97:01.0", "0000:98:00.0", ["0000:99:00.0", "0000:99:01.0"], 1)
    h.gpu(d[0] + "/0000:9a:00.0", numa_node=1)
    h.connectx(d[1] + "/0000:9b:00.0", "enp155s0f0np0", 1, ["vfio-pci"])
    h.bridge("pci0000:00/0000:00:05.0", numa_node=0)
    h.dev("pci0000:00/0000:00:05.0/0000:05:00.0", "10de", "22a3", "0x068000", numa_node=0)
    h.bridge("pci0000:00/0000:00:1c.0", numa_node=0)
    h.dev("pci0000:00/0000:00:1c.0/0000:02:00.0", "102b", "0536", "0x030000", numa_node=0)
    return h


def record(h, pf_bdf, index, settings=None):
    pf = h.pf(pf_bdf)
    vf = [v for v in pf["vfs"] if v["index"] == index][0]
    return vp.vf_record(h.fs, pf, vf, settings or {})


# --- vf_record -------------------------------------------------------------

def test_vf_record_of_a_vf_on_vfio_pci(tmp_path):
    h = hgx(tmp_path)
    rec = record(h, "0000:19:00.0", 2, {"mac": "02:00:00:19:00:02", "vlan": 100, "qos": 3, "trust": False,
                                         "spoofchk": True})
    group = os.path.basename(os.readlink(h.fs.pci("0000:19:00.3", "iommu_group")))
    assert rec == {
        "pci_address": "0000:19:00.3",
        "vendor_device": "15b3:101e",
        "pf": "enp25s0f0np0",
        "pf_pci_address": "0000:19:00.0",
        "vf_index": 2,
        "driver": "vfio-pci",
        "iommu_group": group,
        "iommu_group_devices": ["0000:19:00.3"],
        "numa_node": 0,
        "mac": "02:00:00:19:00:02",
        "vlan": 100,
        "gpus": [{"pci_address": "0000:18:00.0", "vendor_device": "10de:2330", "numa_node": 0,
                  "shares": "pcie_switch"},
                 {"pci_address": "0000:3a:00.0", "vendor_device": "10de:2330", "numa_node": 0,
                  "shares": "numa_node"}],
    }
    assert set(rec) == RECORD_KEYS == set(vp.RECORD_KEYS)


def test_vf_record_takes_driver_and_group_from_vf_list_else_reads_sysfs(tmp_path):
    h = hgx(tmp_path)
    pf = h.pf("0000:19:00.0")
    vf = dict([v for v in pf["vfs"] if v["index"] == 2][0])
    from_sysfs = dict((k, v) for k, v in vf.items() if k not in ("driver", "iommu_group", "iommu_group_devices"))
    # a vf_list entry without those keys: read from sysfs, the same record
    assert vp.vf_record(h.fs, pf, from_sysfs, {}) == record(h, "0000:19:00.0", 2)
    read = vp.vf_record(h.fs, pf, from_sysfs, {})
    assert read["driver"] == "vfio-pci" and read["iommu_group_devices"] == ["0000:19:00.3"]
    # what vf_list read is what the record says (the module checks the same read)
    vf.update(driver="mlx5_core", iommu_group="7", iommu_group_devices=["0000:19:00.3", "0000:19:00.0"])
    rec = vp.vf_record(h.fs, pf, vf, {})
    assert (rec["driver"], rec["iommu_group"], rec["iommu_group_devices"]) == (
        "mlx5_core", "7", ["0000:19:00.0", "0000:19:00.3"])
    vf.update(iommu_group=None, iommu_group_devices=[])
    assert vp.vf_record(h.fs, pf, vf, {})["iommu_group"] is None


def test_vf_record_with_settings_missing(tmp_path):
    h = hgx(tmp_path)
    # a VF still on mlx5_core: its MAC is its netdev's; no VLAN is 0
    rec = record(h, "0000:19:00.0", 1, {})
    assert rec["driver"] == "mlx5_core" and rec["mac"] == "02:00:00:19:00:01" and rec["vlan"] == 0
    # a VF on vfio-pci has no netdev: no MAC unless the inventory gives one
    rec = record(h, "0000:3b:00.0", 0, {"vlan": None, "mac": None})
    assert rec["driver"] == "vfio-pci" and rec["mac"] is None and rec["vlan"] == 0
    rec = record(h, "0000:3b:00.0", 0, {"mac": "02:AB:00:00:00:01", "vlan": "200"})
    assert rec["mac"] == "02:ab:00:00:00:01" and rec["vlan"] == 200


def test_vf_record_unbound_vf_numa_minus_one_and_no_iommu(tmp_path):
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:02.0")
    h.connectx("pci0000:00/0000:00:02.0/0000:01:00.0", "enp1s0f0np0", -1, [None])
    # the IOMMU is off: no groups at all
    os.unlink(h.fs.pci("0000:01:00.1", "iommu_group"))
    rec = record(h, "0000:01:00.0", 0)
    assert rec["driver"] is None
    assert rec["numa_node"] == -1
    assert rec["iommu_group"] is None and rec["iommu_group_devices"] == []
    assert rec["gpus"] == []


def test_vf_record_numa_and_ids_when_the_vf_lacks_the_files(tmp_path):
    # The VF's numa_node unreadable: its PF's node; its vendor/device
    # unreadable: the PF's vendor and sriov_vf_device.
    h = hgx(tmp_path, vf_numa=False)
    for name in ("vendor", "device"):
        os.unlink(h.fs.pci("0000:19:00.3", name))
    rec = record(h, "0000:19:00.0", 2)
    assert rec["numa_node"] == 0
    assert rec["vendor_device"] == "15b3:101e"
    os.unlink(h.fs.pci("0000:19:00.0", "numa_node"))
    rec = record(h, "0000:19:00.0", 2)
    assert rec["numa_node"] is None
    # no NUMA node known: only the GPU below the same switch
    assert [(g["pci_address"], g["shares"]) for g in rec["gpus"]] == [("0000:18:00.0", "pcie_switch")]


# --- gpus_near ---------------------------------------------------------------

def test_gpus_near_switch_first_then_numa_and_the_other_socket_left_out(tmp_path):
    h = hgx(tmp_path)
    near = vp.gpus_near(h.fs, "0000:3b:00.1", 0)
    assert [(g["pci_address"], g["shares"]) for g in near] == [("0000:3a:00.0", "pcie_switch"),
                                                               ("0000:18:00.0", "numa_node")]
    near = vp.gpus_near(h.fs, "0000:9b:00.1", 1)
    assert near == [{"pci_address": "0000:9a:00.0", "vendor_device": "10de:2330", "numa_node": 1,
                     "shares": "pcie_switch"}]
    # the PF itself has the same neighbours as its VFs
    assert vp.gpus_near(h.fs, "0000:9b:00.0", 1) == near


def test_gpus_near_switch_wins_over_numa_and_needs_no_numa(tmp_path):
    h = hgx(tmp_path)
    for numa in (-1, None):
        assert [(g["pci_address"], g["shares"]) for g in vp.gpus_near(h.fs, "0000:19:00.3", numa)] == [
            ("0000:18:00.0", "pcie_switch")]


def test_gpus_near_ignores_other_vendors_nvswitch_and_gpu_vfs(tmp_path):
    h = hgx(tmp_path)
    # a vGPU VF of the socket-0 GPU: NVIDIA, 3D controller, but a VF
    h.gpu("pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.4", numa_node=0)
    _link(h.fs.pci("0000:18:00.4", "physfn"), "../0000:18:00.0")
    near = [g["pci_address"] for g in vp.gpus_near(h.fs, "0000:19:00.3", 0)]
    assert near == ["0000:18:00.0", "0000:3a:00.0"]
    assert "0000:05:00.0" not in near and "0000:02:00.0" not in near


def test_gpus_near_a_vga_class_nvidia_gpu_counts(tmp_path):
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:01.0", numa_node=0)
    h.gpu("pci0000:00/0000:00:01.0/0000:01:00.0", device="2236", numa_node=0, cls="0x030000")
    h.bridge("pci0000:00/0000:00:03.0", numa_node=0)
    h.connectx("pci0000:00/0000:00:03.0/0000:02:00.0", "enp2s0f0np0", 0, ["vfio-pci"])
    assert vp.gpus_near(h.fs, "0000:02:00.1", 0) == [
        {"pci_address": "0000:01:00.0", "vendor_device": "10de:2236", "numa_node": 0, "shares": "numa_node"}]


def test_gpus_near_same_root_port_is_not_a_switch(tmp_path):
    # Two functions of one device directly below a root port share the root
    # port and nothing deeper: not a PCIe switch.
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:01.0", numa_node=1)
    h.gpu("pci0000:00/0000:00:01.0/0000:01:00.1", numa_node=1)
    h.connectx("pci0000:00/0000:00:01.0/0000:01:00.0", "enp1s0f0np0", 1, [])
    assert [g["shares"] for g in vp.gpus_near(h.fs, "0000:01:00.0", 1)] == ["numa_node"]
    assert vp.gpus_near(h.fs, "0000:01:00.0", 0) == []


def test_gpus_near_numa_minus_one_is_no_match(tmp_path):
    # numa_node -1 (firmware gave no proximity) on both: not "the same node"
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:01.0")
    h.gpu("pci0000:00/0000:00:01.0/0000:01:00.0", numa_node=-1)
    h.bridge("pci0000:00/0000:00:03.0")
    h.connectx("pci0000:00/0000:00:03.0/0000:02:00.0", "enp2s0f0np0", -1, ["vfio-pci"])
    assert vp.gpus_near(h.fs, "0000:02:00.1", -1) == []


def test_gpus_near_behind_an_intel_vmd_domain(tmp_path):
    # Intel VMD: an endpoint (class 0x010400) of domain 0000 is the host
    # bridge of domain 10000; its root ports are 10000:00:xx.x. The root
    # port is counted from the last host bridge of the path.
    h = Host(tmp_path)
    vmd = h.dev("pci0000:00/0000:00:0e.0", "8086", "28c0", "0x010400", numa_node=0) + "/pci10000:00"
    # root port 10000:00:02.0 -> switch -> GPU and NIC: below one switch
    d = h.switch(vmd + "/10000:00:02.0", "10000:01:00.0", ["10000:02:00.0", "10000:02:01.0"], 0)
    h.gpu(d[0] + "/10000:03:00.0", numa_node=0)
    h.connectx(d[1] + "/10000:04:00.0", "enp4s0f0np0", 0, ["vfio-pci"])
    # root port 10000:00:03.0 -> a GPU right below it; 10000:00:04.0 -> a NIC
    h.bridge(vmd + "/10000:00:03.0", numa_node=0)
    h.gpu(vmd + "/10000:00:03.0/10000:05:00.0", numa_node=0)
    h.bridge(vmd + "/10000:00:04.0", numa_node=0)
    h.connectx(vmd + "/10000:00:04.0/10000:06:00.0", "enp6s0f0np0", 0, [])
    # and a NIC function next to that GPU, below the same VMD root port
    h.connectx(vmd + "/10000:00:03.0/10000:05:00.1", "enp5s0f1np1", 0, [])
    assert [(g["pci_address"], g["shares"]) for g in vp.gpus_near(h.fs, "10000:04:00.1", 0)] == [
        ("10000:03:00.0", "pcie_switch"), ("10000:05:00.0", "numa_node")]
    # sharing the VMD endpoint and its domain is not sharing a switch
    assert [(g["pci_address"], g["shares"]) for g in vp.gpus_near(h.fs, "10000:06:00.0", 0)] == [
        ("10000:03:00.0", "numa_node"), ("10000:05:00.0", "numa_node")]
    # sharing a root port of the VMD domain is not sharing a switch either
    assert [(g["pci_address"], g["shares"]) for g in vp.gpus_near(h.fs, "10000:05:00.1", 0)] == [
        ("10000:03:00.0", "numa_node"), ("10000:05:00.0", "numa_node")]


def test_gpus_near_no_gpu_on_the_host(tmp_path):
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:02.0", numa_node=0)
    h.connectx("pci0000:00/0000:00:02.0/0000:01:00.0", "enp1s0f0np0", 0, ["vfio-pci"])
    assert vp.gpus_near(h.fs, "0000:01:00.1", 0) == []


# --- isolation_problem -------------------------------------------------------

def test_isolation_alone_in_its_group(tmp_path):
    h = hgx(tmp_path)
    assert vp.isolation_problem(record(h, "0000:19:00.0", 2)) is None


def test_isolation_shared_group_names_vf_group_members_and_fix(tmp_path):
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:02.0", numa_node=0)
    base = "pci0000:00/0000:00:02.0/"
    h.connectx(base + "0000:01:00.0", "enp1s0f0np0", 0, ["vfio-pci", "vfio-pci"])
    # no ACS below the port: the kernel puts the PF and its VFs in one group
    for bdf in ("0000:01:00.0", "0000:01:00.1", "0000:01:00.2"):
        os.unlink(h.fs.pci(bdf, "iommu_group"))
    group = h.iommu_group(base + "0000:01:00.0", base + "0000:01:00.1", base + "0000:01:00.2")
    rec = record(h, "0000:01:00.0", 1)
    assert rec["iommu_group_devices"] == ["0000:01:00.0", "0000:01:00.1", "0000:01:00.2"]
    msg = vp.isolation_problem(rec)
    assert "VF 0000:01:00.2 (pf enp1s0f0np0 VF 1)" in msg
    assert "IOMMU group %s with 0000:01:00.0, 0000:01:00.1" % group in msg
    assert "enable ACS on the upstream PCIe ports (BIOS, layer 2) or move the NIC to another slot" in msg
    assert "pci=disable_acs_redir=" in msg


def test_isolation_without_iommu_group(tmp_path):
    rec = {"pci_address": "0000:01:10.4", "pf": "enp1s0", "pf_pci_address": "0000:01:00.0", "vf_index": 2,
           "iommu_group": None, "iommu_group_devices": []}
    msg = vp.isolation_problem(rec)
    assert "0000:01:10.4" in msg and "IOMMU is off" in msg
    assert "intel_iommu=on" in msg and "amd_iommu=on" in msg and "layer 3" in msg


# --- hypervisor_inventory ----------------------------------------------------

def passthrough_records(h):
    out = []
    for pf_bdf in ("0000:9b:00.0", "0000:3b:00.0", "0000:19:00.0"):
        pf = h.pf(pf_bdf)
        for vf in reversed(pf["vfs"]):
            if vf["driver"] == "vfio-pci":
                out.append(vp.vf_record(h.fs, pf, vf, {"mac": "02:00:00:00:%s:%02x" % (pf_bdf[5:7], vf["index"])}))
    return out


def test_hypervisor_inventory(tmp_path):
    h = hgx(tmp_path)
    records = passthrough_records(h)
    text = vp.hypervisor_inventory("gpu-node-07", records)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    doc = json.loads(text)
    assert doc["host"] == "gpu-node-07" and doc["generated_by"] == "gpufabric.stack.sriov_vf" and doc["schema"] == 1
    addresses = [v["pci_address"] for v in doc["vfs"]]
    assert addresses == ["0000:19:00.3", "0000:19:00.4", "0000:3b:00.1", "0000:3b:00.2", "0000:9b:00.1"]
    assert sorted(doc["vfs"], key=lambda v: v["pci_address"]) == sorted(records, key=lambda v: v["pci_address"])
    # keys sorted at every level, indent 2
    assert text.index('"generated_by"') < text.index('"host"') < text.index('"schema"') < text.index('"vfs"')
    first = text[text.index('"vfs"'):]
    assert first.index('"driver"') < first.index('"gpus"') < first.index('"iommu_group"') < first.index('"mac"')
    assert '\n  "host": "gpu-node-07",\n' in text
    # the same records in another order give the same bytes
    assert vp.hypervisor_inventory("gpu-node-07", list(reversed(records))) == text


# --- KubeVirt -----------------------------------------------------------------

def kubevirt_entries(text):
    doc = yaml.safe_load(text)
    assert list(doc) == ["spec"] and list(doc["spec"]) == ["configuration"]
    assert list(doc["spec"]["configuration"]) == ["permittedHostDevices"]
    return doc["spec"]["configuration"]["permittedHostDevices"]["pciHostDevices"]


def test_kubevirt_one_entry_per_vendor_device(tmp_path):
    h = hgx(tmp_path)
    # an Intel VF (8086:10ca) on vfio-pci too, on another PF
    h.bridge("pci0000:00/0000:00:06.0", numa_node=0)
    h.rs.sriov_pf("0000:06:00.0", "enp6s0", numvfs=1, vf_driver="vfio-pci", bridge="0000:00:06.0")
    pf = h.pf("0000:06:00.0")
    records = passthrough_records(h) + [vp.vf_record(h.fs, pf, pf["vfs"][0], {})]
    text = vp.kubevirt_permitted_host_devices(records)
    assert text.startswith("#")
    entries = kubevirt_entries(text)
    assert entries == [
        {"pciVendorSelector": "15b3:101e", "resourceName": "gpufabric.io/vfio_15b3_101e",
         "externalResourceProvider": False},
        {"pciVendorSelector": "8086:10ca", "resourceName": "gpufabric.io/vfio_8086_10ca",
         "externalResourceProvider": False},
    ]
    for e in entries:
        # exactly the fields PciHostDevice has, the required ones present
        assert set(e) <= {"pciVendorSelector", "resourceName", "externalResourceProvider"}
        assert KUBEVIRT_SELECTOR_RE.match(e["pciVendorSelector"])
        assert e["externalResourceProvider"] is False
        prefix, name = e["resourceName"].split("/")
        assert DNS_SUBDOMAIN_RE.match(prefix) and len(name) <= 63 and K8S_QUALIFIED_NAME_RE.match(name)
    # the selector is what the kernel reports for the VFs (lspci -n, PCI_ID)
    on_host = set(vp.vendor_device(h.fs, r["pci_address"]) for r in records)
    assert set(e["pciVendorSelector"] for e in entries) == on_host
    assert vp.kubevirt_permitted_host_devices(list(reversed(records))) == text


def test_kubevirt_selector_lower_case_from_upper_case_sysfs(tmp_path):
    h = Host(tmp_path)
    h.bridge("pci0000:00/0000:00:02.0", numa_node=0)
    h.rs.sriov_pf("0000:01:00.0", "enp1s0", vendor="8086", vf_device="10CA", numvfs=1, vf_driver="vfio-pci")
    pf = h.pf("0000:01:00.0")
    rec = vp.vf_record(h.fs, pf, pf["vfs"][0], {})
    assert rec["vendor_device"] == "8086:10ca"
    assert [e["pciVendorSelector"] for e in kubevirt_entries(vp.kubevirt_permitted_host_devices([rec]))] == [
        "8086:10ca"]


def test_kubevirt_prefix_and_empty(tmp_path):
    h = hgx(tmp_path)
    records = passthrough_records(h)
    entries = kubevirt_entries(vp.kubevirt_permitted_host_devices(records, resource_prefix="vms.example.com"))
    assert [e["resourceName"] for e in entries] == ["vms.example.com/vfio_15b3_101e"]
    assert kubevirt_entries(vp.kubevirt_permitted_host_devices([])) == []
    for bad in ("Gpufabric.io", "gpufabric.io/x", "-x.io", ""):
        with pytest.raises(ValueError):
            vp.kubevirt_permitted_host_devices(records, resource_prefix=bad)


@pytest.mark.parametrize("value", [
    {"a": "yes", "b": "0x10", "c": "null", "d": "10:20", "e": "- x", "f": "#no", "g": "it's \"q\"", "h": "é"},
    {"list": ["on", 1, True, None, "", {"k": "v", "l": []}, [1, ["x"]]], "empty": {}, "n": -1},
    [{"a": {"b": [{"c": "d"}]}}],
    {"key with space": "v", "1": "one"},
])
def test_to_yaml_parses_back(value):
    assert yaml.safe_load(vp.to_yaml(value)) == value


# --- Nova ---------------------------------------------------------------------

def nova_specs(text):
    lines = text.splitlines()
    assert "[pci]" in lines
    after = lines[lines.index("[pci]") + 1:]
    specs = []
    for line in after:
        key, sep, value = line.partition(" = ")
        assert sep and key == "device_spec", line
        specs.append(json.loads(value))
    return lines[:lines.index("[pci]")], specs


def test_nova_device_spec_per_vf(tmp_path):
    h = hgx(tmp_path)
    records = passthrough_records(h)
    comments, specs = nova_specs(vp.nova_pci_device_spec(records))
    assert all(c.startswith("#") for c in comments)
    assert any("device_spec" in c and "passthrough_whitelist" in c for c in comments)
    assert [s["address"] for s in specs] == sorted(r["pci_address"] for r in records)
    for spec in specs:
        assert set(spec) == {"address", "vendor_id", "product_id"} <= NOVA_KEYS
        domain, bus, slot, func = NOVA_ADDRESS_RE.match(spec["address"]).groups()
        assert int(domain, 16) <= 0xFFFF and int(bus, 16) <= 0xFF and int(slot, 16) <= 0x1F and int(func) <= 7
        assert (spec["vendor_id"], spec["product_id"]) == ("15b3", "101e")
        assert spec["vendor_id"] == "%04x" % int(spec["vendor_id"], 16)


def test_nova_physical_network_managed_and_empty(tmp_path):
    h = hgx(tmp_path)
    records = passthrough_records(h)
    _, specs = nova_specs(vp.nova_pci_device_spec(records, physical_network="tenant-rail0"))
    assert {s["physical_network"] for s in specs} == {"tenant-rail0"} and len(specs) == len(records)
    _, specs = nova_specs(vp.nova_pci_device_spec(records, managed=False))
    assert {s["managed"] for s in specs} == {"no"} and all(set(s) <= NOVA_KEYS for s in specs)
    _, specs = nova_specs(vp.nova_pci_device_spec([]))
    assert specs == []


# --- docs/tenant-vms.md -----------------------------------------------------

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "tenant-vms.md")


def doc_blocks(lang):
    text = open(DOC).read()
    return [m.group(1) for m in re.finditer(r"```%s\n(.*?)```" % lang, text, re.S)]


def test_docs_examples_are_what_the_functions_render(tmp_path):
    (inventory,) = doc_blocks("json")
    doc = json.loads(inventory)
    records = doc["vfs"]
    # the records are those of VFs 2 and 3 of the HGX-style host above
    h = hgx(tmp_path)
    assert records == [record(h, "0000:19:00.0", i, {"mac": "02:00:00:19:00:%02d" % i, "vlan": 100})
                       for i in (2, 3)]
    assert vp.hypervisor_inventory(doc["host"], records) == inventory
    kubevirt = [b for b in doc_blocks("yaml") if "permittedHostDevices" in b]
    assert kubevirt == [vp.kubevirt_permitted_host_devices(records)]
    assert doc_blocks("ini") == [vp.nova_pci_device_spec(records),
                                 vp.nova_pci_device_spec(records, physical_network="tenant-rail0", managed=False)]
