"""Layers 4 (NIC firmware) and 8 (host RoCE QoS) are ConnectX's: on a node
whose selected PFs are not ConnectX (the VM nodes' emulated Intel 82576,
igb 8086:10c9, or an Intel E810 8086:159b) the role and the doctor say "not
applicable", naming the PCI ids, with the doctor's status for a layer that
does not apply ('skipped', shown '-' in the layer report); on a mixed node
they take only the ConnectX PFs and name those left out. Layers 5 and 6 select
any vendor's PFs by gpufabric_nics' match.

The sysfs trees are laid out as a real kernel lays them out
(tests/unit/real_sysfs.py, which gives the kernel sources of that layout)."""

import pytest

from ansible_collections.gpufabric.stack.plugins.filter import doctor as doctor_filters
from ansible_collections.gpufabric.stack.plugins.filter import nic_firmware as firmware_filters
from ansible_collections.gpufabric.stack.plugins.filter import sriov as sriov_filters
from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, doctor_report
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import roce_host as roce_host_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import sriov_vfs as sriov_vfs_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_drivers as rdma_drivers_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import nic_firmware as nic_firmware_check
from real_sysfs import RealSysfs

pytestmark = pytest.mark.layers(4, 8)

IGB = [{"match": {"vendor_device": "8086:10c9"}, "num_vfs": 7}]
INTENT = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp", "ecn": True,
          "host_mtu": 9000}


def vm_node(tmp_path, connectx=False, e810=False):
    t = RealSysfs(tmp_path / "sys")
    t.virtio_net("0000:00:03.0", name="eth0")
    t.sriov_pf("0000:01:00.0", "enp1s0")
    if e810:
        t.sriov_pf("0000:02:00.0", "ens2f0", device="159b", vf_device="1889", totalvfs=128, driver="ice",
                   vf_driver="iavf", bridge="0000:00:02.1")
    if connectx:
        t.sriov_pf("0000:3b:00.0", "enp59s0f0np0", vendor="15b3", device="1021", vf_device="101e", totalvfs=16,
                   driver="mlx5_core", vf_driver="mlx5_core", bridge="0000:00:02.2", rdma="mlx5_0")
    return t, sysfs_nic.discover(t.root)


# ---------------------------------------------------------------- layer 4

def test_layer4_selection_of_an_igb_node_is_not_applicable(tmp_path):
    _, nics = vm_node(tmp_path)
    got = firmware_filters.nic_firmware_selection(nics, IGB, 16, {}, "15b3")
    assert got["pfs"] == [] and got["devices"] == []
    assert got["not_applicable"] == "not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"
    assert got["left_out"] == [{"pci_address": "0000:01:00.0", "vendor_device": "8086:10c9", "name": "enp1s0"}]


def test_layer4_selection_of_an_e810_names_every_pci_id(tmp_path):
    _, nics = vm_node(tmp_path, e810=True)
    entries = [{"match": {"vendor_device": "8086:10c9"}, "num_vfs": 7},
               {"match": {"pci_address": "02:00.0"}, "num_vfs": 8}]
    got = sriov.firmware_selection(nics, entries, 16)
    assert got["not_applicable"] == ("not applicable: 0000:01:00.0 is 8086:10c9, 0000:02:00.0 is 8086:159b, "
                                     "not a ConnectX (15b3)")


def test_layer4_on_a_mixed_node_sets_only_the_connectx_and_names_the_others(tmp_path):
    _, nics = vm_node(tmp_path, connectx=True)
    entries = IGB + [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8}]
    got = firmware_filters.nic_firmware_selection(nics, entries, 16, {})
    assert got["pfs"] == [{"pci_address": "0000:3b:00.0", "num_vfs": 16}]
    assert [d["device"] for d in got["devices"]] == ["0000:3b:00.0"]
    assert got["not_applicable"] == ""
    assert got["left_out_text"] == "left out: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"


