"""The host layers on real kernels: two Debian 12 VMs from the factory image
(no VT-d, no IOMMU flag, no VFs, no RDMA) converge through layers 1-6, 9 and
10 with site.yml (VFs 0-1 of each PF on igbvf for pods, VFs 2-3 on vfio-pci
for tenant VMs), a re-run changes nothing, the doctor passes them and says
layers 4 and 8 do not apply to an igb (8086:10c9), and faults made the real
way are named at their layer on that node only.

The tests of this module run in order on one lab and build on each other.
Nothing here is simulated but the hardware QEMU emulates: sysfs, netlink,
udev, systemd, NetworkManager, GRUB, rdma_rxe and ib_write_bw are the real
ones of the guest."""

import json
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from tests.integration.twinlab import ENV, REPO, recap

pytestmark = pytest.mark.layers(1, 2, 3, 4, 5, 6, 8, 9, 10)


LAYERS = "layer01,layer02,layer03,layer04,layer05,layer06,layer08,layer09,layer10"
NODES = ("node01", "node02")
PF = "/sys/bus/pci/devices/0000:01:00.0"


def site(lab, *args):
    proc = lab.playbook("playbooks/site.yml", "--tags", LAYERS, *args)
    return proc, recap(proc.stdout)


def validate(lab):
    """validate.yml -> report.json (removed first, so a run that writes none fails)."""
    (lab.reports / "report.json").unlink(missing_ok=True)
    proc = lab.playbook("playbooks/validate.yml")
    path = lab.reports / "report.json"
    assert path.exists(), f"validate.yml wrote no report (rc {proc.returncode}):\n{proc.stdout[-4000:]}"
    return proc, json.loads(path.read_text())


def rows(report, host):
    return {row["layer"]: row for row in report[host]["layers"]}


def green(report, host):
    """A host every applicable layer of which passes: the layers with no
    cluster here (11-14, and 15 without GPUs) and 7 (no switch) skip."""
    bad = {n: (r["status"], r["reason"]) for n, r in rows(report, host).items()
           if r["status"] not in ("pass", "skipped")
           # a pair whose other end is broken is not tested: not this node's fault
           and not (n == 9 and r["status"] == "warn" and "not tested" in r["reason"])}
    return bad == {} and report[host]["verdict"]["status"] != "fail", bad


def named(report, host, layer, pattern):
    """`host`'s first broken layer is `layer`, its reason matches `pattern`,
    and every other node is green."""
    verdict = report[host]["verdict"]
    assert (verdict["status"], verdict["layer"]) == ("fail", layer), verdict
    assert re.search(pattern, verdict["reason"]), verdict["reason"]
    for other in NODES:
        if other != host:
            assert green(report, other)[0], (other, green(report, other)[1])


def tail(proc):
    return f"{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"


def test_a_factory_node_is_a_real_kernel_without_iommu_or_vfs(vmlab):
    from simlab.vm import image
    out = vmlab.sh("node01", f"uname -r; cat /proc/cmdline; ls /sys/class/iommu | wc -l; "
                             f"cat {PF}/vendor {PF}/device {PF}/sriov_totalvfs {PF}/sriov_numvfs; hostname").stdout.split("\n")
    kernel = json.loads((image.guest_dir() / "manifest.json").read_text())["kernel"]
    assert out[0] in kernel
    assert "intel_iommu" not in out[1]
    assert out[2:8] == ["0", "0x8086", "0x10c9", "7", "0", "node01"]


