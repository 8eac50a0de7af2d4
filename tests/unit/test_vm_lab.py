"""The VM lab's plain parts, without starting QEMU: the plan, the disk's
partition table, the QEMU command line (what reaches the network, when the
IOMMU is there), the rail switch's forwarding, and the inventory."""

import json
import socket
import struct
import time

import pytest
import yaml

from simlab.vm import hub, image, lab as vm_lab, machine

pytestmark = pytest.mark.tooling


def test_plan_gives_each_node_its_own_macs_and_pci_addresses_and_cables_every_pf():
    doc = vm_lab.plan("t", 3, nics=2)
    macs = [hw["mgmt_mac"] for hw in doc["nodes"]] + [n["mac"] for hw in doc["nodes"] for n in hw["nics"]]
    assert len(macs) == len(set(macs)) == 9
    hw = doc["nodes"][1]
    assert hw["name"] == "node02" and hw["cpu_vendor"] == "intel"
    assert [n["bdf"] for n in hw["nics"]] == ["0000:01:00.0", "0000:02:00.0"]
    assert [n["netdev"] for n in hw["nics"]] == ["enp1s0", "enp2s0"]
    assert hw["bios_default"] == {"sriov": False, "iommu": False, "acs": False}  # factory
    assert {(c["node"], c["pf"]) for c in doc["cabling"]} == {
        (f"node0{i}", f"enp{r}s0") for i in (1, 2, 3) for r in (1, 2)}
    assert {c["switch"] for c in doc["cabling"] if c["pf"] == "enp1s0"} == {"rail0"}


def test_plan_with_twin_switches_cables_each_rail_to_a_leaf():
    doc = vm_lab.plan("t", 2, nics=2, switches=2, nos=["eos", "nvue"])
    assert [(c["node"], c["switch"], c["port"]) for c in doc["cabling"]] == [
        ("node01", "leaf1", "Ethernet1"), ("node01", "leaf2", "swp1"),
        ("node02", "leaf1", "Ethernet2"), ("node02", "leaf2", "swp2")]


@pytest.mark.parametrize("nics", [0, 3])
def test_plan_refuses_a_nic_count_the_vm_cannot_have(nics):
    with pytest.raises(ValueError, match=f"--nics {nics}"):
        vm_lab.plan("t", 2, nics=nics)


def test_the_disk_has_one_bootable_linux_partition_after_grubs_embedding_area(tmp_path):
    raw = tmp_path / "d.raw"
    size = 64 << 20
    raw.write_bytes(b"")
    with open(raw, "r+b") as f:
        f.truncate(size)
    image.write_mbr(raw, size)
    mbr = raw.read_bytes()[:512]
    assert mbr[510:] == b"\x55\xaa"
    status, ptype, start, count = struct.unpack("<B3xB3xII", mbr[446:462])
    assert (status, ptype, start) == (0x80, 0x83, image.PART_START)
    assert start + count == size // 512
    assert mbr[462:510] == bytes(48)  # the other three entries are empty


def _hw():
    doc = vm_lab.plan("t", 1, nics=2)
    hw = doc["nodes"][0]
    hw.update(ssh_port=2222, bmc_vendor="hpe")
    for i, nic in enumerate(hw["nics"]):
        nic.update(hub_port=40000 + i, vm_port=41000 + i)
    return hw


def test_qemu_has_the_iommu_only_when_the_bios_enables_vtd(tmp_path):
    on = machine.argv("t", tmp_path, _hw(), iommu=True)
    off = machine.argv("t", tmp_path, _hw(), iommu=False)
    assert "intel-iommu,intremap=on" in on
    assert not [a for a in off if a.startswith("intel-iommu")]
    assert on[on.index("-machine") + 1].startswith("q35")


def test_qemu_reaches_nothing_but_loopback(tmp_path):
    args = machine.argv("t", tmp_path, _hw(), iommu=True)
    netdevs = [args[i + 1] for i, a in enumerate(args) if a == "-netdev"]
    user = [n for n in netdevs if n.startswith("user,")]
    assert user == ["user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:2222-:22"]
    for n in netdevs:
        if n.startswith("dgram,"):
            hosts = [kv.split("=", 1)[1] for kv in n.split(",") if kv.endswith("host=127.0.0.1") or ".host=" in kv]
            assert hosts and set(hosts) == {"127.0.0.1"}, n
    assert len([n for n in netdevs if n.startswith("dgram,")]) == 2
    igbs = [args[i + 1] for i, a in enumerate(args) if a == "-device" and args[i + 1].startswith("igb,")]
    assert igbs == ["igb,netdev=fab0,mac=52:54:00:01:00:01,bus=rp1", "igb,netdev=fab1,mac=52:54:00:02:00:01,bus=rp2"]
    smbios = args[args.index("-smbios") + 1]
    assert "manufacturer=HPE" in smbios and "serial=node01" in smbios


def _frame(dst, src, payload=b"x" * 50):
    return bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + b"\x08\x00" + payload