def test_the_doctor_says_layer4_does_not_apply_and_the_report_shows_a_dash(tmp_path):
    _, nics = vm_node(tmp_path)
    sel = firmware_filters.nic_firmware_selection(nics, IGB, 16, {}, "15b3")
    # the check's mlx_config query is left out when nothing is selected: no answer
    res = nic_firmware_check.check_nic_firmware(None, sel["pfs"], nics, "", sel["left_out"])
    assert res["layer"] == 4 and res["status"] == "skipped"
    assert res["reason"] == "not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"
    assert res["evidence"] == ["0000:01:00.0 (8086:10c9): not a ConnectX, this layer does not apply"]
    verdict = doctor_filters.doctor_verdict([doctor.result(3, "pass", "ok"), res, doctor.result(5, "pass", "ok")])
    assert verdict["verdict"]["status"] == "pass"
    lines = doctor_report.table({"vm01": verdict})
    assert lines[0].split()[:4] == ["host", "L3", "L4", "L5"]
    assert lines[2].split() == ["vm01", "ok", "-", "ok", "healthy"]


def test_the_doctor_judges_the_connectx_of_a_mixed_node_and_names_the_others(tmp_path):
    _, nics = vm_node(tmp_path, connectx=True)
    with open(tmp_path / "sys/bus/pci/devices/0000:3b:00.0/sriov_totalvfs", "w") as fh:
        fh.write("16\n")
    nics = sysfs_nic.discover(str(tmp_path / "sys"))
    sel = sriov.firmware_selection(nics, IGB + [{"match": {"name": "enp59s0f0np0"}, "num_vfs": 8}], 16)
    checked = {"devices": [{"device": "0000:3b:00.0", "fw_version": "28.39.1002", "pending": [], "changed_params": [],
                            "current": {"SRIOV_EN": True, "NUM_OF_VFS": 16}}]}
    res = nic_firmware_check.check_nic_firmware(checked, sel["pfs"], nics, "", sel["left_out"])
    assert res["status"] == "pass"
    assert res["reason"].endswith("(left out: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3))")
    assert "left out: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)" in res["evidence"]
    # a ConnectX that fails still fails, naming the others in its evidence
    checked["devices"][0]["current"]["NUM_OF_VFS"] = 4
    with open(tmp_path / "sys/bus/pci/devices/0000:3b:00.0/sriov_totalvfs", "w") as fh:
        fh.write("4\n")
    nics = sysfs_nic.discover(str(tmp_path / "sys"))
    res = nic_firmware_check.check_nic_firmware(checked, sel["pfs"], nics, "", sel["left_out"])
    assert res["status"] == "fail" and res["evidence"][-1].startswith("left out: 0000:01:00.0")


def test_no_pf_selected_at_all_still_fails_layer4(tmp_path):
    _, nics = vm_node(tmp_path)
    sel = sriov.firmware_selection(nics, [{"match": {"name": "ens9"}, "num_vfs": 7}], 16)
    res = nic_firmware_check.check_nic_firmware({}, sel["pfs"], nics, "", sel["left_out"])
    assert res["status"] == "fail" and res["reason"] == "no PF matches gpufabric_nics"


# ---------------------------------------------------------------- layer 8

class FakeModule(object):
    """What roce_qos_host needs of an AnsibleModule, on a node without any
    of the ConnectX tools: asking for one is an error the test sees."""
    check_mode = False
    _diff = False

    def __init__(self):
        self.asked = []

    def get_bin_path(self, tool, required=False, opt_dirs=None):
        self.asked.append(tool)
        return None

    def run_command(self, argv, **kw):
        raise AssertionError("ran %s" % argv)

    def warn(self, msg):
        pass


