"""nic_facts discovery and the sriov_vf plan against twin sysfs trees."""

import errno

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import sriov_vfs as sriov_vfs_check
from test_twin_kernel import make

pytestmark = pytest.mark.layers(6)


def facts(tmp_path, **kw):
    k, t, clock = make(**kw)
    return k, t, clock


def discover(t, tmp_path):
    root = tmp_path / "sys"
    t.materialize(str(root))
    return sysfs_nic.discover(str(root)), str(root)


def test_discover_maps_netdev_pci_rdma_through_links(tmp_path):
    k, t, clock = make()
    t.write("/bus/pci/devices/0000:3b:00.0/sriov_numvfs", b"2")
    clock.t += 1
    pfs, root = discover(t, tmp_path)
    assert [p["name"] for p in pfs] == ["enp59s0f0np0", "enp134s0f0np0"]
    pf = pfs[0]
    assert pf["pci_address"] == "0000:3b:00.0"
    assert pf["vendor_device"] == "15b3:1021"
    assert pf["driver"] == "mlx5_core" and pf["numa_node"] == 0 and pf["link_type"] == "ETH"
    assert pf["speed_mbps"] == 400000
    assert pf["sriov"] == {"capable": True, "totalvfs": 16, "numvfs": 2, "vf_device": "101e",
                           "offset": 1, "stride": 1, "drivers_autoprobe": True, "iov_bars_assigned": True}
    assert [(v["index"], v["pci_address"], v["netdev"], v["rdma_device"]) for v in pf["vfs"]] == [
        (0, "0000:3b:00.1", "enp59s0f0v0", "rocep59s0f1"), (1, "0000:3b:00.2", "enp59s0f0v1", "rocep59s0f2")]
    assert pf["rdma_device"] == "rocep59s0f0"
    assert pf["rdma"]["roce_v2_gid_index"] == 3
    assert pf["rdma"]["gids"][3]["ipv4"] == "172.30.0.1"
    assert pfs[1]["numa_node"] == 1
    assert sysfs_nic.iommu_active(root) and sysfs_nic.iommus(root) == ["dmar0"]


def test_modules_and_cmdline(tmp_path):
    for name in ("mlx5_ib", "ib_core", "mlx5_core"):
        (tmp_path / "sys" / "module" / name).mkdir(parents=True)
    assert sysfs_nic.modules(str(tmp_path / "sys")) == ["ib_core", "mlx5_core", "mlx5_ib"]
    assert sysfs_nic.modules(str(tmp_path / "nowhere")) == []
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cmdline").write_bytes(b"BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on\n")
    assert sysfs_nic.cmdline(str(tmp_path / "proc")) == "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on"
    assert sysfs_nic.cmdline(str(tmp_path / "nowhere")) is None


def test_discover_kernel_rdma_names_and_unbound_pf(tmp_path):
    k, t, _ = make(driver="ofed")
    t.write("/bus/pci/drivers/mlx5_core/unbind", b"0000:86:00.0")
    pfs, _ = discover(t, tmp_path)
    assert pfs[0]["rdma_device"] == "mlx5_0" and pfs[0]["driver_flavor"] == "ofed"
    unbound = pfs[1]
    assert unbound["pci_address"] == "0000:86:00.0"
    assert unbound["name"] is None and unbound["driver"] is None and not unbound["bound"]


def test_discover_reports_sriov_off_in_firmware(tmp_path):
    k, t, _ = make(preset="factory")
    pfs, _ = discover(t, tmp_path)
    assert pfs[0]["sriov"] == {"capable": False, "totalvfs": None, "numvfs": None}


