"""Layer 6 end to end on a live twin: modules, role, reboot persistence,
the doctor's verdicts, bad input."""

import copy
import json

import pytest
import yaml

from tests.integration.twinlab import recap

pytestmark = [pytest.mark.twin, pytest.mark.layers(6)]

SYSFS = "/run/simlab/sys"
PF0 = f"{SYSFS}/bus/pci/devices/0000:3b:00.0"


def test_nic_facts_on_a_live_node(twin):
    res = twin.module("node01", "gpufabric.stack.nic_facts", {"sysfs_root": SYSFS, "vendor": "15b3"})
    assert res.get("failed") is not True, res
    names = [n["name"] for n in res["nics"]]
    assert names == ["enp59s0f0np0", "enp134s0f0np0"]
    pf = res["nics"][0]
    assert pf["vendor_device"] == "15b3:1021" and pf["sriov"]["totalvfs"] == 16
    assert pf["rdma"]["roce_v2_gid_index"] == 3 and res["iommu_active"] is True


def test_the_plays_reading_of_the_nics_is_taken_until_forgotten(twin, tmp_path):
    """The nic_facts action keeps every answer as the play's reading of the
    host; a task with reuse takes it (no execution on the node) when it was
    read with the options the task gives, and forget drops it."""
    out = tmp_path / "reading.json"
    read = {"sysfs_root": SYSFS, "reuse": True}
    tasks = [
        {"gpufabric.stack.nic_facts": read, "register": "first"},
        {"gpufabric.stack.nic_facts": read, "register": "second"},
        {"gpufabric.stack.nic_facts": dict(read, units=["gpufabric-sriov.service"]), "register": "other"},
        {"gpufabric.stack.nic_facts": {"forget": True, "sysfs_root": SYSFS}, "register": "bad",
         "ignore_errors": True},
        {"gpufabric.stack.nic_facts": {"forget": True}, "register": "forgot"},
        {"ansible.builtin.set_fact": {"kept_after_forget": "{{ ansible_facts.gpufabric_nic_reading }}"}},
        {"gpufabric.stack.nic_facts": read, "register": "after"},
        {"ansible.builtin.copy": {"dest": str(out), "content": "{{ {'first': first, 'second': second, "
                                  "'other': other, 'bad': bad, 'forgot': forgot, 'kept': kept_after_forget, "
                                  "'after': after, 'fact': ansible_facts.gpufabric_nic_reading} | to_json }}"},
         "delegate_to": "localhost"},
    ]
    play = tmp_path / "reading.yml"
    play.write_text(yaml.safe_dump([{"hosts": "node01", "gather_facts": False, "tasks": tasks}]))
    twin.playbook(str(play), check=True)
    got = json.loads(out.read_text())
    first, second, other, after = got["first"], got["second"], got["other"], got["after"]
    assert first["reused"] is False and first["module_executions"] == 1
    assert second["reused"] is True and second["module_executions"] == 0
    assert second["nics"] == first["nics"] and second["cmdline"] == first["cmdline"]
    # a task that wants more than the reading has reads again, and its answer is the play's reading now
    assert other["reused"] is False and other["units"] == {"gpufabric-sriov.service": other["units"][
        "gpufabric-sriov.service"]}
    assert got["bad"]["failed"] is True
    assert got["bad"]["msg"] == "node01: forget drops the play's reading and reads nothing; it takes no other " \
                                "option, got sysfs_root"
    assert got["forgot"]["forgotten"] is True and got["kept"] is None
    assert after["reused"] is False and after["nics"] == first["nics"]
    # the fact names the registered answer, the reading stays there
    assert got["fact"] == {"run": got["fact"]["run"], "var": "after", "id": after["reading_id"]}
    assert after["read_with"]["sysfs_root"] == SYSFS and second["reading_id"] == first["reading_id"]