def test_site_converges_layers_1_to_6_9_and_10_from_the_factory_image(vmlab):
    proc, rc = site(vmlab)
    assert proc.returncode == 0, tail(proc)
    assert set(rc) >= set(NODES) and all(rc[n]["failed"] == 0 for n in NODES), rc
    for node in NODES:
        facts = vmlab.sh(node, "cat /proc/cmdline; ls /sys/class/iommu; "
                               f"cat {PF}/sriov_numvfs; "
                               f"for v in {PF}/virtfn*; do basename $(readlink -f $v/driver); "
                               "basename $(readlink $v/iommu_group); done; "
                               "rdma link show; systemctl is-active containerd; "
                               "nmcli -t -f DEVICE,STATE device | grep v0: || true").stdout
        lines = facts.splitlines()
        assert "intel_iommu=on" in lines[0], (node, lines[0])      # layer 3: GRUB and a real reboot
        assert lines[1] == "dmar0", (node, lines)                    # layer 2: VT-d on, so QEMU has the IOMMU
        assert lines[2] == "4", (node, lines)                        # layer 6: 4 VFs
        drivers, groups = lines[3:11:2], lines[4:12:2]
        assert drivers == ["igbvf", "igbvf", "vfio-pci", "vfio-pci"], (node, drivers)  # vf_drivers 2-3: vfio-pci
        assert len(set(groups)) == 4, (node, groups)               # each VF in an IOMMU group of its own
        assert "rxe_enp1s0/1 state ACTIVE" in facts                  # layer 5: Soft-RoCE over the PF
        assert "\nactive\n" in facts                                 # layer 10: containerd
        assert "enp1s0v0:unmanaged" in facts                         # layer 6: NM leaves the VFs alone
        # the rule was written before the VFs, for the addresses the kernel then gave them
        rule = vmlab.sh(node, "sed -n 's/.*KERNELS==\"\\([^\"]*\\)\".*/\\1/p' "
                              "/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules; echo --; "
                              f"for v in {PF}/virtfn*; do basename $(readlink $v); done").stdout
        written, virtfn = rule.split("--\n")
        assert written.split() == virtfn.split() and len(virtfn.split()) == 4, (node, rule)
        # the hypervisor's read: the two VFs on vfio-pci, each alone in its IOMMU group
        read = json.loads(vmlab.sh(node, "cat /var/lib/gpufabric/passthrough/vfs.json").stdout)
        assert [(v["pf"], v["vf_index"], v["driver"]) for v in read["vfs"]] == \
            [("enp1s0", 2, "vfio-pci"), ("enp1s0", 3, "vfio-pci")], read
        assert [v["pci_address"] for v in read["vfs"]] == virtfn.split()[2:], (read, virtfn)
        for v in read["vfs"]:
            members = vmlab.sh(node, f"ls /sys/kernel/iommu_groups/{v['iommu_group']}/devices").stdout.split()
            assert members == v["iommu_group_devices"] == [v["pci_address"]], (v, members)
        assert "pciVendorSelector" in vmlab.sh(
            node, "cat /var/lib/gpufabric/passthrough/kubevirt-permitted-host-devices.yaml").stdout
        nova = vmlab.sh(node, "cat /var/lib/gpufabric/passthrough/nova-pci.conf").stdout
        assert all(v["pci_address"] in nova for v in read["vfs"]), nova


def test_node02s_bios_was_set_through_sushy_tools_and_took_effect_at_its_power_on(vmlab):
    """node02's BMC is sushy-tools' emulator over a libvirt domain: the bmc
    and bios roles staged the BIOS through its Redfish service and reset the
    node through it (its own access log), it keeps the attributes in the
    domain (libvirt's configuration of it), and the QEMU libvirt started at
    that reset has the VT-d IOMMU (the board's firmware reads the BIOS at
    power-on)."""
    from simlab.vm import sushy
    doc = vmlab.lab.doc
    hw = next(h for h in doc["nodes"] if h["name"] == "node02")
    assert hw["bmc"] == "sushy" and next(h for h in doc["nodes"] if h["name"] == "node01")["bmc"] == "twin"
    user, pw = doc["bmc"]["username"], doc["bmc"]["password"]
    status, systems = sushy.request(hw["bmc_port"], "GET", "/redfish/v1/Systems", user, pw)
    assert status == 200 and [m["@odata.id"] for m in systems["Members"]] == \
        [f"/redfish/v1/Systems/{hw['sushy_uuid']}"], systems          # this BMC's server only
    status, system = sushy.request(hw["bmc_port"], "GET", f"/redfish/v1/Systems/{hw['sushy_uuid']}", user, pw)
    assert (system["Manufacturer"], system["PowerState"]) == ("Sushy Emulator", "On"), system
    assert sushy.request(hw["bmc_port"], "GET", "/redfish/v1/Systems", user, "wrong")[0] == 401
    _, bios = sushy.request(hw["bmc_port"], "GET", f"/redfish/v1/Systems/{hw['sushy_uuid']}/BIOS", user, pw)
    wanted = {"Sriov": "Enabled", "IntelProcVtd": "Enabled", "ProcVirtualization": "Enabled"}
    assert {k: bios["Attributes"].get(k) for k in wanted} == wanted, bios["Attributes"]
    kept = (sushy.libvirt_dir(vmlab.lab.dir) / "etc" / "qemu" / f"{sushy.domain_name(doc['name'], 'node02')}.xml")
    assert sushy.post_args(kept.read_text()) == ["-device", "intel-iommu,intremap=on"]
    access = (vmlab.lab.dir / "logs" / "sushy-node02.log").read_text()
    assert re.search(r'"PATCH /redfish/v1/Systems/[-0-9a-f]+/BIOS/Settings HTTP/1.1" 20[04]', access), access[-2000:]
    assert re.search(r'"POST /redfish/v1/Systems/[-0-9a-f]+/Actions/ComputerSystem.Reset HTTP/1.1" 20[04]',
                     access), access[-2000:]
    pid = (vmlab.lab.dir / "nodes" / "node02" / "qemu.pid").read_text().strip()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"intel-iommu,intremap=on" in cmdline, cmdline
    assert f"guest={sushy.domain_name(doc['name'], 'node02')},debug-threads=on".encode() in cmdline, cmdline