def test_discover_tells_pfs_without_iov_bars(tmp_path):
    # the MMIO window is too small for the VF BARs: resource lines 7-12 are zero
    k, t, _ = make(faults={"numvfs-enomem": True})
    pfs, _ = discover(t, tmp_path)
    assert [p["sriov"]["iov_bars_assigned"] for p in pfs] == [False, False]
    k, t, _ = make(faults={"numvfs-enomem": True}, cmdline="ro intel_iommu=on iommu=pt pci=realloc")
    pfs, _ = discover(t, tmp_path / "realloc")
    assert [p["sriov"]["iov_bars_assigned"] for p in pfs] == [True, True]


@pytest.mark.parametrize("text,assigned", [
    ("", None),
    ("0x1 0x2 0x3\n" * 7, None),
    ("0x0000000090000000 0x0000000091ffffff 0x000000000014220c\n" + "0x0 0x0 0x0\n" * 12, False),
    ("0x0 0x0 0x0\n" * 7 + "0x0000000092000000 0x0000000092ffffff 0x000000000014220c\n" + "0x0 0x0 0x0\n" * 5, True),
    ("0x0 0x0 0x0\n" * 12 + "0x0000000092000000 0x0000000092ffffff 0x000000000014220c\n", True),
])
def test_iov_bars_assigned_reads_lines_7_to_12(text, assigned):
    assert sysfs_nic.iov_bars_assigned(text) is assigned


def plan(pfs, **entry):
    entry.setdefault("num_vfs", 4)
    return sriov.build_plan(pfs, [entry])


@pytest.fixture
def pfs(tmp_path):
    k, t, _ = make()
    return discover(t, tmp_path)[0]


def test_plan_selects_by_name_pci_and_vendor_device(pfs):
    assert len(plan(pfs, vendor_device="15b3:1021")) == 2
    assert plan(pfs, pci_address="3b:00.0")[0][0]["name"] == "enp59s0f0np0"
    got = plan(pfs, name="enp134s0f0np0", vfs=[{"index": 1, "trust": True}])
    assert got[0][1]["vfs"][1] == {"spoofchk": True, "trust": True, "link_state": "auto"}
    assert got[0][1]["vfs"][0] == {"spoofchk": True, "trust": False, "link_state": "auto"}


@pytest.mark.parametrize("entry, words", [
    ({"name": "ens9"}, ["no PF matches name=ens9", "enp59s0f0np0"]),
    ({"name": "enp59s0f0np0", "num_vfs": 32}, ["enp59s0f0np0", "32 VFs requested", "sriov_totalvfs is 16"]),
    ({"name": "enp59s0f0np0", "vfs": [{"index": 0, "mac": "02:00:00:00:00"}]}, ["enp59s0f0np0", "vf 0", "mac"]),
    ({"name": "enp59s0f0np0", "vfs": [{"index": 0, "mac": "01:00:5e:00:00:01"}]}, ["multicast"]),
    ({"name": "enp59s0f0np0", "vfs": [{"index": 9}]}, ["index 9 is outside 0-3"]),
    ({"name": "enp59s0f0np0", "vfs": [{"index": 0, "trust": "yes"}]}, ["trust 'yes' is not a boolean"]),
    ({"name": "enp59s0f0np0", "vfs": [{"index": 0, "vlan": 5000}]}, ["vlan 5000"]),
    ({"name": "enp59s0f0np0", "vfs": [{"index": 0, "node_guid": "11:22:33:44:55:66:77:88"}]}, ["InfiniBand PFs only"]),
    ({"vendor_device": "15b3"}, ["vendor_device '15b3'"]),
    ({"name": "a", "pci_address": "0000:3b:00.0"}, ["exactly one of"]),
])
def test_plan_rejects_bad_input_naming_pf_and_value(pfs, entry, words):
    with pytest.raises(sriov.SriovError) as e:
        plan(pfs, **entry)
    for w in words:
        assert w in str(e.value)