def test_sriov_vf_module_check_mode_apply_idempotence_and_errors(twin):
    args = {"sysfs_root": SYSFS, "pfs": [{"name": "enp59s0f0np0", "num_vfs": 3, "vf_mtu": 9000,
                                           "vfs": [{"index": 2, "mac": "02:00:00:00:3b:02", "vlan": 10, "qos": 3}]}]}
    before = twin.sh("node02", f"cat {PF0}/sriov_numvfs").stdout.strip()
    res = twin.module("node02", "gpufabric.stack.sriov_vf", args, "--check", "--diff")
    assert res["changed"] and any("sriov_numvfs" in c for c in res["commands"])
    assert twin.sh("node02", f"cat {PF0}/sriov_numvfs").stdout.strip() == before
    res = twin.module("node02", "gpufabric.stack.sriov_vf", args)
    assert res["changed"], res
    assert twin.sh("node02", f"cat {PF0}/sriov_numvfs").stdout.strip() == "3"
    show = twin.sh("node02", "ip link show enp59s0f0np0").stdout
    assert "vf 2     link/ether 02:00:00:00:3b:02 brd ff:ff:ff:ff:ff:ff, vlan 10, qos 3, spoof checking on" in show
    assert twin.sh("node02", f"cat {SYSFS}/class/net/enp59s0f0v1/mtu").stdout.strip() == "9000"
    res = twin.module("node02", "gpufabric.stack.sriov_vf", args)
    assert res["changed"] is False and res["commands"] == []
    # a count change goes 0 then N
    args["pfs"][0]["num_vfs"] = 4
    res = twin.module("node02", "gpufabric.stack.sriov_vf", args)
    assert [c.split(" > ")[0] for c in res["commands"][:2]] == ["echo 0", "echo 4"]
    # too many VFs: named PF, value and limit; nothing changed
    args["pfs"][0]["num_vfs"] = 40
    res = twin.module("node02", "gpufabric.stack.sriov_vf", args)
    assert res["failed"] and "enp59s0f0np0" in res["msg"] and "40" in res["msg"] and "16" in res["msg"]
    assert twin.sh("node02", f"cat {PF0}/sriov_numvfs").stdout.strip() == "4"
    # clean up for the role tests
    twin.module("node02", "gpufabric.stack.sriov_vf", {"sysfs_root": SYSFS, "pfs": [{"vendor_device": "15b3:1021", "num_vfs": 0}]})


def green_through(host_report, top):
    """No failing layer at or below `top`: the session twin's switches and
    host QoS (layers 7-9) are not converged by these tests."""
    return all(r["status"] != "fail" for r in host_report["layers"] if r["layer"] <= top)


def test_site_converges_idempotent_survives_reboot_and_validates(twin):
    first = twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    assert all(r["failed"] == 0 for r in recap(first.stdout).values())
    second = twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    assert {h: r["changed"] for h, r in recap(second.stdout).items() if h.startswith("node")} == {"node01": 0, "node02": 0}
    twin.sh("node01", "systemctl reboot", check=False)
    import time
    for _ in range(100):
        out = twin.sh("node01", f"cat {PF0}/sriov_numvfs 2>/dev/null", check=False).stdout.strip()
        if out == "8":
            break
        time.sleep(0.2)
    assert out == "8", "VFs did not come back after reboot"
    twin.playbook("playbooks/validate.yml", check=True)
    report = twin.report()
    for node in ("node01", "node02"):
        assert green_through(report[node], 6), report[node]   # layer 2 may warn: ACS differs from intent
        layer6 = [r for r in report[node]["layers"] if r["layer"] == 6][0]
        assert layer6["status"] == "pass"


def test_doctor_names_vfs_lost_on_reboot_only_on_that_node_and_site_repairs(twin):
    twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    twin.fault("node02", "vfs-lost-on-reboot")
    twin.playbook("playbooks/validate.yml")
    report = twin.report()
    assert green_through(report["node01"], 6), report["node01"]
    v = report["node02"]["verdict"]
    assert v["layer"] == 6 and "VFs missing after reboot: persistence unit not enabled" in v["reason"]
    twin.fault("node02", "clear")
    twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    vf1 = twin.sh("node02", "ip link show dev enp59s0f0np0").stdout.split("vf 1 ")[1].split("\n")[0]
    assert "spoof checking on" in vf1, vf1