def test_a_rerun_changes_nothing(vmlab):
    proc, rc = site(vmlab)
    assert proc.returncode == 0, tail(proc)
    assert {n: rc[n]["changed"] for n in NODES} == {n: 0 for n in NODES}, tail(proc)


def test_the_vm_nodes_scenarios_testinfra_checks_pass_on_the_converged_nodes(vmlab, tmp_path):
    """molecule/vm_nodes/tests/test_vm_node.py, unchanged, run by testinfra over
    SSH against this lab's inventory, as the scenario's verifier runs it
    (molecule.yml: ansible-inventory, hosts gpu_workers). The scenario converges
    one VM node from the factory image with the same site.yml; make test reads
    the nodes converged here instead of booting and converging a third
    (`molecule test -s vm_nodes` still runs it whole)."""
    # testinfra opens an SSH connection per command unless given a ControlPath:
    # one master connection per node instead (a key exchange under emulation
    # costs about a second)
    # (a short directory: a socket path has at most 107 characters, and %C is 40)
    sockets = Path(tempfile.mkdtemp(prefix="ti", dir="/tmp"))
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(f"Host *\n  ControlPath {sockets}/%C\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "molecule/vm_nodes/tests/test_vm_node.py", f"--ansible-inventory={vmlab.inventory / 'hosts.yml'}",
                           "--hosts=ansible://gpu_workers", f"--ssh-config={ssh_config}"],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, tail(proc)
    # every check ran on both nodes: a test per check and node, none skipped
    summary = proc.stdout.strip().splitlines()[-1]
    checks = len(re.findall(r"^def test_", (REPO / "molecule/vm_nodes/tests/test_vm_node.py").read_text(), re.M))
    assert re.match(rf"^{checks * len(NODES)} passed\b", summary), summary


def test_the_doctor_passes_the_layers_and_says_4_and_8_do_not_apply_to_igb(vmlab):
    proc, report = validate(vmlab)
    for node in NODES:
        ok, bad = green(report, node)
        assert ok, (node, bad)
        r = rows(report, node)
        assert {n: r[n]["status"] for n in (1, 2, 3, 5, 6, 9, 10)} == dict.fromkeys((1, 2, 3, 5, 6, 9, 10), "pass")
        # layers 1-2 read from each node's own BMC: node02's is sushy-tools' emulator
        assert r[1]["evidence"][0].startswith({"node01": "Dell Inc. ", "node02": "Sushy Emulator "}[node]), r[1]
        # the VFs handed to VMs are in the report, with their IOMMU group and NUMA node
        assert [e for e in r[6]["evidence"] if "vfio-pci" in e and "IOMMU group" in e][:2] and \
            len([e for e in r[6]["evidence"] if " on vfio-pci, IOMMU group " in e]) == 2, r[6]["evidence"]
        for layer in (4, 8):
            assert r[layer]["status"] == "skipped", r[layer]
            assert "not applicable" in r[layer]["reason"] and "8086:10c9" in r[layer]["reason"], r[layer]
        # real ib_write_bw over Soft-RoCE, read at perftest's precision and gated at 90% of the lab's line rate
        rates = [float(m) for e in r[9]["evidence"] for m in re.findall(r"([0-9.]+) Mb/s meets the gate of 9\.0 Mb/s", e)]
        assert rates and all(rate >= 9.0 for rate in rates), r[9]["evidence"]
        # a real kernel's sysfs with no NVIDIA GPU: GPUDirect RDMA does not apply, and layer 5 passes
        assert r[5]["reason"].endswith("; no NVIDIA GPU on the node: GPUDirect RDMA not applicable"), r[5]


