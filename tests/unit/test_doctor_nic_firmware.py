"""The doctor's layer 4 verdict (module_utils doctor.check_nic_firmware, the
filter doctor_nic_firmware) over mlx_config's check-mode answer from the
twin's mstconfig and mstflint and a nic_facts reading of the twin kernel's
sysfs; and the PFs layer 4 selects (sriov.firmware_selection, the filter
nic_firmware_selection)."""

import pytest

from ansible_collections.gpufabric.stack.plugins.filter import nic_firmware as firmware_filters
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import nic_firmware as nic_firmware_check
from test_mlx_config_module import PF0, PF1, _call, agent  # noqa: F401 agent is the twin's mstconfig/mstflint
from test_twin_kernel import make

pytestmark = pytest.mark.layers(4)

EIGHT = [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8}]


def nics(tmp_path, preset):
    """nic_facts' nics of the twin kernel with this firmware preset."""
    _, tree, _ = make(preset=preset)
    root = tmp_path / preset
    tree.materialize(str(root))
    return sysfs_nic.discover(str(root))


def judge(found, entries, num_vfs=0, min_fw_version="", extra_devices=()):
    """What check.yml does: select, query in check mode, judge."""
    selection = firmware_filters.nic_firmware_selection(found, entries, num_vfs)
    devices = selection["devices"] + list(extra_devices)
    checked = _call({"devices": devices, "at_least": ["NUM_OF_VFS"]}, check=True) if devices else {"skipped": True}
    return nic_firmware_check.check_nic_firmware(checked, selection["pfs"], found, min_fw_version)


def ready(agent):  # noqa: F811
    for state in agent.kernel.firmware.values():
        for col in ("current", "next"):
            state[col].update(SRIOV_EN=1, NUM_OF_VFS=16)


def test_factory_firmware_fails_with_sriov_off_on_every_pf(agent, tmp_path):  # noqa: F811
    v = judge(nics(tmp_path, "factory"), EIGHT)
    assert (v["layer"], v["name"], v["status"]) == (4, "nic_firmware", "fail")
    assert v["reason"] == "SR-IOV disabled in NIC firmware (no sriov_totalvfs)"
    assert [e.split(": ")[0] for e in v["evidence"]] == [PF0, PF1]
    assert all("no sriov_totalvfs, SRIOV_EN current" in e for e in v["evidence"])
    assert "tag layer04" in v["remediation"]


def test_staged_firmware_warns_until_the_reboot(agent, tmp_path):  # noqa: F811
    found = nics(tmp_path, "factory")
    _call({"devices": firmware_filters.nic_firmware_selection(found, EIGHT)["devices"], "at_least": ["NUM_OF_VFS"]})
    v = judge(found, EIGHT)
    assert v["status"] == "warn" and v["reason"] == "firmware change pending a reboot: NUM_OF_VFS current 0 next 8"
    # SR-IOV is still off in sysfs: that is said too, as waiting for the same reboot
    assert [e.split(": ")[0] for e in v["evidence"] if "no sriov_totalvfs" in e] == [PF0, PF1]
    assert PF1 + ": NUM_OF_VFS current 0 next 8" in v["evidence"]
    assert v["remediation"].startswith("Reboot the node")


def test_ready_firmware_passes_with_version_and_values_as_evidence(agent, tmp_path):  # noqa: F811
    ready(agent)
    v = judge(nics(tmp_path, "ready"), EIGHT)
    assert v["status"] == "pass" and v["reason"] == "SR-IOV enabled in NIC firmware with enough VFs"
    assert len(v["evidence"]) == 2 and v["evidence"][0].startswith(PF0 + ": firmware ")
    assert v["evidence"][0].endswith(", NUM_OF_VFS 16") and v["remediation"] == ""


def test_old_firmware_and_a_minimum_that_is_no_version(agent, tmp_path):  # noqa: F811
    ready(agent)
    found = nics(tmp_path, "ready")
    v = judge(found, EIGHT, min_fw_version="99.1")
    assert v["status"] == "fail" and v["reason"].endswith(" older than minimum 99.1")
    assert v["reason"].startswith("firmware ") and v["evidence"][0].startswith(PF0 + ": firmware ")
    assert judge(found, EIGHT, min_fw_version="1.0")["status"] == "pass"
    bad = judge(found, EIGHT, min_fw_version="latest")
    assert bad["status"] == "fail" and bad["reason"] == "NIC firmware unreadable"
    assert "nic_firmware_min_fw_version 'latest'" in bad["evidence"][0]


def test_more_vfs_than_the_firmware_offers_differs_from_intent(agent, tmp_path):  # noqa: F811
    ready(agent)
    v = judge(nics(tmp_path, "ready"), [{"match": {"pci_address": PF0}, "num_vfs": 32}])
    assert v["status"] == "fail" and v["reason"] == "NIC firmware differs from intent"
    assert v["evidence"] == [PF0 + ": sriov_totalvfs 16, 32 wanted", PF0 + ": NUM_OF_VFS next boot 16, wanted 32"]


def test_no_pf_selected_and_an_unreadable_device(agent, tmp_path):  # noqa: F811
    ready(agent)
    found = nics(tmp_path, "ready")
    v = judge(found, [{"match": {"pci_address": "0000:af:00.0"}, "num_vfs": 8}])
    assert v["status"] == "fail" and v["reason"] == "no PF matches gpufabric_nics" and v["evidence"] == [PF0, PF1]
    bad = {"device": "0000:99:00.0", "params": {"SRIOV_EN": True}}
    v = judge(found, EIGHT, extra_devices=[bad])
    assert v["status"] == "fail" and v["reason"] == "NIC firmware unreadable"
    assert [e for e in v["evidence"] if "0000:99:00.0" in e]


def test_the_selection_takes_the_largest_num_vfs_and_keeps_the_pf_order():
    found = [{"name": "ens1f0np0", "pci_address": PF0, "vendor_device": "15b3:1021"},
             {"name": "ens2f0np0", "pci_address": PF1, "vendor_device": "15b3:1021"},
             {"name": "eno1", "pci_address": "0000:01:00.0", "vendor_device": "8086:1521"}]
    entries = [{"match": {"pci_address": PF1[5:]}, "num_vfs": 24},         # a short BDF
               {"match": {"vendor_device": "15B3:1021"}, "num_vfs": 8},     # upper case
               {"match": {"name": "nope"}, "num_vfs": 64}]                  # selects nothing
    got = firmware_filters.nic_firmware_selection(found, entries, 12, {"LINK_TYPE_P1": "ETH", "NUM_OF_VFS": 1})
    assert got["pfs"] == [{"pci_address": PF0, "num_vfs": 12}, {"pci_address": PF1, "num_vfs": 24}]
    assert got["devices"] == [
        {"device": PF0, "params": {"LINK_TYPE_P1": "ETH", "SRIOV_EN": True, "NUM_OF_VFS": 12}},
        {"device": PF1, "params": {"LINK_TYPE_P1": "ETH", "SRIOV_EN": True, "NUM_OF_VFS": 24}}]
    assert firmware_filters.nic_firmware_selection(found, [], 16) == {"pfs": [], "devices": [], "left_out": [],
                                                                  "not_applicable": "", "left_out_text": "", "problems": []}