def test_plan_tells_firmware_off_and_unbound_apart(tmp_path):
    k, t, _ = make(preset="factory")
    pfs, _ = discover(t, tmp_path / "a")
    with pytest.raises(sriov.SriovError, match="SR-IOV is disabled in the NIC firmware.*layer 4"):
        plan(pfs, name="enp59s0f0np0")
    k, t, _ = make()
    t.write("/bus/pci/drivers/mlx5_core/unbind", b"0000:3b:00.0")
    pfs, _ = discover(t, tmp_path / "b")
    with pytest.raises(sriov.SriovError, match=r"0000:3b:00.0.*no driver is bound.*layer 5"):
        plan(pfs, pci_address="0000:3b:00.0")


def test_numvfs_errors_name_the_cause():
    pf = {"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0"}
    msg = str(sriov.numvfs_error(pf, 8, OSError(errno.ENOMEM, "x")))
    assert "enp59s0f0np0" in msg and "MMIO" in msg and "pci=realloc" in msg
    assert "EBUSY" in str(sriov.numvfs_error(pf, 8, OSError(errno.EBUSY, "x")))


def test_vf_changes_and_ip_args():
    cur = {"vf": 0, "mac": "00:00:00:00:00:00", "vlan": 0, "qos": 0, "spoofchk": True, "trust": False,
           "link_state": "auto"}
    want = {"spoofchk": True, "trust": True, "link_state": "auto", "vlan": 100, "qos": 3, "mac": "02:AA:00:00:00:01"}
    delta = sriov.vf_changes(cur, want)
    assert delta == {"trust": True, "vlan": 100, "qos": 3, "mac": "02:AA:00:00:00:01"}
    assert sriov.ip_args("enp59s0f0np0", 0, delta) == [
        "link", "set", "dev", "enp59s0f0np0", "vf", "0", "mac", "02:AA:00:00:00:01",
        "vlan", "100", "qos", "3", "trust", "on"]
    assert sriov.vf_changes(cur, {"spoofchk": True, "trust": False, "mac": "00:00:00:00:00:00"}) == {}


@pytest.mark.parametrize("cur,want,args", [
    ({"vlan": 100, "qos": 0}, {"vlan": 100, "qos": 3}, ["vlan", "100", "qos", "3"]),
    ({"vlan": 100, "qos": 3}, {"vlan": 200, "qos": 3}, ["vlan", "200", "qos", "3"]),
    ({"vlan": 100, "qos": 3}, {"vlan": 200}, ["vlan", "200", "qos", "0"]),
    ({"vlan": 100, "qos": 3}, {"vlan": 0}, ["vlan", "0", "qos", "0"]),
])
def test_a_vlan_or_qos_change_sends_both_as_iproute2_takes_them(cur, want, args):
    """iproute2 reads ``vlan V`` without ``qos`` as qos 0: a change of the
    VLAN alone sends the QoS the intent wants, a change of the QoS alone
    the VLAN; a QoS the intent is silent on goes as 0, as at boot."""
    delta = sriov.vf_changes(dict(cur, vf=0), want)
    sent = sriov.ip_args("enp59s0f0np0", 0, sriov.vf_settings_to_send(want, delta))[6:]
    assert sent == args

    def vlan_qos(words):        # what a VF ends with: iproute2 reads a missing one as 0
        pairs = dict(zip(words[::2], words[1::2]))
        return pairs.get("vlan", "0"), pairs.get("qos", "0")
    boot = sriov.ip_args("enp59s0f0np0", 0, sriov.boot_settings(dict(want, index=0)))[6:]
    assert vlan_qos(boot) == vlan_qos(sent)


