"""Layer 6's VFs for tenant VMs (vf_drivers: vfio-pci): the intent checked
before anything changes, the bind order, the kmod answer, what the host
cannot lose, and the doctor's verdicts.

The bind order is the kernel's: vfio-pci has no ID table, so only a
``driver_override`` naming it lets ``drivers/vfio-pci/bind`` match
(drivers/pci/pci-driver.c, pci_match_device with driver_override); a bound
device must leave its driver first (``driver/unbind``), else bind answers
EBUSY. Back to the kernel's driver: clear the override, unbind, and
``drivers_probe`` (drivers/base/bus.c) finds the VF's own driver. The
sriov-network-operator binds VFs for DPDK the same way."""

import errno
import os

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
from ansible_collections.gpufabric.stack.plugins.module_utils.host import sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov_host
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import sriov_vfs as sriov_vfs_check

pytestmark = pytest.mark.layers(6)


def pf(numvfs=4, name="enp1s0", address="0000:01:00.0", vfs=None):
    return {"name": name, "pci_address": address, "vendor_device": "8086:10c9", "vendor": "8086", "bound": True,
            "link_type": "ETH", "numa_node": 0, "driver": "igb",
            "sriov": {"capable": True, "totalvfs": 7, "numvfs": numvfs, "offset": 128, "stride": 2,
                      "drivers_autoprobe": True},
            "vfs": vfs or []}


def vf(index, driver="igbvf", group=None, members=None, netdev=True):
    address = "0000:01:10.%d" % (2 * index)
    group = str(20 + index) if group is None else group
    return {"index": index, "pci_address": address, "netdev": "enp1s0v%d" % index if netdev else None,
            "driver": driver, "mtu": 1500 if netdev else None, "rdma_device": None,
            "iommu_group": group or None,
            "iommu_group_devices": [address] if members is None else members}


# ---------------------------------------------------------------- the intent

def test_vf_ranges():
    assert sriov.vf_range("4-7") == [4, 5, 6, 7]
    assert sriov.vf_range("0,2-3") == [0, 2, 3]
    assert sriov.vf_range(5) == [5]
    for bad in ("7-4", "a-b", "", "-1", None):
        with pytest.raises((ValueError, TypeError)):
            sriov.vf_range(bad)
    assert sriov.index_ranges([4, 5, 6, 7, 9]) == "4-7,9"


def test_vf_drivers_default_to_the_kernel_driver():
    assert sriov.vf_drivers("pf x", None, 3) == {0: "default", 1: "default", 2: "default"}
    assert sriov.vf_drivers("pf x", [{"vfs": "1-2", "driver": "vfio-pci"}], 4) == \
        {0: "default", 1: "vfio-pci", 2: "vfio-pci", 3: "default"}


@pytest.mark.parametrize("entries, message", [
    ([{"vfs": "2-4", "driver": "vfio-pci"}], r"pf enp1s0 \(0000:01:00\.0\): vf_drivers\[0\]: VF 4 of '2-4' is outside 0-3 \(num_vfs 4\)"),
    ([{"vfs": "0-1", "driver": "vfio-pci"}, {"vfs": "1", "driver": "default"}], r"VF 1 is named by vf_drivers\[0\] and vf_drivers\[1\]"),
    ([{"vfs": "0", "driver": "vfio"}], r"driver 'vfio' is not one of default, vfio-pci"),
    ([{"vfs": "x", "driver": "vfio-pci"}], r"vfs 'x' is not a VF range like 4-7"),
])
def test_a_bad_vf_drivers_entry_fails_before_anything_changes(entries, message):
    with pytest.raises(sriov.SriovError, match=message):
        sriov.build_plan([pf()], [{"name": "enp1s0", "num_vfs": 4, "vf_drivers": entries}])


def test_an_mtu_on_a_vf_for_a_vm_is_refused():
    with pytest.raises(sriov.SriovError, match=r"vf 2: mtu 9000 cannot be set on a VF handed to a VM"):
        sriov.build_plan([pf()], [{"name": "enp1s0", "num_vfs": 4, "vfs": [{"index": 2, "mtu": 9000}],
                                   "vf_drivers": [{"vfs": "2-3", "driver": "vfio-pci"}]}])


# ---------------------------------------------------------------- bind order