def test_a_pair_short_on_both_of_its_runs_fails_its_node_naming_both(vmlab):
    """Real ib_write_bw over Soft-RoCE gated at 90% of 200 Mb/s, far above what
    the emulated links carry: each pair runs a second time, in a round after the
    plan's, and each node fails naming both runs (a pair that falls short once
    and meets the gate on its second run passes: tests/unit/test_rdma_pairs.py)."""
    proc = vmlab.playbook("playbooks/site.yml", "--tags", "layer09", "-e", "rdma_check_line_rate_mbps=200")
    rc = recap(proc.stdout)
    assert {n: rc[n]["failed"] for n in NODES} == {n: 1 for n in NODES}, tail(proc)
    flat = " ".join(proc.stdout.split())
    for a, b, ports in (("node01", "node02", "rail0 port1 <-> rail0 port2"), ("node02", "node01", "rail0 port2 <-> rail0 port1")):
        pair = f"{a} enp1s0 -> {b} enp1s0 ({ports}"
        gate = r"[0-9.]+ Mb/s is under the gate of 180\.0 Mb/s \(90% of 200\.0 Mb/s line rate\)"
        assert re.search(rf"layer 9 rdma_check on {a}: {re.escape(pair)}\): {gate}; {re.escape(pair)}, run again\): {gate}",
                         flat), tail(proc)
    assert "(item=round 2 of 2, a second run)" in proc.stdout, tail(proc)


# The faults go through `python -m simlab fault`, which makes them the real
# way (sysfs, udev and GRUB files over SSH; a cable pulled over QMP). Two
# nodes, two faults at a time: each node's verdict names its own, so neither
# fault bleeds into the other node.

def test_vfs_removed_and_a_fabric_link_down_are_named_at_layers_6_and_9(vmlab):
    vmlab.fault("node01", "vfs-removed")
    vmlab.fault("node02", "link-down")
    try:
        _, report = validate(vmlab)
        v1, v2 = report["node01"]["verdict"], report["node02"]["verdict"]
        assert (v1["status"], v1["layer"]) == ("fail", 6), v1
        assert re.search(r"enp1s0|0000:01:00\.0", v1["reason"]), v1["reason"]
        assert (v2["status"], v2["layer"]) == ("fail", 9), v2
        assert "link down" in v2["reason"], v2["reason"]
        assert {n: r["status"] for n, r in rows(report, "node02").items() if n < 9 and r["status"] != "skipped"} == \
            dict.fromkeys((1, 2, 3, 5, 6), "pass")
    finally:
        vmlab.fault("node02", "clear")
    proc = vmlab.playbook("playbooks/site.yml", "--tags", "layer06", "--limit", "node01")
    assert proc.returncode == 0, tail(proc)


def test_the_rdma_module_unloaded_and_networkmanager_on_the_vfs_are_named_at_layers_5_and_6(vmlab):
    vmlab.fault("node02", "module-unloaded")
    vmlab.fault("node01", "networkmanager-grabs-vfs")
    _, report = validate(vmlab)
    v1, v2 = report["node01"]["verdict"], report["node02"]["verdict"]
    assert (v1["status"], v1["layer"]) == ("fail", 6), v1
    assert "NM_UNMANAGED" in v1["reason"], v1["reason"]
    assert (v2["status"], v2["layer"]) == ("fail", 5), v2
    assert "rdma_rxe" in json.dumps(rows(report, "node02")[5]), rows(report, "node02")[5]
    proc = vmlab.playbook("playbooks/site.yml", "--tags", "layer05,layer06")
    assert proc.returncode == 0, tail(proc)


