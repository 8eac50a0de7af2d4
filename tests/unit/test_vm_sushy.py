"""simlab/vm/sushy.py without libvirt: the domain a VM node behind
sushy-tools' emulator gets, and what its board's firmware adds at power-on
from the BIOS attributes sushy-tools keeps in the domain.  The VM tier
(tests/vm/test_vm_nodes.py, node02) runs it with libvirtd and sushy-tools."""

import xml.etree.ElementTree as ET

import pytest

from simlab.lab import Lab
from simlab.vm import machine, sushy

pytestmark = pytest.mark.layers(1, 2)

HW = {"name": "node02", "index": 2, "kind": "vm", "preset": "factory", "cpu_vendor": "intel", "bmc": "sushy",
      "bmc_vendor": "hpe", "memory_mb": 1536, "smp": 2, "ssh_port": 40022, "mgmt_mac": "52:54:00:00:00:02",
      "nics": [{"index": 0, "mac": "52:54:00:01:00:02", "vm_port": 41000, "hub_port": 41001}]}


def _domain(tmp_path, bios):
    return sushy.domain_xml("lab1", tmp_path, HW, bios)


def _set(domain, **attrs):
    """The domain as sushy-tools leaves it after a BIOS PATCH: the attributes
    in its metadata changed."""
    tree = ET.fromstring(domain)
    for a in tree.find(f"metadata/{{{sushy.SUSHY_NS}}}bios/{{{sushy.SUSHY_NS}}}attributes"):
        if a.get("name") in attrs:
            a.set("value", attrs[a.get("name")])
    return ET.tostring(tree, encoding="unicode")


def test_the_domain_is_the_lab_nodes_board_with_its_factory_bios_in_sushy_tools_metadata(tmp_path):
    bios = Lab.factory_bios(HW)
    tree = ET.fromstring(_domain(tmp_path, bios))
    assert tree.findtext("name") == "simlab-lab1-node02"
    assert tree.findtext("uuid") == sushy.domain_uuid("lab1", "node02")
    assert (tree.findtext("memory"), tree.findtext("vcpu")) == ("1536", "2")
    assert tree.findtext("devices/emulator") == str(sushy.emulator_path(tmp_path))
    # the same devices and SMBIOS identity as a node behind the lab's own BMC, and its QMP where the lab looks
    args = [a.get("value") for a in tree.find("{http://libvirt.org/schemas/domain/qemu/1.0}commandline")]
    assert args[:-2] == machine.board_args(tmp_path, HW)
    assert args[-2:] == ["-qmp", f"unix:{tmp_path / 'nodes' / 'node02' / 'qmp.sock'},server=on,wait=off"]
    assert "intel-iommu,intremap=on" not in args          # the firmware's to add, at power-on
    attrs = {a.get("name"): a.get("value")
             for a in tree.find(f"metadata/{{{sushy.SUSHY_NS}}}bios/{{{sushy.SUSHY_NS}}}attributes")}
    assert attrs == {k: str(v) for k, v in bios["current"].items()}
    assert (attrs["Sriov"], attrs["IntelProcVtd"]) == ("Disabled", "Disabled")
    # libvirt adds no controller that would move the igb off bus 1
    assert tree.find("devices/controller[@type='usb']").get("model") == "none"
    assert tree.find("devices/memballoon").get("model") == "none"


def test_the_firmware_puts_the_iommu_on_the_machine_only_while_the_bios_enables_vt_d(tmp_path):
    domain = _domain(tmp_path, Lab.factory_bios(HW))
    assert sushy.post_args(domain) == []
    assert sushy.post_args(_set(domain, Sriov="Enabled")) == []
    assert sushy.post_args(_set(domain, IntelProcVtd="Enabled")) == ["-device", "intel-iommu,intremap=on"]
    ready = dict(HW, preset="ready")
    assert sushy.post_args(_domain(tmp_path, Lab.factory_bios(ready))) == ["-device", "intel-iommu,intremap=on"]


@pytest.mark.parametrize("vendor,name", [("dell", "ProcVirtualization"), ("supermicro", None)])
def test_each_vendors_vt_d_attribute_decides(tmp_path, vendor, name):
    hw = dict(HW, bmc_vendor=vendor)
    bios = Lab.factory_bios(hw)
    from simlab.bmc import vendors
    attr = vendors.switch_attribute(vendor, bios["current"], "iommu")
    assert attr and (name is None or attr == name)
    domain = sushy.domain_xml("lab1", tmp_path, hw, bios)
    assert sushy.post_args(domain) == []
    on = "Enable" if vendors.off_value(vendor, bios["current"], attr) == "Disable" else "Enabled"
    assert sushy.post_args(_set(domain, **{attr: on})) == ["-device", "intel-iommu,intremap=on"]


def test_the_emulator_adds_the_iommu_before_the_first_device_of_a_domains_start_only(tmp_path):
    conf = tmp_path / "qemu"
    conf.mkdir()
    domain = _set(_domain(tmp_path, Lab.factory_bios(HW)), IntelProcVtd="Enabled")
    (conf / "simlab-lab1-node02.xml").write_text(domain)
    start = ["-name", "guest=simlab-lab1-node02,debug-threads=on", "-machine", "pc-q35-10.0",
             "-chardev", "file,id=charserial0", "-device", "isa-serial,chardev=charserial0", "-device", "igb"]
    argv = sushy.emulator_argv(start, str(conf))
    tail = argv[argv.index("-name"):]
    assert tail == start[:6] + ["-device", "intel-iommu,intremap=on"] + start[6:]
    # libvirt's capability probes and a domain whose BIOS has VT-d off run QEMU as asked
    probe = ["-S", "-no-user-config", "-nodefaults", "-nographic", "-machine", "none,accel=kvm:tcg"]
    assert sushy.emulator_argv(probe, str(conf))[-len(probe):] == probe
    (conf / "simlab-lab1-node02.xml").write_text(_set(domain, IntelProcVtd="Disabled"))
    assert "intel-iommu,intremap=on" not in sushy.emulator_argv(start, str(conf))
    # a domain libvirt keeps no configuration of (or an unreadable one): no IOMMU, QEMU still starts
    (conf / "simlab-lab1-node02.xml").unlink()
    assert sushy.emulator_argv(start, str(conf))[-len(start):] == start


def test_sushy_nodes_must_be_nodes_of_the_lab_and_only_vm_nodes_have_them():
    from simlab.vm import lab as vm_lab
    doc = vm_lab.plan("lab1", 2, sushy_nodes=["node02"])
    assert [(hw["name"], hw["bmc"]) for hw in doc["nodes"]] == [("node01", "twin"), ("node02", "sushy")]
    with pytest.raises(ValueError, match="--sushy-nodes names node03, not a node of this lab"):
        vm_lab.plan("lab1", 2, sushy_nodes=["node03"])
    import argparse

    from simlab.containers import ContainerBackend
    with pytest.raises(ValueError, match="only VM nodes"):
        ContainerBackend().plan("lab1", argparse.Namespace(sushy_nodes="node02"))