def test_to_vfio_pci_override_then_unbind_then_bind():
    fs = sysfs_nic.Sysfs("/sys")
    steps = sriov.bind_steps(fs, "0000:01:10.4", "igbvf", "vfio-pci")
    assert steps == [("/sys/bus/pci/devices/0000:01:10.4/driver_override", "vfio-pci"),
                     ("/sys/bus/pci/devices/0000:01:10.4/driver/unbind", "0000:01:10.4"),
                     ("/sys/bus/pci/drivers/vfio-pci/bind", "0000:01:10.4")]
    # an unbound VF has nothing to leave
    assert [p for p, _v in sriov.bind_steps(fs, "0000:01:10.4", None, "vfio-pci")] == [
        "/sys/bus/pci/devices/0000:01:10.4/driver_override", "/sys/bus/pci/drivers/vfio-pci/bind"]
    assert sriov.bind_steps(fs, "0000:01:10.4", "vfio-pci", "vfio-pci") == []


def test_back_to_the_kernel_driver_clear_unbind_probe():
    fs = sysfs_nic.Sysfs("/sys")
    assert sriov.bind_steps(fs, "0000:01:10.4", "vfio-pci", "default") == [
        ("/sys/bus/pci/devices/0000:01:10.4/driver_override", ""),
        ("/sys/bus/pci/devices/0000:01:10.4/driver/unbind", "0000:01:10.4"),
        ("/sys/bus/pci/drivers_probe", "0000:01:10.4")]
    assert sriov.bind_steps(fs, "0000:01:10.4", "igbvf", "default") == []


def test_a_failed_bind_names_the_vf_the_file_and_the_errno():
    def write(path, value):
        raise OSError(errno.EINVAL, "Invalid argument")

    log = []
    with pytest.raises(sriov.SriovError, match=r"pf x: VF 2: writing '0000:01:10.4' to /sys/bus/pci/drivers/vfio-pci/bind "
                                               r"failed: Invalid argument \(EINVAL\): vfio-pci refuses a device without "
                                               r"an IOMMU group"):
        sriov.bind_vf("pf x", 2, [("/sys/bus/pci/drivers/vfio-pci/bind", "0000:01:10.4")], log, write=write)
    assert log == []


# ------------------------------------------------------------------- kmod

# `modprobe -D vfio-pci` on the VM nodes' Debian 12 (kmod 30, 6.1 kernel) prints
# the dependency chain as insmod lines; with `install vfio-pci /bin/false` in
# /etc/modprobe.d the last line is the install command instead; without the
# module: "modprobe: FATAL: Module vfio-pci not found in directory ..." and exit 1.
INSMOD = ("insmod /lib/modules/6.1.0-50-amd64/kernel/drivers/vfio/vfio.ko \n"
          "insmod /lib/modules/6.1.0-50-amd64/kernel/drivers/vfio/pci/vfio-pci.ko \n")


def test_modprobe_answers():
    assert sriov.modprobe_problem("vfio-pci", 0, INSMOD, "") is None
    assert sriov.modprobe_problem("vfio-pci", 0, "builtin vfio_pci\n", "") is None
    blocked = sriov.modprobe_problem("vfio-pci", 0, "insmod /lib/x/vfio.ko \ninstall /bin/false\n", "")
    assert "an install rule replaces loading vfio-pci: 'install /bin/false'" in blocked
    missing = sriov.modprobe_problem("vfio-pci", 1, "", "modprobe: FATAL: Module vfio-pci not found in directory "
                                                        "/lib/modules/6.1.0-50-amd64\n")
    assert missing == ("modprobe -D vfio-pci failed (exit 1): modprobe: FATAL: Module vfio-pci not found in "
                       "directory /lib/modules/6.1.0-50-amd64")


# --------------------------------------------------- what the host cannot lose

def test_carriers_default_route_management_address_and_masters():
    lost = sriov.carriers({"eth0": ["10.0.0.5"], "enp1s0v2": ["192.0.2.7"], "br0": ["198.51.100.1"]},
                          ["eth0"], {"enp1s0v3": "br0", "enp1s0v1": "bond0", "bond0": "eth0"},
                          ["198.51.100.1"])
    assert lost["eth0"] == "carries the default route"
    assert lost["br0"] == "has the management address 198.51.100.1"
    assert lost["enp1s0v3"] == "is enslaved to br0, which has the management address 198.51.100.1"
    assert lost["bond0"] == "is enslaved to eth0, which carries the default route"
    assert lost["enp1s0v1"].startswith("is enslaved to bond0")
    assert "enp1s0v2" not in lost