def test_doctor_names_a_wrong_count_and_a_vf_setting_changed_by_hand(twin):
    twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    twin.sh("node01", f"echo 0 > {PF0}/sriov_numvfs; echo 4 > {PF0}/sriov_numvfs")
    # the doctor compares the VFs' netlink settings with the sriov_vf module's own plan
    twin.sh("node02", "ip link set dev enp59s0f0np0 vf 1 spoofchk off")
    twin.playbook("playbooks/validate.yml")
    v = twin.report()["node01"]["verdict"]
    assert v["layer"] == 6 and v["reason"] == "pf enp59s0f0np0: 4 VFs, inventory wants 8"
    v = twin.report()["node02"]["verdict"]
    assert (v["layer"], v["reason"]) == (6, "pf enp59s0f0np0 VF 1: spoofchk off vs intent on"), v
    assert green_through(twin.report()["node02"], 5), twin.report()["node02"]
    twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    vf1 = twin.sh("node02", "ip link show dev enp59s0f0np0").stdout.split("vf 1 ")[1].split("\n")[0]
    assert "spoof checking on" in vf1, vf1


@pytest.mark.parametrize("mutate, words", [
    (lambda n: n[0].update(num_vfs=99), ["node01", "enp59s0f0np0", "99", "sriov_totalvfs is 16"]),
    (lambda n: n[0].update(match={"name": "ens9f9"}), ["node01", "no PF matches name=ens9f9"]),
    (lambda n: n[0].update(vfs=[{"index": 0, "mac": "zz:00:00:00:00:01"}]), ["node01", "mac", "zz:00:00:00:00:01"]),
    (lambda n: n[0].update(vf_defaults={"trust": "maybe"}), ["trust", "maybe"]),
])
def test_bad_inventory_fails_naming_host_pf_value_and_changes_nothing(twin, mutate, words):
    twin.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
    state = {n: twin.sh(n, f"cat {PF0}/sriov_numvfs; ip link show enp59s0f0np0").stdout for n in ("node01", "node02")}
    host_vars = twin.inventory / "host_vars" / "node01.yml"
    group = yaml.safe_load((twin.inventory / "group_vars" / "gpu_workers.yml").read_text())
    nics = copy.deepcopy(group["gpufabric_nics"])
    mutate(nics)
    host_vars.parent.mkdir(exist_ok=True)
    host_vars.write_text(yaml.safe_dump({"gpufabric_nics": nics}))
    try:
        proc = twin.playbook("playbooks/site.yml", "--tags", "layer06")
    finally:
        host_vars.unlink()
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    for w in words:
        assert w in text, (w, text[-3000:])
    after = {n: twin.sh(n, f"cat {PF0}/sriov_numvfs; ip link show enp59s0f0np0").stdout for n in ("node01", "node02")}
    assert after == state


def test_vfs_for_vms_on_vfio_pci_and_a_shared_iommu_group_named(twin):
    """vf_drivers on the twin: VFs 6-7 of every ConnectX-7 PF of node02 go to
    vfio-pci, vfs.json names the H100 below the same PCIe switch, the doctor
    passes; iommu-shared-group is named at layer 6 with the group's members;
    the inventory without vf_drivers gives the VFs back to mlx5_core."""
    nics = yaml.safe_load((twin.inventory / "group_vars/gpu_workers.yml").read_text())["gpufabric_nics"]
    vms = copy.deepcopy(nics)
    for entry in vms:
        entry["vf_drivers"] = [{"vfs": "6-7", "driver": "vfio-pci"}]
    extra = ["--limit", "node02", "-e", json.dumps({"gpufabric_nics": vms})]
    # a GPU node whose VFs go to VMs keeps ACS on above its NICs: layer 3 takes
    # pci=disable_acs_redir= away (one reboot), else a VF shares its port's group
    twin.playbook("playbooks/site.yml", "--tags", "layer03,layer06", *extra, check=True)
    assert "pci=disable_acs_redir=" not in twin.sh("node02", "cat /run/simlab/proc/cmdline").stdout
    vfs = f"{PF0}/virtfn6 {PF0}/virtfn7 {PF0}/virtfn5"
    drivers = twin.sh("node02", f"for v in {vfs}; do basename $(readlink $v/driver); done").stdout.split()
    assert drivers == ["vfio-pci", "vfio-pci", "mlx5_core"], drivers
    read = json.loads(twin.sh("node02", "cat /var/lib/gpufabric/passthrough/vfs.json").stdout)
    first = [v for v in read["vfs"] if v["pf"] == "enp59s0f0np0"]
    assert [v["vf_index"] for v in first] == [6, 7], read
    assert first[0]["gpus"][0]["shares"] == "pcie_switch" and first[0]["gpus"][0]["vendor_device"].startswith("10de:")
    again = twin.playbook("playbooks/site.yml", "--tags", "layer06", *extra, check=True)
    assert recap(again.stdout)["node02"]["changed"] == 0, again.stdout[-3000:]
    twin.playbook("playbooks/validate.yml", *extra, check=True)
    layer6 = [r for r in twin.report()["node02"]["layers"] if r["layer"] == 6][0]
    assert layer6["status"] == "pass", layer6
    assert len([e for e in layer6["evidence"] if " on vfio-pci, IOMMU group " in e]) == len(read["vfs"]), layer6
    twin.fault("node02", "iommu-shared-group")
    try:
        twin.playbook("playbooks/validate.yml", *extra, check=True)
        layer6 = [r for r in twin.report()["node02"]["layers"] if r["layer"] == 6][0]
        assert layer6["status"] == "fail" and "shares IOMMU group" in layer6["reason"], layer6
        assert "0000:3b:00.0" in layer6["reason"] and "ACS" in layer6["remediation"], layer6
    finally:
        twin.fault("node02", "clear")
    # the inventory without vf_drivers: the VFs go back to mlx5_core, and the node
    # to GPUDirect below its PCIe switches (layer 3 puts the argument back)
    twin.playbook("playbooks/site.yml", "--tags", "layer03,layer06", "--limit", "node02", check=True)
    assert "pci=disable_acs_redir=pci:1000:c030" in twin.sh("node02", "cat /run/simlab/proc/cmdline").stdout.split()
    drivers = twin.sh("node02", f"for v in {vfs}; do basename $(readlink $v/driver); done").stdout.split()
    assert drivers == ["mlx5_core"] * 3, drivers