@pytest.mark.parametrize("state", ["gathered", "merged"])
def test_roce_qos_on_an_igb_node_is_not_applicable_and_runs_no_tool(tmp_path, state):
    t, _ = vm_node(tmp_path)
    module = FakeModule()
    got = roce_qos_host.online(module, {"node": "vm01", "config": INTENT, "state": state, "sysfs_root": t.root,
                                        "pfs": [{"vendor_device": "8086:10c9"}, {"name": "enp1s0"}],
                                        "rdma_port": 1, "firmware_query": True})
    assert module.asked == []
    assert got["changed"] is False and got["commands"] == [] and got["pfs"] == [] and got["drift"] == []
    assert got["not_applicable"] == "not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"
    res = roce_host_check.layer_result("vm01", got, None, True, "gpufabric-roce-qos",
                                       {"differences": [], "unchecked": [], "checked": 0})
    assert res["layer"] == 8 and res["status"] == "skipped"
    assert res["reason"] == "not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"
    # not 'the boot unit is not enabled': that unit is never installed here
    assert "gpufabric-roce-qos" not in res["reason"]


def test_roce_qos_selection_of_a_mixed_node_keeps_the_connectx(tmp_path):
    t, _ = vm_node(tmp_path, connectx=True)
    got = roce_qos_host.selection("vm01", t.root, [{"name": "enp1s0"}, {"name": "enp59s0f0np0"}])
    assert [p["pci_address"] for p in got["pfs"]] == ["0000:3b:00.0"]
    assert got["left_out_text"] == "left out: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"
    # an igb PF is left out before the ConnectX checks (netdev, RDMA device) could fail it
    t2, _ = vm_node(tmp_path / "nodriver")
    got = roce_qos_host.selection("vm02", t2.root, [{"pci_address": "0000:01:00.0"}])
    assert got["pfs"] == [] and got["not_applicable"].startswith("not applicable: 0000:01:00.0 is 8086:10c9")


def test_the_layer8_verdict_of_a_mixed_node_names_the_pfs_left_out():
    check = {"drift": [], "not_settable": [], "notes": [], "gathered": {"enp59s0f0np0": {}},
             "left_out": [{"pci_address": "0000:01:00.0", "vendor_device": "8086:10c9", "name": "enp1s0"}],
             "not_applicable": "", "left_out_text": "left out: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"}
    res = roce_host_check.layer_result("node01", check, True)
    assert res["status"] == "pass"
    assert res["reason"] == "1 PF(s) match the RoCE intent (left out: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3))"
    res = roce_host_check.layer_result("node01", dict(check, drift=["enp59s0f0np0 trust pcp, wanted dscp"]), True)
    assert res["status"] == "fail" and res["evidence"][-1].startswith("left out: 0000:01:00.0")


# ---------------------------------------------------------------- layer 5

MODULES = ["mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_ucm"]


def test_layer5_selects_igb_pfs_and_asks_them_for_their_driver_only(tmp_path):
    _, nics = vm_node(tmp_path)
    pfs = sriov_filters.sriov_selected_pfs(nics, IGB)
    res = rdma_drivers_check.check_rdma_drivers(pfs, nics, MODULES, MODULES, "/sys", "15b3")
    assert res["layer"] == 5 and res["status"] == "pass"
    assert res["reason"] == ("modules loaded, every PF bound, every ConnectX with an RDMA device "
                             "(0000:01:00.0 is 8086:10c9, not a ConnectX (15b3))")
    assert res["evidence"] == ["0000:01:00.0 (8086:10c9): driver igb bound, no RDMA device needed (not 15b3)"]


