"""The NM_UNMANAGED udev rule of layer 6: written by sriov_vf before the VFs
exist, for the addresses the kernel will give them.

The addresses follow drivers/pci/iov.c: ``pci_iov_virtfn_bus()`` is the PF's
bus plus ``(devfn + offset + stride * id) >> 8`` and
``pci_iov_virtfn_devfn()`` is the same sum ``& 0xff``, with the offset and
stride the PF's SR-IOV capability gives (sysfs ``sriov_offset``,
``sriov_stride``). QEMU's igb (hw/net/igb.c: ``IGB_VF_OFFSET 0x80``,
``IGB_VF_STRIDE 2``) puts the VFs of the VM nodes' PF 0000:01:00.0 at
0000:01:10.0, 0000:01:10.2, ...; tests/vm checks the rule against the real
kernel's virtfn links.
"""

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov_host
from simlab.tools import nmcli

pytestmark = pytest.mark.layers(6)


def pf(address, offset, stride, numvfs=0, name="enp1s0"):
    return {"name": name, "pci_address": address, "vendor_device": "8086:10c9", "vendor": "8086", "bound": True, "link_type": "ETH",
            "sriov": {"capable": True, "totalvfs": 7, "numvfs": numvfs, "offset": offset, "stride": stride,
                      "drivers_autoprobe": True}}


def test_vf_addresses_of_qemu_igb():
    assert sriov.vf_addresses(pf("0000:01:00.0", 128, 2), 4) == [
        "0000:01:10.0", "0000:01:10.2", "0000:01:10.4", "0000:01:10.6"]


def test_vf_addresses_carry_into_the_next_bus():
    # devfn 0x01 + offset 254: VF 0 at devfn 0xff, VF 1 on the next bus
    assert sriov.vf_addresses(pf("0000:af:00.1", 254, 1), 3) == [
        "0000:af:1f.7", "0000:b0:00.0", "0000:b0:00.1"]


def test_vf_addresses_unknown_without_offset_or_stride():
    assert sriov.vf_addresses(pf("0000:01:00.0", None, 2), 2) is None
    assert sriov.vf_addresses(pf("0000:01:00.0", 128, None), 2) is None


def test_rule_is_what_the_nmcli_twin_reads(tmp_path):
    text = sriov.nm_unmanaged_rule([("enp1s0", ["0000:01:10.0", "0000:01:10.2"]), ("enp2s0", [])])
    rules = tmp_path / "rules.d"
    rules.mkdir()
    (rules / "70-gpufabric-nm-unmanaged.rules").write_text(text)
    assert nmcli.unmanaged_bdfs_rules([rules]) == ["0000:01:10.0", "0000:01:10.2"]
    assert "enp2s0" not in text


def test_write_file_replaces_and_says_whether_it_changed(tmp_path):
    path = str(tmp_path / "etc/udev/rules.d/x.rules")
    assert sriov.write_file(path, "a\n") is True
    assert sriov.write_file(path, "a\n") is False
    assert sriov.write_file(path, "b\n") is True
    assert open(path).read() == "b\n"
    assert oct((tmp_path / "etc/udev/rules.d/x.rules").stat().st_mode & 0o777) == "0o644"


class Module(object):
    def __init__(self, params, check_mode=False):
        self.params = params
        self.check_mode = check_mode
        self.ran = []

    def get_bin_path(self, name, required=False):
        return None

    def run_command(self, argv, check_rc=False):
        self.ran.append(argv)
        return 0, "", ""


class Stop(Exception):
    pass


@pytest.fixture
def one_pf(monkeypatch):
    monkeypatch.setattr(sriov_host.sysfs_nic, "discover", lambda root: [pf("0000:01:00.0", 128, 2)])
    monkeypatch.setattr(sriov_host.sysfs_nic, "vf_list", lambda fs, bdf: [])


def test_rule_is_in_place_before_the_first_sriov_numvfs_write(tmp_path, monkeypatch, one_pf):
    rule = tmp_path / "70-gpufabric-nm-unmanaged.rules"
    seen = {}

    def set_numvfs(fs, pf_, num, log):
        seen["rule"] = rule.read_text() if rule.exists() else None
        raise Stop()

    monkeypatch.setattr(sriov_host.sriov, "set_numvfs", set_numvfs)
    module = Module(dict(sysfs_root="/sys", wait_timeout=1, ip_command="ip", nm_unmanaged_rule=str(rule),
                         protected_addresses=[], passthrough_dir=None, modprobe_command="modprobe",
                         pfs=[dict(pci_address="0000:01:00.0", num_vfs=2, name=None, vendor_device=None,
                                   vf_defaults=None, vfs=None, vf_mtu=None)]))
    with pytest.raises(Stop):
        sriov_host.run(module, backend=None)
    assert seen["rule"] is not None, "sriov_numvfs was written before the NM_UNMANAGED rule"
    assert 'KERNELS=="0000:01:10.0"' in seen["rule"] and 'KERNELS=="0000:01:10.2"' in seen["rule"]


def test_check_mode_writes_no_rule_and_says_it_would(tmp_path, one_pf):
    rule = tmp_path / "70-gpufabric-nm-unmanaged.rules"

    class Backend(object):
        def get_vfs(self, name):
            return {}

    module = Module(dict(sysfs_root="/sys", wait_timeout=1, ip_command="ip", nm_unmanaged_rule=str(rule),
                         protected_addresses=[], passthrough_dir=None, modprobe_command="modprobe",
                         pfs=[dict(pci_address="0000:01:00.0", num_vfs=2, name=None, vendor_device=None,
                                   vf_defaults=None, vfs=None, vf_mtu=None)]), check_mode=True)
    changed, _results, commands, before, after, _passthrough = sriov_host.run(module, Backend())
    assert changed and not rule.exists()
    assert commands[0] == "write %s (2 VF line(s))" % rule
    assert before["udev_rule"] == [] and any("0000:01:10.2" in line for line in after["udev_rule"])