def test_every_layer_selects_the_pfs_of_gpufabric_nics_by_one_rule():
    """Layers 4, 5 and 6 (and their doctor checks), rdma_check and
    nccl_validate select with sriov's rule: a netdev name as the kernel spells
    it (a PCI domain other than 0 gives enP<domain>...), a PCI address full or
    short and vendor:device in any case."""
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs

    pfs = [{"name": "enP2p1s0f0np0", "pci_address": "0002:01:00.0", "vendor_device": "15b3:1021",
            "sriov": {"numvfs": 0, "totalvfs": 16}, "vfs": []},
           {"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "vendor_device": "15b3:1021",
            "sriov": {"numvfs": 0, "totalvfs": 16}, "vfs": []}]
    for match, want in (({"name": "enP2p1s0f0np0"}, ["0002:01:00.0"]),
                        ({"name": "enp2p1s0f0np0"}, []),               # names are case-sensitive
                        ({"pci_address": "3B:00.0"}, ["0000:3b:00.0"]),
                        ({"vendor_device": "15B3:1021"}, ["0000:3b:00.0", "0002:01:00.0"])):
        nics = [{"match": match, "num_vfs": 4}]
        in_pf_order = [p["pci_address"] for p in pfs if p["pci_address"] in want]
        assert [p["pci_address"] for p in sriov.selected_pfs(pfs, nics)] == in_pf_order
        assert sorted(d["device"] for d in sriov.firmware_selection(pfs, nics)["devices"]) == want
        assert [p["pci_address"] for p in rdma_pairs.select_pfs(pfs, nics)[0]] == want
        assert rdma_pairs.select_pfs(pfs, nics)[1] == ([] if want else [match])
        assert [p["pci_address"] for p in nccl_validate.select_pfs(pfs, nics)] == want
        v = sriov_vfs_check.check_sriov_vfs(pfs, nics, unit_enabled=True, udev_rule_present=True)
        assert v["reason"].startswith("no PF matches") != bool(want)


def test_the_doctor_judges_vf_settings_with_the_modules_own_plan(tmp_path):
    """Layer 6's check builds the sriov_vf module's plan (build_plan from
    module_pfs) and compares each VF's netlink settings with vf_changes, as
    the module does before it sends ip commands: what the module would change
    fails the layer, naming PF, VF, setting, found and intended values."""
    k, t, clock = make()
    t.write("/bus/pci/devices/0000:3b:00.0/sriov_numvfs", b"2")
    clock.t += 1
    pfs, _root = discover(t, tmp_path)
    nics = [{"match": {"name": "enp59s0f0np0"}, "num_vfs": 2, "vf_mtu": 1500,
             "vfs": [{"index": 0, "mac": "02:00:00:00:00:10", "vlan": 100}]}]
    pf = pfs[0]

    def ip(vf0=None):
        vfs = {0: {"vf": 0, "mac": "02:00:00:00:00:10", "vlan": 100, "qos": 0, "spoofchk": True, "trust": False,
                   "link_state": "auto", "max_tx_rate": 0, "min_tx_rate": 0},
               1: {"vf": 1, "mac": "00:00:00:00:00:00", "vlan": 0, "qos": 0, "spoofchk": True, "trust": False,
                   "link_state": "auto", "max_tx_rate": 0, "min_tx_rate": 0}}
        vfs[0].update(vf0 or {})
        return {"enp59s0f0np0": dict((str(i), v) for i, v in vfs.items())}

    def run(settings):
        return sriov_vfs_check.check_sriov_vfs([pf], nics, unit_enabled=True, udev_rule_present=True,
                                               vf_settings=settings)
    for vf in pf["vfs"]:
        vf["mtu"] = 1500
    assert run(ip())["status"] == "pass"
    res = run(ip({"mac": "02:00:00:00:00:99", "spoofchk": False, "vlan": 0}))
    assert (res["status"], res["reason"]) == ("fail", "pf enp59s0f0np0 VF 0: mac 02:00:00:00:00:99 vs intent "
                                                      "02:00:00:00:00:10")
    assert "pf enp59s0f0np0 VF 0: spoofchk off vs intent on" in res["evidence"]
    assert "pf enp59s0f0np0 VF 0: vlan 0 vs intent 100" in res["evidence"]
    assert res["remediation"].startswith("run site.yml --tags layer06 on this host")
    # the module's comparison, not a second one: its changes are the doctor's lines
    plan = sriov.build_plan([pf], [sriov.module_pfs(nics[0])])
    cur = {"mac": "02:00:00:00:00:99", "spoofchk": False, "vlan": 0}
    assert sorted(sriov.vf_changes(dict(ip()["enp59s0f0np0"]["0"], **cur), plan[0][1]["vfs"][0])) == [
        "mac", "spoofchk", "vlan"]
    pf["vfs"][1]["mtu"] = 9000
    assert run(ip())["reason"] == "pf enp59s0f0np0 VF 1: mtu 9000 vs intent 1500"
    assert run({"failed": True, "msg": "ip -j link show dev enp59s0f0np0 failed: x"})["reason"] == (
        "the VF settings cannot be read: ip -j link show dev enp59s0f0np0 failed: x")