def test_layer5_still_wants_a_driver_on_every_pf_and_an_rdma_device_on_a_connectx(tmp_path):
    t = RealSysfs(tmp_path / "sys")
    t.sriov_pf("0000:01:00.0", "enp1s0", driver=None)
    t.sriov_pf("0000:3b:00.0", "enp59s0f0np0", vendor="15b3", device="1021", vf_device="101e", totalvfs=16,
               driver="mlx5_core", bridge="0000:00:02.2")
    nics = sysfs_nic.discover(t.root)
    entries = IGB + [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8}]
    pfs = sriov.selected_pfs(nics, entries)
    res = rdma_drivers_check.check_rdma_drivers(pfs, nics, MODULES, MODULES)
    assert (res["status"], res["reason"]) == ("fail", "PF 0000:01:00.0 has no driver bound")
    res = rdma_drivers_check.check_rdma_drivers(pfs[1:], nics, MODULES, MODULES)
    assert (res["status"], res["reason"]) == ("fail", "PF 0000:3b:00.0 has no RDMA device")
    assert res["evidence"] == ["0000:3b:00.0: driver bound, no infiniband/ entry"]
    res = rdma_drivers_check.check_rdma_drivers(pfs[1:], nics, MODULES[:1], MODULES, "/host/sys")
    assert (res["reason"], res["evidence"][0]) == ("module mlx5_ib not loaded", "/host/sys/module/mlx5_ib absent")
    res = rdma_drivers_check.check_rdma_drivers([], nics, MODULES, MODULES)
    assert (res["reason"], res["evidence"]) == ("no PF matches gpufabric_nics", ["0000:01:00.0", "0000:3b:00.0"])


def test_layer5_on_soft_roce_igb_wants_the_rxe_device_when_8086_is_the_rdma_vendor(tmp_path):
    # the VM inventory: rdma_drivers_vendor 8086, Soft-RoCE (rdma_rxe) over each igb PF
    t, nics = vm_node(tmp_path)
    pfs = sriov.selected_pfs(nics, IGB)
    res = rdma_drivers_check.check_rdma_drivers(pfs, nics, MODULES, MODULES, "/sys", "8086")
    assert (res["status"], res["reason"]) == ("fail", "PF 0000:01:00.0 has no RDMA device")
    t.rxe("rxe0", "enp1s0")
    nics = sysfs_nic.discover(t.root)
    res = rdma_drivers_check.check_rdma_drivers(sriov.selected_pfs(nics, IGB), nics, MODULES, MODULES, "/sys", "8086")
    assert (res["status"], res["reason"], res["evidence"]) == (
        "pass", "modules loaded, every PF bound with an RDMA device", ["0000:01:00.0 rxe0"])


# ---------------------------------------------------------------- layer 6

def test_layer6_on_igb_names_the_vf_driver_and_lists_nics_by_name(tmp_path):
    t = RealSysfs(tmp_path / "sys")
    t.virtio_net("0000:00:03.0", name="eth0")
    t.sriov_pf("0000:01:00.0", "enp1s0", numvfs=2, unbound_vfs=(1,))
    t.sriov_pf("0000:02:00.0", "enp2s0", numvfs=2, vf_driver=None, bridge="0000:00:02.1")
    nics = sysfs_nic.discover(t.root)
    res = sriov_vfs_check.check_sriov_vfs(nics, [{"match": {"name": "enp1s0"}, "num_vfs": 2}], True, True)
    assert (res["status"], res["reason"]) == ("fail", "pf enp1s0: VF 1 without a netdev")
    assert res["remediation"] == "check sriov_drivers_autoprobe and the VF driver binding (igbvf)"
    res = sriov_vfs_check.check_sriov_vfs(nics, [{"match": {"name": "enp2s0"}, "num_vfs": 2}], True, True)
    assert res["remediation"] == ("check sriov_drivers_autoprobe and the VF driver binding "
                                  "(the driver of its VFs, 8086:10ca)")
    res = sriov_vfs_check.check_sriov_vfs(nics, [{"match": {"name": "ens9"}, "num_vfs": 2}], True, True)
    assert res["reason"] == "no PF matches name=ens9"
    assert res["evidence"][0].startswith("PFs: eth0 (0000:00:03.0, 1af4:1041, no SR-IOV), "
                                         "enp1s0 (0000:01:00.0, 8086:10c9, SR-IOV 7 VFs)")