# ------------------------------------------------------ the module's checks

class Module(object):
    def __init__(self, params, check_mode=False, kmod=(0, INSMOD, "")):
        base = dict(sysfs_root="/sys", wait_timeout=1, ip_command="ip", nm_unmanaged_rule=None,
                    protected_addresses=[], passthrough_dir=None, modprobe_command="/sbin/modprobe")
        base.update(params)
        self.params = base
        self.check_mode = check_mode
        self.kmod = kmod
        self.ran = []

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/sbin/" + name

    def run_command(self, argv, check_rc=False, environ_update=None):
        self.ran.append(argv)
        return self.kmod if "-D" in argv else (0, "", "")


class Backend(object):
    def __init__(self, lost=None):
        self.lost = lost or {}
        self.set = []

    def get_vfs(self, name):
        return dict((i, {"vf": i, "spoofchk": True, "trust": False, "link_state": "auto"}) for i in range(4))

    def set_vf(self, args):
        self.set.append(args)

    def carriers(self, protected):
        self.protected = protected
        return self.lost


def layout(**extra):
    entry = dict(name="enp1s0", pci_address=None, vendor_device=None, num_vfs=4, vf_defaults=None, vfs=None,
                 vf_mtu=None, vf_drivers=[{"vfs": "2-3", "driver": "vfio-pci"}])
    entry.update(extra)
    return {"pfs": [entry]}


@pytest.fixture
def host(monkeypatch):
    """A PF with 4 VFs on igbvf, an IOMMU, vfio-pci not loaded; sysfs
    writes recorded instead of made."""
    state = {"vfs": [vf(i) for i in range(4)], "iommu": True, "writes": [], "vfio_loaded": False}
    monkeypatch.setattr(sriov_host.sysfs_nic, "discover", lambda root: [pf(vfs=state["vfs"])])
    monkeypatch.setattr(sriov_host.sysfs_nic, "vf_list", lambda fs, bdf: state["vfs"])
    monkeypatch.setattr(sriov_host.sysfs_nic, "iommu_active", lambda root: state["iommu"])
    monkeypatch.setattr(sriov_host.sriov, "wait_vfs", lambda *a, **k: state["vfs"])
    monkeypatch.setattr(sriov_host.sriov, "write_sysfs", lambda path, value: state["writes"].append((path, value)))
    monkeypatch.setattr(sriov_host.sriov, "set_numvfs", lambda fs, pf_, num, log: state["writes"].append(("numvfs", num)))
    real_isdir = os.path.isdir
    monkeypatch.setattr(sriov_host.os.path, "isdir",
                        lambda p: state["vfio_loaded"] if p.endswith("drivers/vfio-pci") else real_isdir(p))
    return state


def test_no_iommu_fails_before_any_change(host):
    host["iommu"] = False
    host["vfs"] = []
    with pytest.raises(sriov.SriovError, match=r"pf enp1s0 \(0000:01:00\.0\) VF 2-3: meant for VMs \(vfio-pci\), but no "
                                               r"IOMMU is active .*intel_iommu=on or amd_iommu=on .*layer 3"):
        sriov_host.run(Module(layout()), Backend())
    assert host["writes"] == []


def test_vfio_pci_not_loadable_fails_before_any_change(host):
    module = Module(layout(), kmod=(0, "insmod /lib/x/vfio.ko \ninstall /bin/false\n", ""))
    with pytest.raises(sriov.SriovError, match=r"VF 2-3: meant for VMs, but vfio-pci is not loaded and cannot be "
                                               r"loaded: an install rule replaces loading vfio-pci"):
        sriov_host.run(module, Backend())
    assert host["writes"] == [] and module.ran == [["/sbin/modprobe", "-D", "vfio-pci"]]