# ---- layer 4's inputs held to the firmware's limit before any PF is written ----

@pytest.mark.parametrize("entries, num_vfs, max_num_vfs, want", [
    ([{"match": {"name": "a"}, "num_vfs": 8}], 16, 127, []),
    ([{"match": {"name": "a"}, "num_vfs": "8"}], "16", "127", []),
    ([{"match": {"name": "a"}, "num_vfs": 8}, {"match": {"name": "b"}, "num_vfs": 200}], 16, 127,
     ["gpufabric_nics[1].num_vfs (nic_firmware_nics) is 200: above 127, the largest NUM_OF_VFS the firmware "
      "accepts (nic_firmware_max_num_vfs)"]),
    ([{"match": {"name": "a"}}], 16, 127, ['gpufabric_nics[0].num_vfs (nic_firmware_nics) is "missing", not a VF count']),
    ([{"match": {"name": "a"}, "num_vfs": -1}], 16, 127, ["gpufabric_nics[0].num_vfs (nic_firmware_nics) is -1, not a VF count"]),
    ([{"match": {"name": "a"}, "num_vfs": True}], 16, 127, ["gpufabric_nics[0].num_vfs (nic_firmware_nics) is true, not a VF count"]),
    ([], 500, 127, ["nic_firmware_num_vfs is 500: above 127, the largest NUM_OF_VFS the firmware accepts "
                    "(nic_firmware_max_num_vfs)"]),
    ([{"match": {"name": "a"}, "num_vfs": 40}], 16, 32, ["gpufabric_nics[0].num_vfs (nic_firmware_nics) is 40: above 32, "
                                                         "the largest NUM_OF_VFS the firmware accepts (nic_firmware_max_num_vfs)"]),
    ([{"match": {"name": "a"}, "num_vfs": 400}], 16, 128, ["nic_firmware_max_num_vfs is 128, not in 0..127"]),
    ([], 16, "lots", ['nic_firmware_max_num_vfs is "lots", not in 0..127']),
])
def test_firmware_inputs_named_with_variable_and_value(entries, num_vfs, max_num_vfs, want):
    assert sriov.firmware_input_problems(entries, num_vfs, max_num_vfs) == want


def test_firmware_selection_selects_nothing_when_an_input_fails():
    pfs = [{"pci_address": "0000:3b:00.0", "name": "a", "vendor": "15b3", "vendor_device": "15b3:1017"}]
    bad = sriov.firmware_selection(pfs, [{"match": {"name": "a"}, "num_vfs": 200}], 16, {}, "15b3", 127)
    assert (bad["pfs"], bad["devices"]) == ([], [])
    assert bad["problems"] == ["gpufabric_nics[0].num_vfs (nic_firmware_nics) is 200: above 127, the largest "
                               "NUM_OF_VFS the firmware accepts (nic_firmware_max_num_vfs)"]
    good = sriov.firmware_selection(pfs, [{"match": {"name": "a"}, "num_vfs": 8}], 16, {}, "15b3", 127)
    assert good["problems"] == [] and good["devices"] == [
        {"device": "0000:3b:00.0", "params": {"SRIOV_EN": True, "NUM_OF_VFS": 16}}]