def test_the_rail_switch_floods_unknown_destinations_then_forwards_to_the_learnt_port(tmp_path):
    vms = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(3)]
    for s in vms:
        s.bind(("127.0.0.1", 0))
        s.settimeout(0.5)
    from simlab.lab import free_ports
    ports = [{"node": f"n{i}", "nic": 0, "hub_port": p, "vm_port": vms[i].getsockname()[1]}
             for i, p in enumerate(free_ports(3, home=tmp_path))]
    rail = hub.Rail("rail0", ports)
    a, b = "52:54:00:00:00:0a", "52:54:00:00:00:0b"
    rail.forward(0, _frame("ff:ff:ff:ff:ff:ff", a))         # ARP-like broadcast from port 0
    assert vms[1].recv(2048)[6:12] == bytes.fromhex("52540000000a")
    assert vms[2].recv(2048)[6:12] == bytes.fromhex("52540000000a")
    rail.forward(1, _frame(a, b))                            # reply: a is known on port 0
    assert vms[0].recv(2048)[:6] == bytes.fromhex("52540000000a")
    with pytest.raises(socket.timeout):
        vms[2].recv(2048)
    rail.forward(0, _frame(b, a))                            # b learnt on port 1
    assert vms[1].recv(2048)[:6] == bytes.fromhex("52540000000b")
    with pytest.raises(socket.timeout):
        vms[2].recv(2048)
    assert [p["rx"] for p in ports] == [2, 1, 0] and [p["tx"] for p in ports] == [1, 2, 1]
    for s in vms + rail.socks:
        s.close()


def test_the_vm_inventory_reaches_nodes_over_ssh_with_the_real_sysfs(tmp_path):
    from simlab.inventory import write_inventory
    doc = vm_lab.plan("t", 2)
    for i, hw in enumerate(doc["nodes"]):
        hw.update(ssh_port=2200 + i, bmc_port=8400 + i, bmc_vendor="dell")
    doc["ssh_key"] = "/keys/id_ed25519"

    class FakeLab:
        dir = tmp_path / "lab"
    out = write_inventory(doc, FakeLab(), tmp_path / "inv")
    hosts = yaml.safe_load((out / "hosts.yml").read_text())
    pool = hosts["all"]["children"]["gpu_workers"]["children"]["pool_a"]["hosts"]
    assert pool["node01"]["ansible_host"] == "127.0.0.1" and pool["node01"]["ansible_port"] == 2200
    assert pool["node01"]["roce_addresses"] == {"enp1s0": "192.168.100.1"}
    gw = yaml.safe_load((out / "group_vars/gpu_workers.yml").read_text())
    assert gw["ansible_connection"] == "ssh"
    assert "StrictHostKeyChecking=yes" in gw["ansible_ssh_common_args"]
    assert gw["gpufabric_nics"][0]["match"] == {"vendor_device": "8086:10c9"}
    allvars = yaml.safe_load((out / "group_vars/all/vm.yml").read_text())
    assert "gpufabric_sysfs_root" not in allvars and "gpufabric_boot_time_command" not in allvars
    fabric = yaml.safe_load((out / "group_vars/all/fabric.yml").read_text())
    assert len(fabric["gpufabric_cabling"]) == 2


class _Lab:
    name = "t"

    def __init__(self, tmp_path):
        self.dir = tmp_path
        self.doc = vm_lab.plan("t", 2)


def test_a_vm_fault_on_an_unknown_node_or_of_the_twin_only_is_refused_before_anything_changes(tmp_path):
    from simlab.vm import faults
    lab = _Lab(tmp_path)
    with pytest.raises(faults.FaultError, match=r"unknown target 'node09'.*node01, node02"):
        faults.inject(lab, "node09", "link-down")
    with pytest.raises(faults.FaultError, match=r"'fw-sriov-off' is not a fault of VM nodes.*ConnectX only"):
        faults.inject(lab, "node01", "fw-sriov-off")
    assert list(tmp_path.iterdir()) == []       # no fault recorded, nothing touched


def test_a_lab_goes_down_after_its_rail_switch_has_written_its_counters(tmp_path):
    """The rail switch writes its frame counters into the lab directory as it
    stops; stopping a service waits for it to go, so the directory's removal
    never races that write (which failed `simlab down` with 'Directory not
    empty')."""
    import subprocess
    import sys
    from simlab.lab import REPO, _stop_groups, free_ports
    (port,) = free_ports(1, home=tmp_path)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"rails": [{"name": "rail0", "ports": [
        {"node": "node01", "nic": 0, "hub_port": port, "vm_port": 9}]}]}))
    proc = subprocess.Popen([sys.executable, "-m", "simlab.vm.hub", "serve", "--state-dir", str(tmp_path),
                             "--spec", str(spec)], cwd=REPO, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "fabric-ready").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the rail switch did not start"
            time.sleep(0.05)
        _stop_groups([str(proc.pid), "not a pid"])
        # gone, and what it writes as it stops is written
        assert proc.poll() is not None
        assert json.loads((tmp_path / "fabric-counters.json").read_text())["rail0"][0]["node"] == "node01"
    finally:
        if proc.poll() is None:
            proc.kill()