def test_binds_in_order_after_the_per_vf_settings(host):
    backend = Backend()
    module = Module(layout(vfs=[{"index": 2, "mac": "02:00:00:00:01:02"}]))
    changed, _r, commands, _b, _a, _p = sriov_host.run(module, backend)
    assert changed
    mac = commands.index("ip link set dev enp1s0 vf 2 mac 02:00:00:00:01:02")
    load = commands.index("modprobe vfio-pci")
    assert mac < load
    assert ["/sbin/modprobe", "vfio-pci"] in module.ran
    binds = [w for w in host["writes"] if w[0] != "numvfs"]
    assert binds == [
        ("/sys/bus/pci/devices/0000:01:10.4/driver_override", "vfio-pci"),
        ("/sys/bus/pci/devices/0000:01:10.4/driver/unbind", "0000:01:10.4"),
        ("/sys/bus/pci/drivers/vfio-pci/bind", "0000:01:10.4"),
        ("/sys/bus/pci/devices/0000:01:10.6/driver_override", "vfio-pci"),
        ("/sys/bus/pci/devices/0000:01:10.6/driver/unbind", "0000:01:10.6"),
        ("/sys/bus/pci/drivers/vfio-pci/bind", "0000:01:10.6")]
    # the PF is never written to
    assert not any("0000:01:00.0" in path for path, _v in binds)


def test_a_vf_carrying_the_default_route_is_not_handed_over(host):
    backend = Backend(lost={"enp1s0v3": "carries the default route"})
    with pytest.raises(sriov.SriovError, match=r"VF 3 \(0000:01:10\.6, netdev enp1s0v3\) is not handed to vfio-pci: "
                                               r"enp1s0v3 carries the default route"):
        sriov_host.run(Module(layout()), backend)
    assert [w for w in host["writes"] if w[0] != "numvfs"] == []


def test_protected_addresses_include_the_ssh_server_address(host, monkeypatch):
    monkeypatch.setenv("SSH_CONNECTION", "192.0.2.1 50000 192.0.2.10 22")
    backend = Backend()
    sriov_host.run(Module(layout(), check_mode=True), backend)
    assert backend.protected == ["192.0.2.10"]
    with pytest.raises(sriov.SriovError, match=r"protected_addresses: 'mgmt-a01' is not an IP address"):
        sriov_host.run(Module(dict(layout(), protected_addresses=["mgmt-a01"]), check_mode=True), Backend())


def test_a_vf_sharing_its_iommu_group_is_not_handed_over(host):
    host["vfs"][2] = vf(2, group="7", members=["0000:01:00.0", "0000:01:10.4"])
    with pytest.raises(sriov.SriovError, match=r"0000:01:10\.4.*7.*0000:01:00\.0"):
        sriov_host.run(Module(layout()), Backend())
    assert [w for w in host["writes"] if w[0] != "numvfs"] == []


def test_check_mode_lists_the_binds_and_writes_nothing(host):
    module = Module(layout(), check_mode=True)
    changed, _r, commands, before, after, _p = sriov_host.run(module, Backend())
    assert changed and host["writes"] == []
    assert "modprobe vfio-pci" in commands
    assert "echo vfio-pci > /sys/bus/pci/devices/0000:01:10.4/driver_override" in commands
    assert before["enp1s0"]["vfs"][2]["driver"] == "igbvf" and after["enp1s0"]["vfs"][2]["driver"] == "vfio-pci"
    assert "driver" not in after["enp1s0"]["vfs"][0]


def test_a_rerun_with_the_vfs_on_vfio_pci_changes_nothing(host):
    host["vfs"][2] = vf(2, driver="vfio-pci", netdev=False)
    host["vfs"][3] = vf(3, driver="vfio-pci", netdev=False)
    host["vfio_loaded"] = True
    module = Module(layout())
    changed, results, commands, _b, _a, records = sriov_host.run(module, Backend())
    assert not changed and commands == [] and host["writes"] == []
    assert [v["driver"] for v in results[0]["vfs"]] == ["default", "default", "vfio-pci", "vfio-pci"]
    assert [r["pci_address"] for r in records] == ["0000:01:10.4", "0000:01:10.6"]


def test_a_vf_back_to_the_kernel_driver(host):
    host["vfs"][1] = vf(1, driver="vfio-pci", netdev=False)
    host["vfio_loaded"] = True
    host["vfs"][2] = vf(2, driver="vfio-pci", netdev=False)
    host["vfs"][3] = vf(3, driver="vfio-pci", netdev=False)
    sriov_host.run(Module(layout()), Backend())
    assert host["writes"] == [
        ("/sys/bus/pci/devices/0000:01:10.2/driver_override", ""),
        ("/sys/bus/pci/devices/0000:01:10.2/driver/unbind", "0000:01:10.2"),
        ("/sys/bus/pci/drivers_probe", "0000:01:10.2")]