def test_a_vf_left_on_igbvf_and_vfio_pci_not_loadable_are_named_at_layer_6(vmlab):
    vmlab.fault("node01", "vf-wrong-driver")
    vmlab.fault("node02", "vfio-unloadable")
    try:
        _, report = validate(vmlab)
        v1, v2 = report["node01"]["verdict"], report["node02"]["verdict"]
        assert (v1["status"], v1["layer"]) == ("fail", 6), v1
        assert re.search(r"VF \d \(0000:01:\S+\) is on igbvf, but the inventory gives it to VMs", v1["reason"]), v1
        assert (v2["status"], v2["layer"]) == ("fail", 6), v2
        assert "vfio-pci cannot be loaded" in v2["reason"] and "install" in v2["reason"], v2
    finally:
        vmlab.fault("node02", "clear")
    # Before it hands the VF back to vfio-pci, layer 6 refuses while the VF
    # carries a default route, and changes nothing.
    netdev = vmlab.sh("node01", f"ls {PF}/virtfn2/net {PF}/virtfn3/net 2>/dev/null | grep enp").stdout.split()[0]
    vmlab.sh("node01", f"ip link set {netdev} up && ip addr add 192.0.2.5/24 dev {netdev} && "
                       f"ip route add default via 192.0.2.1 dev {netdev} metric 900")
    proc = vmlab.playbook("playbooks/site.yml", "--tags", "layer06", "--limit", "node01")
    said = " ".join(proc.stdout.split())  # the YAML result format wraps long messages
    assert proc.returncode != 0 and f"netdev {netdev}) is not handed to vfio-pci" in said, tail(proc)
    assert f"{netdev} carries the default route" in said, tail(proc)
    assert vmlab.sh("node01", f"ls /sys/class/net/{netdev}/device/driver -l").stdout.rstrip().endswith("igbvf")
    vmlab.sh("node01", f"ip route del default via 192.0.2.1 dev {netdev} && ip addr flush dev {netdev}")
    proc = vmlab.playbook("playbooks/site.yml", "--tags", "layer06")
    assert proc.returncode == 0, tail(proc)
    _, report = validate(vmlab)
    for node in NODES:
        assert rows(report, node)[6]["status"] == "pass", rows(report, node)[6]


def test_after_real_reboots_the_vfs_come_back_and_a_dropped_iommu_flag_is_named_at_layer_3(vmlab):
    """Both nodes reboot at once (a reboot costs a minute under emulation):
    node02 as it is, to show the VFs, their drivers and Soft-RoCE come back
    with NetworkManager running; node01 after intel_iommu=on is removed from
    GRUB's files, which the doctor names at layer 3 while node02 stays green."""
    before = vmlab.sh("node02", "cat /proc/sys/kernel/random/boot_id").stdout
    errors = []

    def reboot_node02():
        try:
            vmlab.lab.reboot("node02")
        except Exception as exc:        # raised again in the test's thread below
            errors.append(exc)

    thread = threading.Thread(target=reboot_node02)
    thread.start()
    try:
        vmlab.fault("node01", "iommu-off")      # edits GRUB's files, update-grub, reboots
    finally:
        thread.join()
    if errors:
        raise errors[0]
    out = vmlab.sh("node02", f"cat /proc/sys/kernel/random/boot_id; cat {PF}/sriov_numvfs; "
                             "systemctl is-active NetworkManager gpufabric-sriov; "
                             f"for v in {PF}/virtfn*; do basename $(readlink -f $v/driver); done; rdma link show; "
                             "nmcli -t -f DEVICE,STATE device").stdout
    assert out.split()[0] != before.strip()
    assert out.split()[1:4] == ["4", "active", "active"], out    # the boot unit ran to its end
    assert out.split()[4:8] == ["igbvf", "igbvf", "vfio-pci", "vfio-pci"], out  # and bound 2-3 to vfio-pci
    assert "rxe_enp1s0/1 state ACTIVE" in out
    assert {f"enp1s0v{i}:unmanaged" for i in range(2)} <= set(out.split())
    assert "intel_iommu=on" not in vmlab.sh("node01", "cat /proc/cmdline").stdout
    _, report = validate(vmlab)
    named(report, "node01", 3, r"intel_iommu")