def test_a_vf_holding_the_management_address_is_not_handed_to_vfio_pci(twin):
    """A VF whose netdev holds a protected address (``ip addr add`` on the
    twin's netdev, read back by the module through ``ip -j addr show``)
    is not moved to vfio-pci: the module fails naming the PF, the VF, its
    netdev and the address, before any VF changes driver; without the
    address that check passes and the next one speaks (the VF's IOMMU group
    on this GPUDirect node)."""
    before = int(twin.sh("node02", f"cat {PF0}/sriov_numvfs").stdout)
    numvfs = max(before, 2)
    made = twin.module("node02", "gpufabric.stack.sriov_vf",
                       {"sysfs_root": SYSFS, "pfs": [{"name": "enp59s0f0np0", "num_vfs": numvfs}]})
    assert not made.get("failed"), made
    args = {"sysfs_root": SYSFS, "protected_addresses": ["10.99.0.5"],
            "pfs": [{"name": "enp59s0f0np0", "num_vfs": numvfs, "vf_drivers": [{"vfs": "1", "driver": "vfio-pci"}]}]}
    twin.sh("node02", "ip addr add 10.99.0.5/24 dev enp59s0f0v1")
    try:
        assert "inet 10.99.0.5/24 scope global enp59s0f0v1" in twin.sh("node02", "ip addr show").stdout
        res = twin.module("node02", "gpufabric.stack.sriov_vf", args)
        assert res["failed"], res
        assert "VF 1" in res["msg"] and "netdev enp59s0f0v1" in res["msg"] and \
            "has the management address 10.99.0.5" in res["msg"], res["msg"]
        assert twin.sh("node02", f"basename $(readlink {PF0}/virtfn1/driver)").stdout.strip() == "mlx5_core"
    finally:
        twin.sh("node02", "ip addr del 10.99.0.5/24 dev enp59s0f0v1")
    # without the address the next check speaks: on this GPUDirect node the VF
    # shares its port's IOMMU group
    res = twin.module("node02", "gpufabric.stack.sriov_vf", args, "--check")
    assert res["failed"] and "management address" not in res["msg"] and "shares IOMMU group" in res["msg"], res
    assert twin.sh("node02", f"basename $(readlink {PF0}/virtfn1/driver)").stdout.strip() == "mlx5_core"
    twin.module("node02", "gpufabric.stack.sriov_vf",
                {"sysfs_root": SYSFS, "pfs": [{"name": "enp59s0f0np0", "num_vfs": before}]})