# ------------------------------------------------------------------ doctor

NICS = [{"match": {"name": "enp1s0"}, "num_vfs": 4, "vf_drivers": [{"vfs": "2-3", "driver": "vfio-pci"}]}]
OK_PROBE = {"vfio-pci": {"rc": 0, "stdout": INSMOD, "stderr": "", "problem": ""}}


def good_vfs():
    return [vf(0), vf(1), vf(2, driver="vfio-pci", netdev=False), vf(3, driver="vfio-pci", netdev=False)]


def check(vfs, probe=OK_PROBE, nics=NICS):
    return sriov_vfs_check.check_sriov_vfs([pf(vfs=vfs)], nics, True, True, module_probe=probe)


def test_doctor_passes_and_lists_the_vfs_for_vms():
    r = check(good_vfs())
    assert r["status"] == "pass" and r["reason"] == "1 PF(s) with the VFs the inventory wants", r
    assert "pf enp1s0 VF 2: 0000:01:10.4 on vfio-pci, IOMMU group 22 (0000:01:10.4), NUMA node 0" in r["evidence"]


def test_doctor_names_a_vf_left_on_the_kernel_driver():
    vfs = good_vfs()
    vfs[3] = vf(3)
    r = check(vfs)
    assert r["status"] == "fail"
    assert r["reason"] == "pf enp1s0: VF 3 (0000:01:10.6) is on igbvf, but the inventory gives it to VMs (vfio-pci)"
    assert "layer06" in r["remediation"]


def test_doctor_names_a_vf_on_vfio_pci_the_inventory_keeps():
    vfs = good_vfs()
    vfs[0] = vf(0, driver="vfio-pci", netdev=False)
    r = check(vfs)
    assert r["reason"] == "pf enp1s0: VF 0 (0000:01:10.0) is on vfio-pci, but the inventory keeps it on the kernel's driver"


def test_doctor_names_vfio_pci_not_loadable():
    probe = {"vfio-pci": {"rc": 0, "stdout": "install /bin/false\n", "stderr": "",
                          "problem": sriov.modprobe_problem("vfio-pci", 0, "install /bin/false\n", "")}}
    r = check(good_vfs(), probe)
    assert r["status"] == "fail" and r["reason"].startswith("vfio-pci cannot be loaded"), r
    vfs = good_vfs()
    vfs[2], vfs[3] = vf(2), vf(3)
    r = check(vfs, probe)
    assert "is on igbvf" in r["reason"] and "vfio-pci cannot be loaded: an install rule" in r["reason"], r


def test_doctor_names_a_shared_iommu_group_with_its_members():
    vfs = good_vfs()
    vfs[2] = vf(2, driver="vfio-pci", netdev=False, group="7", members=["0000:01:00.0", "0000:01:10.4"])
    r = check(vfs)
    assert r["reason"].startswith("pf enp1s0: VF 2: VF 0000:01:10.4 (pf enp1s0 VF 2) shares IOMMU group 7 with "
                                  "0000:01:00.0, so a VM given it could reach them"), r["reason"]
    assert "ACS" in r["remediation"]
    vfs[2] = vf(2, driver="vfio-pci", netdev=False, group="", members=[])
    r = check(vfs)
    assert "has no IOMMU group: the IOMMU is off" in r["reason"] and "intel_iommu=on" in r["remediation"], r


def test_doctor_without_passthrough_intent_still_wants_netdevs():
    r = check([vf(0), vf(1), vf(2, netdev=False), vf(3)], nics=[{"match": {"name": "enp1s0"}, "num_vfs": 4}])
    assert r["reason"] == "pf enp1s0: VF 2 without a netdev"


def test_doctor_names_a_failed_boot_unit():
    r = sriov_vfs_check.check_sriov_vfs([pf(vfs=good_vfs())], NICS, True, True, module_probe=OK_PROBE, unit_failed=True)
    assert r["status"] == "fail" and r["reason"].startswith("the VF boot unit gpufabric-sriov.service failed"), r


def test_unit_file_states_reads_the_active_state_in_the_same_call():
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import boot_state
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "Id=a.service\nUnitFileState=enabled\nActiveState=failed\n\nId=b.service\nUnitFileState=\nActiveState=inactive\n", ""

    active = {}
    states, error = boot_state.unit_file_states(run, ["a.service", "b.service"], active=active)
    assert (states, error) == ({"a.service": "enabled", "b.service": ""}, "")
    assert active == {"a.service": "failed", "b.service": "inactive"} and len(calls) == 1
    assert "ActiveState" in calls[0]


def _reading(params, plan, run="4242:1234567"):
    """The play's reading as nic_facts keeps it when its options carried
    layer 6's (the role's call, also_layers): ``plan`` is its vfs answer."""
    from ansible_collections.gpufabric.stack.plugins.action import sriov_vf as action
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading
    options = action.wish(dict(params, inspect_files=["/usr/local/libexec/gpufabric/sriov-vfs.sh"]))
    answer = {"changed": False, "nics": [], "sysfs_root": params["sysfs_root"], "vfs": plan,
              "inspected": {"files": {"/usr/local/libexec/gpufabric/sriov-vfs.sh": None}, "units": {}},
              "invocation": {"module_args": dict(options, vendor="")}}
    return nic_reading.kept(answer, options, run)


def test_a_rerun_that_changes_nothing_is_answered_from_the_reading_as_the_module_answers(host):
    """nic_facts' vfs is the module's own run in check mode: on a node as
    intended the sriov_vf action returns from it what the module's real run
    returns (the PFs with their boot lines, the passthrough records), and
    runs the module where that plan changes something."""
    from ansible_collections.gpufabric.stack.plugins.action import sriov_vf as action
    host["vfs"][2] = vf(2, driver="vfio-pci", netdev=False)
    host["vfs"][3] = vf(3, driver="vfio-pci", netdev=False)
    host["vfio_loaded"] = True
    params = Module(layout()).params
    plan = sriov_host.planned(Module(layout()), dict(params), lambda module: Backend())
    changed, results, commands, _b, _a, records = sriov_host.run(Module(layout()), Backend())
    assert plan["changed"] is False and not changed
    args = dict(params, inspect_files=["/usr/local/libexec/gpufabric/sriov-vfs.sh"])
    got = action.judged(_reading(params, plan), args, "4242:1234567")
    assert got == {"changed": False, "pfs": results, "commands": commands, "passthrough": records,
                   "inspected": {"files": {"/usr/local/libexec/gpufabric/sriov-vfs.sh": None}, "units": {}}}
    assert [p["boot_lines"] for p in got["pfs"]] == [r["boot_lines"] for r in results]
    # another run of ansible-playbook, another layout: the module runs
    assert action.judged(_reading(params, plan), args, "4343:1") is None
    assert action.judged(_reading(params, plan), dict(args, wait_timeout=5), "4242:1234567") is None
    # a VF meant for a VM back on igbvf: the plan changes it, so the module runs
    host["vfs"][3] = vf(3)
    pending = sriov_host.planned(Module(layout()), dict(params), lambda module: Backend())
    assert pending["changed"] is True and host["writes"] == []
    assert action.judged(_reading(params, pending), args, "4242:1234567") is None


def test_a_plan_that_would_fail_is_named_in_the_reading_and_not_taken(host):
    from ansible_collections.gpufabric.stack.plugins.action import sriov_vf as action
    host["iommu"] = False
    params = Module(layout()).params
    plan = sriov_host.planned(Module(layout()), dict(params), lambda module: Backend())
    assert plan["failed"] is True and "no IOMMU is active" in plan["msg"]
    assert action.judged(_reading(params, plan), dict(params), "4242:1234567") is None
    assert host["writes"] == []


def test_the_vf_settings_nic_facts_read_already_are_not_read_again(host):
    """nic_facts plans the VF call with the VF settings it read in the same
    call (vf_settings: {pf: {"index": vf}}); a PF it did not read goes to ip."""
    asked = []

    class Counting(Backend):
        def get_vfs(self, name):
            asked.append(name)
            return Backend.get_vfs(self, name)

    params = Module(layout(vf_drivers=None)).params
    known = {"enp1s0": dict((str(i), v) for i, v in Backend().get_vfs("enp1s0").items())}
    plan = sriov_host.planned(Module(layout(vf_drivers=None)), dict(params),
                              lambda module: sriov_host.KnownVfs(Counting(), known))
    assert asked == [] and plan["changed"] is False, plan
    assert plan == sriov_host.planned(Module(layout(vf_drivers=None)), dict(params),
                                      lambda module: sriov_host.KnownVfs(Counting(), {}))
    assert asked == ["enp1s0"]
