"""The twin held against a real kernel: one scripted sequence of SR-IOV
operations (tests/vm/sysfs_sequence.py: 0 then N, the same N again, N over
M, above sriov_totalvfs, not a number, autoprobe off then a bind by hand,
VF MAC/trust/spoofchk through netlink, PF unbind and bind, then VFs handed
to vfio-pci and back) runs on a twin node (ConnectX-7, FUSE sysfs, tool
twins) and on a VM node (igb, Debian 12's kernel).  What each step saw (errno of os.write, what bash and dash say,
file contents, virtfn/physfn links, VF drivers, ``ip -j link`` VF info) must
be the same; where it is not, the twin is wrong.

The VFIO part needs an IOMMU. After a session's converge node02 has one
(layer 2 turned VT-d on, layer 3 added intel_iommu=on). A VM lab brought up
for this module alone is a factory node without one: the sequence is then
compared twice, first without an IOMMU (the twin node's flag removed as
well: vfio-pci's probe fails EINVAL on both), then after the node gets one
the way layers 2 and 3 give it (VT-d on in the BIOS through the BMC state,
intel_iommu=on in a GRUB drop-in, a power cycle).

Runs last on the session's VM lab: it leaves node02's VFs changed (the
sequence ends with none; the walks of a VF's entries after it,
tests/vm/sysfs_entries.py, with two on igbvf and autoprobe on)."""

import base64
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
from tests.integration.twinlab import Twin, require_twin

pytestmark = pytest.mark.layers(6)

SEQUENCE = Path(__file__).with_name("sysfs_sequence.py")


@pytest.fixture(scope="module")
def twin1(tmp_path_factory):
    require_twin()
    t = Twin.up(tmp_path_factory, "ff", "--nodes", "1", "--switches", "1")
    # the VM node hands VFs to VMs: ACS stays on above its NIC. The twin's ready
    # GPU node boots with ACS redirect off on its PCIe switches (a bare-metal
    # GPUDirect node), which puts a VF in its port's IOMMU group; boot it as a
    # node for VMs, without pci=disable_acs_redir=, so both isolate their VFs.
    t.simlab("fault", "node01", "acs-redirect")
    yield t
    t.down()


GRUB_DROPIN = "/etc/default/grub.d/zz-simlab-iommu.cfg"
IOMMU_FLAG = "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT intel_iommu=on\""


def vm_has_iommu(vmlab):
    return bool(vmlab.sh("node02", "ls /sys/class/iommu").stdout.strip())


def vm_iommu_on(vmlab):
    """What layers 2 and 3 do for the IOMMU, done directly: VT-d on in the
    node's BIOS (the BMC's state, applied at power-on), intel_iommu=on on
    the command line, a power cycle."""
    from simlab.bmc import state, vendors
    from simlab.vm import lab as vm_lab
    from simlab.vm.power import QemuPowerDriver
    lab = vmlab.lab
    with state.update_bios(state.bios_path(lab.dir, "node02")) as bios:
        name = vendors.switch_attribute(bios["vendor"], bios["current"], "iommu")
        off = vendors.off_value(bios["vendor"], bios["current"], name)
        bios["current"][name] = "Enable" if off == "Disable" else "Enabled"
        bios["pending"].pop(name, None)
    vmlab.sh("node02", f"echo '{IOMMU_FLAG}' > {GRUB_DROPIN} && update-grub 2>/dev/null")
    QemuPowerDriver(lab.dir).restart("node02", force=True)
    vm_lab.wait_ssh(lab, ["node02"])
    assert vm_has_iommu(vmlab)


def twin_iommu(twin1, on):
    """The twin node's IOMMU flag removed (the iommu-off fault, a reboot) or
    given back (a GRUB drop-in, update-grub, a reboot)."""
    from tests.integration.twinlab import ENV
    if not on:
        twin1.simlab("fault", "node01", "iommu-off")
    else:
        subprocess.run(["podman", "exec", twin1.container("node01"), "sh", "-c",
                        f"mkdir -p /etc/default/grub.d && echo '{IOMMU_FLAG}' > {GRUB_DROPIN} && update-grub"], env=ENV, check=True,
                       capture_output=True)
        from simlab.lab import Lab
        Lab(twin1.name).reboot("node01")


def on_twin(twin1):
    from tests.integration.twinlab import ENV
    c = twin1.container("node01")
    subprocess.run(["podman", "cp", str(SEQUENCE), f"{c}:/tmp/sysfs_sequence.py"], env=ENV, check=True)
    proc = subprocess.run(["podman", "exec", c, "python3", "/tmp/sysfs_sequence.py", "/run/simlab/sys",
                           "0000:3b:00.0", "mlx5_core"], env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def on_vm(vmlab):
    proc = vmlab.sh("node02", "cat > /tmp/sysfs_sequence.py && python3 /tmp/sysfs_sequence.py /sys 0000:01:00.0 igbvf",
                    stdin=SEQUENCE.read_text())
    return json.loads(proc.stdout)


def compare(twin, real):
    assert [s["step"] for s in twin] == [s["step"] for s in real]
    for t, r in zip(twin, real):
        assert t == r, f"step {r['step']!r}: twin {json.dumps(t, sort_keys=True)} != kernel {json.dumps(r, sort_keys=True)}"


def vfio_step(steps, name):
    return next(s for s in steps if s["step"] == name)


def test_the_twin_answers_the_sriov_sequence_as_the_kernel_does(vmlab, twin1):
    t0 = time.monotonic()
    if not vm_has_iommu(vmlab):
        twin_iommu(twin1, on=False)
        twin, real = on_twin(twin1), on_vm(vmlab)
        compare(twin, real)
        assert vfio_step(real, "modprobe vfio-pci")["iommu"] is False
        assert vfio_step(real, "bind VF 0 to vfio-pci")["py"] == "EINVAL"
        print(f"without an IOMMU: {len(real)} steps equal ({time.monotonic() - t0:.0f}s)", file=sys.stderr)
        vm_iommu_on(vmlab)
        twin_iommu(twin1, on=True)
    twin, real = on_twin(twin1), on_vm(vmlab)
    compare(twin, real)
    # the VFIO part ran with an IOMMU: VF 0 was on vfio-pci, alone in its group
    assert vfio_step(real, "modprobe vfio-pci")["iommu"] is True
    bound = vfio_step(real, "bind VF 0 to vfio-pci")
    assert bound["py"] == "ok" and bound["vf0"]["driver"] == "vfio-pci" and bound["vf0"]["iommu_group"] == ["VF0"]
    print(json.dumps(real, indent=1), file=sys.stderr)
    print(f"with an IOMMU: {len(real)} steps equal ({time.monotonic() - t0:.0f}s in all)", file=sys.stderr)


ENTRIES = Path(__file__).with_name("sysfs_entries.py")


def test_a_vfs_entries_come_and_go_on_the_twin_as_on_the_kernel(vmlab, twin1):
    """The twin's FUSE sysfs lets the node's kernel keep the directory
    entries it looked up; a VF removed, unbound, probed again or created must
    still read on the next call as kernfs answers it (tests/vm/sysfs_entries.py:
    every kind of entry under VF 1, walked three times in each state). The
    answers the script expects are held to a real kernel's, and the twin's to
    the same."""
    from tests.vm.sysfs_entries import EXPECTED
    real = json.loads(vmlab.sh("node02", "cat > /tmp/sysfs_entries.py && python3 /tmp/sysfs_entries.py /sys 0000:01:00.0",
                               stdin=ENTRIES.read_text()).stdout)
    twin1.sh("node01", f"cat > /tmp/sysfs_entries.py <<'PYEOF'\n{ENTRIES.read_text()}PYEOF")
    twin = json.loads(twin1.sh("node01", "python3 /tmp/sysfs_entries.py /run/simlab/sys 0000:3b:00.0").stdout)
    assert list(real) == list(EXPECTED) and list(twin) == list(EXPECTED), (list(real), list(twin))
    for step in EXPECTED:
        assert real[step] == EXPECTED[step], f"{step}: kernel {json.dumps(real[step], sort_keys=True)}"
        assert twin[step] == real[step], \
            f"{step}: twin {json.dumps(twin[step], sort_keys=True)} != kernel {json.dumps(real[step], sort_keys=True)}"


CONFIGFS_SEQUENCE = Path(__file__).with_name("configfs_sequence.py")


@pytest.mark.layers(8)
def test_the_twin_answers_the_rdma_cm_configfs_as_the_kernel_does(vmlab, twin1):
    """Layer 8's upstream path writes the default RoCE mode and TOS through
    the RDMA-CM configfs: the twin's is held to a real kernel's (the VM
    node's Soft-RoCE device), errno by errno."""
    dev = vmlab.sh("node01", "ls /sys/class/infiniband | head -n 1").stdout.strip()
    assert dev, "node01 has no RDMA device"
    real = json.loads(vmlab.sh(
        "node01", f"modprobe rdma_cm && (mountpoint -q /sys/kernel/config || mount -t configfs configfs "
                  f"/sys/kernel/config) && cat > /tmp/cfs.py && python3 /tmp/cfs.py /sys/kernel/config {dev}",
        stdin=CONFIGFS_SEQUENCE.read_text()).stdout)
    twin1.sh("node01", f"cat > /tmp/cfs.py <<'PYEOF'\n{CONFIGFS_SEQUENCE.read_text()}PYEOF")
    twin = json.loads(twin1.sh("node01", "python3 /tmp/cfs.py /run/simlab/sys/kernel/config rocep59s0f0").stdout)
    assert real["present"] and real["read"] == ["RoCE v2\n", "0\n"], real
    assert real["mkdir a missing device"] == "ENODEV" and real["tos '300'"][0] == "ERANGE", real
    for key in sorted(real):
        assert twin.get(key) == real[key], f"{key}: twin {twin.get(key)!r} != kernel {real[key]!r}"
    assert sorted(twin) == sorted(real)


def devinfo_layout(block):
    """ibv_devinfo's lines with their values taken out: the tabs before the
    key, the key (``GID`` for a GID line) and the tabs after its colon."""
    out = []
    for line in block.splitlines():
        m = re.match(r"(\t*)(GID\[\s*\d+\]|[A-Za-z_]+):(\t+)\S", line)
        if m:
            key = "GID" if m.group(2).startswith("GID[") else m.group(2)
            out.append((m.group(1), key, m.group(3)))
    return out


def first_device(text):
    """The first device block of ibv_devinfo's output (up to its blank line)."""
    return text.split("\n\n")[0] + "\n"


def port_block(block):
    return block[block.index("\t\tport:"):]


@pytest.mark.layers(9)
def test_real_ibv_devinfo_on_soft_roce_reads_as_sysfs_and_is_laid_out_as_the_twin_prints_it(vmlab, twin1):
    """rdma-core's ibv_devinfo (Debian 12's) over the VM node's Soft-RoCE
    device, made by layer 5 (or here, on a lab brought up for this module
    alone): parse_ibv_devinfo reads its plain and -v output as the kernel's
    sysfs has the device (GUIDs, port state, physical state, link layer,
    width and speed, every GID with its type). The twin's ibv_devinfo has the
    real one's lines in the same order and layout, values aside (the twin
    leaves out -v's device-wide capability block, and a device without a
    board_id prints none), and the twin's GID line, given the kernel's GID
    and type, is the real line byte for byte."""
    import socket
    from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools
    from simlab.tools import rdma as twin_rdma
    dev = vmlab.sh("node01", "modprobe rdma_rxe && (ls /sys/class/infiniband | grep -q . || "
                             "rdma link add rxe_enp1s0 type rxe netdev enp1s0); "
                             "ls /sys/class/infiniband | head -n 1").stdout.strip()
    assert dev, "node01 has no RDMA device"
    plain = vmlab.sh("node01", f"ibv_devinfo -d {dev}").stdout
    verbose = vmlab.sh("node01", f"ibv_devinfo -v -d {dev}").stdout
    sysfs = vmlab.sh("node01", f"cd /sys/class/infiniband/{dev} && cat node_guid sys_image_guid ports/1/state "
                               "ports/1/phys_state ports/1/link_layer ports/1/rate && cd ports/1 && "
                               "for f in gids/*; do read g < $f; "   # read, not cat: 1024 GIDs on rxe
                               "[ $g = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue; "
                               "i=${f#gids/}; read t < gid_attrs/types/$i; echo \"GID $i $g $t\"; done").stdout.splitlines()
    guid, image_guid, state, phys, link_layer, rate = sysfs[:6]
    kernel_gids = [(int(i), g, " ".join(rest)) for _, i, g, *rest in (line.split() for line in sysfs[6:])]
    assert kernel_gids, sysfs

    (p,) = rdma_tools.parse_ibv_devinfo(plain)
    (v,) = rdma_tools.parse_ibv_devinfo(verbose)
    for d in (p, v):
        assert (d["hca_id"], d["node_guid"], d["sys_image_guid"], d["phys_port_cnt"]) == (dev, guid, image_guid, 1), d
        (port,) = d["ports"]
        assert (port["port"], port["state_num"], port["link_layer"]) == (1, int(state.split(":")[0]), link_layer), \
            (port, state, link_layer)
        assert port["state"] == "PORT_" + state.split(": ")[1], (port, state)
    (port,) = v["ports"]
    assert [(g["index"], g["gid"], g["type"]) for g in port["gids"]] == kernel_gids, (port["gids"], kernel_gids)
    assert int(port["fields"]["phys_state"].split("(")[1].rstrip(")")) == int(phys.split(":")[0]), (port, phys)
    # sysfs rate: "2.5 Gb/sec (1X SDR)"; devinfo: active_width "1X (1)", active_speed "2.5 Gbps (1)"
    assert port["fields"]["active_width"].split()[0] == rate.split("(")[1].split()[0], (port["fields"], rate)
    assert port["fields"]["active_speed"].split()[0] == rate.split()[0], (port["fields"], rate)

    # the twin's GID line for the kernel's GID and type is the real line
    real_gid_lines = [line + "\n" for line in verbose.splitlines() if line.lstrip().startswith("GID[")]
    assert real_gid_lines == [twin_rdma._gid_line(i, g, t, True) for i, g, t in kernel_gids]
    for line, (_i, g, _t) in zip(real_gid_lines, kernel_gids):   # RoCE v2: the inet_ntop form
        assert line.split("\t")[-1].split(",")[0] == socket.inet_ntop(socket.AF_INET6, bytes.fromhex(g.replace(":", "")))

    # the twin's ibv_devinfo: the same lines in the same order and layout
    twin_plain = first_device(twin1.sh("node01", "ibv_devinfo").stdout)
    twin_verbose = first_device(twin1.sh("node01", "ibv_devinfo -v").stdout)
    real_plain = devinfo_layout(first_device(plain))
    assert [k for k in devinfo_layout(twin_plain) if k[1] != "board_id"] == real_plain, (twin_plain, plain)
    assert "board_id" not in {k[1] for k in real_plain}   # rxe has none; devinfo prints it only when there is one
    squeeze = lambda layout: [k for i, k in enumerate(layout) if k[1] != "GID" or i == 0 or layout[i - 1][1] != "GID"]
    twin_port, real_port = devinfo_layout(port_block(twin_verbose)), devinfo_layout(port_block(first_device(verbose)))
    assert squeeze(twin_port) == squeeze(real_port), (port_block(twin_verbose), port_block(verbose))
    assert real_port[-1][1] == "GID" and twin_port[-1][1] == "GID"


RDMA_COMMANDS = [
    "rdma link show {dev}/1", "rdma -d link show {dev}/1", "rdma -j link show {dev}/1", "rdma -j -p link show {dev}/1",
    "rdma -j -d link show {dev}/1", "rdma link show {dev}", "rdma -j link show {dev}", "rdma link show {dev}/2",
    "rdma -j -p link show nosuchdev/1", "rdma link show {dev}/1 extra", "rdma link nosuchcmd",
    "rdma dev show {dev}", "rdma -d dev show {dev}", "rdma -j dev show {dev}", "rdma -j -p -d dev show {dev}",
    "rdma dev show nosuchdev", "rdma -j dev show nosuchdev", "rdma dev show {dev}/1", "rdma dev nosuchcmd",
    "rdma system", "rdma -j system", "rdma -V", "rdma nosuchobject", "rdma -x link",
]


DEVINFO_COMMANDS = [
    "ibv_devinfo -d nosuchdev", "ibv_devinfo -d {dev} -i 2", "ibv_devinfo -d {dev} -i 0", "ibv_devinfo -i abc",
    "ibv_devinfo -x", "ibv_devinfo --nosuchoption", "ibv_devinfo -d",
]


def tool_answers(sh, commands, dev, netdev):
    """What each of ``commands`` prints (stdout, stderr, exit status) on a
    node, with what differs between one RDMA device and another put in
    words: the device and netdev names, GUIDs, netdev index, firmware
    (Soft-RoCE has none, and rdma prints none then), the capability list
    and adaptive moderation (mlx5 has it on, rxe off)."""
    script = "".join(f"{c.format(dev=dev)} 2>/tmp/tool.err; echo \"@rc=$?\"; cat /tmp/tool.err; echo @end; "
                     for c in commands)
    out = sh(script).stdout.replace(dev, "DEV").replace(netdev, "NETDEV")
    subs = [(r"[0-9a-f]{4}(:[0-9a-f]{4}){3}", "GUID"), (r"(netdev_index\"?:? ?)\d+", r"\1N"),
            (r" fw \S+", ""), (r"(\n *)?\"fw\": ?\"[^\"]*\",", ""), (r"caps: <[^>]*>", "caps: <CAPS>"),
            (r"(\"caps\": ?\[ ?)[^\]]*?( ?\])", r"\1CAPS\2"), (r"adaptive-moderation\"?:? ?(on|off|true|false)", "AM")]
    for pattern, repl in subs:
        out = re.sub(pattern, repl, out)
    answers = out.split("@end\n")
    assert len(answers) == len(commands) + 1, out
    return dict(zip(commands, answers))


@pytest.mark.layers(9)
def test_the_twins_rdma_and_ibv_devinfo_answer_as_the_real_tools_do(vmlab, twin1):
    """iproute2's rdma (Debian 12's 6.1, the version the twin's names) on
    the VM node's Soft-RoCE device and the twin's on a ConnectX PF: the
    same text, JSON (compact and -p), details, errors and exit statuses,
    device values aside; and rdma-core's ibv_devinfo the same on what it
    refuses (an unknown device, option or port, a port that is no number)."""
    first = re.compile(r"^link (\S+)/1 .*netdev (\S+) $", re.M)
    vmlab.sh("node01", "modprobe rdma_rxe && (ls /sys/class/infiniband | grep -q . || "
                       "rdma link add rxe_enp1s0 type rxe netdev enp1s0)")
    real_dev, real_netdev = first.search(vmlab.sh("node01", "rdma link").stdout).groups()
    twin_dev, twin_netdev = first.search(twin1.sh("node01", "rdma link").stdout).groups()
    commands = RDMA_COMMANDS + DEVINFO_COMMANDS
    real = tool_answers(lambda s: vmlab.sh("node01", s), commands, real_dev, real_netdev)
    twin = tool_answers(lambda s: twin1.sh("node01", s), commands, twin_dev, twin_netdev)
    assert "@rc=0" in real["rdma -j -p link show {dev}/1"] and "Wrong device name" in real["rdma link show {dev}/2"]
    assert "@rc=4\nInvalid port requested for device\n" == real["ibv_devinfo -d {dev} -i 2"]
    for cmd in commands:
        assert twin[cmd] == real[cmd], f"{cmd}: twin {twin[cmd]!r} != real {real[cmd]!r}"


IP_SETUP = ("echo 0 > {sys}/bus/pci/devices/{bdf}/sriov_numvfs && echo 2 > {sys}/bus/pci/devices/{bdf}/sriov_numvfs && "
            "ip link set dev {pf} up && for i in $(seq 100); do [ \"$(cat /sys/class/net/{pf}/carrier 2>/dev/null || "
            "cat {sys}/class/net/{pf}/carrier)\" = 1 ] && break; sleep 0.2; done && "
            "ip link set dev {pf} vf 0 mac 02:00:00:00:00:10 && "
            "ip link set dev {pf} vf 1 mac 02:11:22:33:44:55 vlan 10 qos 3 spoofchk off trust on && "
            "ip link set dev {pf} vf 1 max_tx_rate 100")

IP_COMMANDS = [
    "ip link show dev {pf}", "ip link show {pf}", "ip link show dev {pf} up", "ip -j link show dev {pf}",
    "ip -j -p link show dev {pf}", "ip -json -pretty link show {pf}", "ip --json link show dev {pf}",
    "ip link show {pf} {pf}", "ip link show dev",
    "ip -br link show dev {pf}", "ip -j -br link show {pf}", "ip -brief -json -pretty link show dev {pf}",
    "ip -o link show dev {pf}", "ip -oneline -j link show {pf}",
    "ip link set dev {pf} vf 1 trust maybe", "ip link set dev {pf} vf x trust on", "ip link set dev {pf} vf 1 spoofchk",
    "ip link set dev {pf} vf 7 trust on", "ip link set dev {pf} vf 1 bogus 1", "ip link set dev {pf} vf 1 qos 3",
    "ip link set dev {pf} vf", "ip link set dev {pf} vf 1 state sideways", "ip link set dev {pf} vf 1 vlan 5000",
    "ip link set dev {pf} vf 1 vlan 10 qos 9", "ip link set dev {pf} vf 1 vlan 10 qos 256",
    "ip link set dev {pf} vf 1 vlan 18446744073709551616", "ip link set dev {pf} vf 1 vlan 10 proto 802.1ad",
    "ip link set dev {pf} vf 1 vlan 10 proto 802.1ad vlan 20", "ip link set dev {pf} vf 1 mac 10.8",
    "ip link set dev {pf} vf 9 min_tx_rate 5", "ip link set dev {pf} vf 1 node_guid 00:11:22:33:44:55:66:zz",
    "ip link set dev {pf} vf 1 vlan 10 proto ipx", "ip link set dev {pf} vf 1 vlan 10 proto foo",
    "ip link set dev {pf} vf 1 vlan 10 proto 0x88a8", "ip link set dev {pf} vf 1 vlan 10 qos 3 proto 0x8100",
    "ip link set dev {pf} vf 1 mac zz",
    "ip link set dev {pf} vf 1 mac 02:11:22:33:44", "ip link set dev {pf} vf 1 mac 1.2.3.4",
    "ip link set dev {pf} vf 1 mac 01:00:5e:00:00:01", "ip link set dev {pf} vf 1 max_tx_rate x",
    "ip link set dev {pf} vf 1 min_tx_rate 200", "ip link set dev {pf} vf 1 query_rss on",
    "ip link set dev {pf} vf 1 rate 0x64", "ip link set dev {pf} vf 1 trust o", "ip link set dev {pf} vf 1 t on",
    "ip link set dev {pf} vf 1 mtu 1500", "ip link set dev {pf} mtu x", "ip link set dev {pf} {pf}",
    "ip -- link show dev {pf}", "ip -j link show dev {pf}",
    "ip link set dev {pf} down", "ip link show dev {pf}", "ip link show dev {pf} up", "ip -j link show dev {pf} up",
    "ip -j -p link show dev {pf} up", "ip -br link show dev {pf}", "ip -br link show dev {pf} up",
    "ip -j -br link show dev {pf} up", "ip -o link show {pf}", "ip link set dev {pf} up",
]


def ip_answers(sh, pf, pf_mac, query_rss_zeroed):
    """What each of IP_COMMANDS prints (stdout, stderr, exit status) on a
    node, with the PF's name, ifindex and MAC put in words. mlx5's eswitch
    zeroes the VF info it reports (mlx5_eswitch_get_vport_config()'s memset),
    so a ConnectX PF shows ``query_rss off``, where igb leaves the kernel's
    -1 and iproute2 prints nothing: that one difference of the two drivers
    is taken out of the twin's answers."""
    script = "".join(f"{c.format(pf=pf)} 2>/tmp/ip.err; echo \"@rc=$?\"; cat /tmp/ip.err; echo @end; "
                     for c in IP_COMMANDS)
    out = sh(script).stdout.replace(pf.ljust(16), "PF".ljust(16)).replace(pf, "PF").replace(pf_mac, "PFMAC")
    out = re.sub(r"(?m)^\d+: PF:", "N: PF:", out)
    out = re.sub(r"(\"ifindex\": ?)\d+", r"\1N", out)
    if query_rss_zeroed:      # the last item of a VF line (-o: before its backslash), of a vfinfo_list entry
        out = re.sub(r"(?m), query_rss off(?=\\|$)|,\s*\"query_rss_en\": ?false(?=\s*\})", "", out)
    answers = out.split("@end\n")
    assert len(answers) == len(IP_COMMANDS) + 1, out
    return answers[:-1]       # in order: a command may come twice, before and after a change


@pytest.mark.layers(6)
def test_the_twins_ip_link_answers_as_real_iproute2_does(vmlab, twin1):
    """iproute2's ip (Debian 12's 6.1) on the VM node's igb PF and the twin's
    on a ConnectX PF, each with two VFs set the same way: ``ip link show``
    in text, -j and -j -p (the VF lines and vfinfo_list, iproute2's nested
    pretty JSON), -br and -o, and ``ip link set ... vf`` refused the same way, with the
    same message and exit status, for what iproute2 refuses (a word it
    cannot read, a missing value, a bad MAC) and what the kernel does (a VF
    the PF lacks, a qos above 7, 802.1ad, a multicast MAC, query_rss), and
    the VFs as `ip -j` shows them at the end."""
    real_pf, twin_pf = "enp1s0", "enp59s0f0np0"
    vmlab.sh("node02", IP_SETUP.format(sys="/sys", bdf="0000:01:00.0", pf=real_pf))
    twin1.sh("node01", IP_SETUP.format(sys="/run/simlab/sys", bdf="0000:3b:00.0", pf=twin_pf))
    mac = lambda sh, pf: json.loads(sh(f"ip -j link show dev {pf}").stdout)[0]["address"]
    real = ip_answers(lambda s: vmlab.sh("node02", s), real_pf, mac(lambda s: vmlab.sh("node02", s), real_pf), False)
    twin = ip_answers(lambda s: twin1.sh("node01", s), twin_pf, mac(lambda s: twin1.sh("node01", s), twin_pf), True)
    vmlab.sh("node02", f"for i in $(seq 100); do [ \"$(cat /sys/class/net/{real_pf}/carrier)\" = 1 ] && break; "
                       "sleep 0.2; done")     # the PF up again for the tests after this one
    said = {c: a for c, a in reversed(list(zip(IP_COMMANDS, real)))}     # the first answer to each command
    assert "vf 1     link/ether 02:11:22:33:44:55 brd ff:ff:ff:ff:ff:ff, vlan 10, qos 3" in said["ip link show dev {pf}"]
    assert said["ip link set dev {pf} vf 1 query_rss on"] == "@rc=2\nRTNETLINK answers: Operation not supported\n"
    assert said["ip -j -p link show dev {pf}"].startswith("[ {\n") and \
        said["ip -j -p link show dev {pf} up"] == "[ {} ]\n@rc=0\n"      # asked while the PF is down
    for n, (cmd, t, r) in enumerate(zip(IP_COMMANDS, twin, real)):
        assert t == r, f"{n}: {cmd}: twin {t!r} != real {r!r}"


# a netdev's link files in sysfs, read after each step; a read the kernel refuses
# prints its error, a speed or duplex prints "value" (igb's 1000 Mb/s is not a ConnectX's)
LINK_READ = ("for n in {pf} {vf}; do for f in operstate carrier speed duplex; do v=$(cat {sys}/class/net/$n/$f 2>&1); "
             "case $f:$? in speed:0|duplex:0) v=value;; *:1) v=${{v##*: }};; esac; echo \"$n $f $v\"; done; done")
# the state and physical state of the VF's RDMA port (Soft-RoCE on the VM node's VF)
PORT_READ = ("; echo \"VF port $(rdma link | sed -n 's/.* state \\([A-Z_]*\\) physical_state \\([A-Z_]*\\) "
             "netdev {vf} .*/\\1 \\2/p')\"")
# until the VF's carrier is the one wanted and what follows it has settled: the
# operstate (linkwatch, a moment later) and its RDMA port (the netdev event)
LINK_WAIT = ("for i in $(seq 150); do [ \"$(cat {sys}/class/net/{vf}/carrier 2>/dev/null)\" = {want} ] && "
             "[ \"$(cat {sys}/class/net/{vf}/operstate)\" = {oper} ] && "
             "rdma link | grep -q ' state {port} .* netdev {vf} ' && break; sleep 0.2; done")
LINK_STEPS = [("{vf} held down", "ip link set dev {vf} down", None),
              ("{vf} up", "ip link set dev {vf} up", 1),
              ("{pf} down", "ip link set dev {pf} down", 0),
              ("{pf} up", "ip link set dev {pf} up", 1),
              ("{vf} down", "ip link set dev {vf} down", None)]


def link_files(sh, sys, pf, vf):
    """What each of LINK_STEPS leaves in the PF's and the VF's operstate,
    carrier, speed and duplex, with their names put in words."""
    seen = []
    for name, cmd, want in LINK_STEPS:
        wait = LINK_WAIT.format(sys=sys, vf=vf, want=want, oper=("down", "up")[want],
                                port=("DOWN", "ACTIVE")[want]) + "; " if want is not None else ""
        out = sh(f"{cmd.format(pf=pf, vf=vf)}; {wait}{LINK_READ.format(sys=sys, pf=pf, vf=vf)}"
                 f"{PORT_READ.format(vf=vf)}").stdout
        out = out.replace(vf, "VF").replace(pf, "PF")
        if name == "{pf} down":
            # up without its carrier, rxe's port polls and mlx5's is disabled (rxe_query_port(),
            # mlx5_query_port_roce()): the physical state is the drivers' own there
            out = re.sub(r"(?m)^(VF port DOWN) \S+$", r"\1 PHYS", out)
        seen.append((name, out))
    return seen


@pytest.mark.layers(6)
def test_the_twins_netdev_link_files_read_as_the_kernels_do(vmlab, twin1):
    """A PF's and a VF's operstate, carrier, speed and duplex in sysfs on
    the VM node (igb and igbvf, Debian 12's kernel) and on a twin node, as
    the VF's netdev and its PF go down and up: a netdev that is not up
    refuses carrier, speed and duplex (net-sysfs.c: EINVAL); a VF that is
    up follows its PF's link; the VF's RDMA port (Soft-RoCE on the VM
    node) is down while its netdev is, active when it has its link. The
    VM node's VF is taken from NetworkManager first, which would bring it
    up by itself. Before the
    twin kept this, it read a down PF's carrier as 0 and a down VF's as
    its PF's."""
    real_pf, real_vf, twin_pf, twin_vf = "enp1s0", "enp1s0v0", "enp59s0f0np0", "enp59s0f0v0"
    vmlab.sh("node02", IP_SETUP.format(sys="/sys", bdf="0000:01:00.0", pf=real_pf) +
             f" && for i in $(seq 50); do [ -e /sys/class/net/{real_vf} ] && break; sleep 0.2; done && "
             f"nmcli device set {real_vf} managed no && modprobe rdma_rxe && (rdma link | grep -q ' netdev {real_vf} ' || "
             f"rdma link add rxe_{real_vf} type rxe netdev {real_vf})")
    twin1.sh("node01", IP_SETUP.format(sys="/run/simlab/sys", bdf="0000:3b:00.0", pf=twin_pf))
    real = link_files(lambda s: vmlab.sh("node02", s), "/sys", real_pf, real_vf)
    twin = link_files(lambda s: twin1.sh("node01", s), "/run/simlab/sys", twin_pf, twin_vf)
    said = dict(real)
    assert "VF carrier Invalid argument" in said["{vf} held down"] and "VF carrier 1" in said["{vf} up"]
    assert "PF speed Invalid argument" in said["{pf} down"] and "VF carrier 0" in said["{pf} down"]
    assert "VF port DOWN DISABLED" in said["{vf} held down"] and "VF port ACTIVE LINK_UP" in said["{vf} up"]
    for (step, t), (_, r) in zip(twin, real):
        assert t == r, f"after {step}: twin {t!r} != real {r!r}"


LIST_SCRIPT = ("ls {sys}/class/net /sys/class/net | grep -v '^/' | grep . | sort -u; echo @end; "
               "for n in $(ls {sys}/class/net /sys/class/net | grep -v '^/' | grep . | sort -u); do "
               "echo \"$n $(cat {sys}/class/net/$n/ifindex 2>/dev/null || cat /sys/class/net/$n/ifindex)\"; done; "
               "echo @end; ip link show; echo @end; ip -br link show; echo @end; ip -o link; echo @end; "
               "ip -j link show; echo @end; ip -j -p link; echo @end; ip link show dev {pf}; echo @end; "
               "ip -br link show {pf}; echo @end; ip -o link show {pf}; echo @end; ip -j link show dev {pf}")


def link_list(sh, sys, pf):
    """A node's netdevs (in sysfs, with their ifindexes) and its ``ip link``
    lists: text, -br, -o, -j, -j -p, and the PF's own answers to the same.
    Read until two readings agree (a VF's netdev comes a moment after it)."""
    last = None
    for _ in range(20):
        out = sh(LIST_SCRIPT.format(sys=sys, pf=pf)).stdout
        if out == last:
            break
        last = out
        time.sleep(0.5)
    (names, indexes, text, brief, oneline, compact, pretty, pf_text, pf_brief, pf_oneline,
     pf_json) = out.split("@end\n")
    return {"names": set(names.split()), "ifindex": {ln.split()[0]: int(ln.split()[1]) for ln in indexes.splitlines()},
            "text": text, "brief": brief, "oneline": oneline, "json": json.loads(compact), "pretty": pretty,
            "pf_text": pf_text, "pf_brief": pf_brief, "pf_oneline": pf_oneline, "pf_json": json.loads(pf_json)[0]}


# links made with the ifindex given, in this order, to see the dump order of
# a 6.1 kernel: 300 and 44 share bucket 44, 257 shares lo's bucket 1
DUMMIES = [("gfdA", 300), ("gfdB", 44), ("gfdC", 257)]


@pytest.mark.layers(6)
def test_the_twins_ip_link_list_holds_every_netdev_as_real_iproute2s_does(vmlab, twin1):
    """``ip link show`` without a device, on the VM node and on a twin node
    (its lo from the real ip, the rest from the twin), each PF with two VFs:
    every netdev in sysfs is listed once, in the order a 6.1 kernel dumps
    them; the PF's entry in the text, -br, -o and -j lists is what ``ip link
    show <pf>`` prints alone; -j -p is the same list. The order rule is the
    real kernel's: on the VM node, dummy links made with ifindexes 300, 44
    and 257 come in hash bucket order (ifindex & 255), the newest first in a
    bucket (44 before 300, 257 before lo), which is the twin's rule
    (simlab/tools/ip.py _dump_key) where ifindexes follow the order links
    came, as the twin hands them out. A link never up has ``qdisc noop`` on
    both. Before the twin listed its netdevs, its list had none of them."""
    from simlab.tools.ip import _dump_key
    vmlab.sh("node02", IP_SETUP.format(sys="/sys", bdf="0000:01:00.0", pf="enp1s0"))
    twin1.sh("node01", IP_SETUP.format(sys="/run/simlab/sys", bdf="0000:3b:00.0", pf="enp59s0f0np0"))
    lists = {"real": link_list(lambda s: vmlab.sh("node02", s), "/sys", "enp1s0"),
             "twin": link_list(lambda s: twin1.sh("node01", s), "/run/simlab/sys", "enp59s0f0np0")}
    assert {"enp1s0v0", "enp1s0v1"} <= lists["real"]["names"]
    assert {"lo", "enp59s0f0np0", "enp59s0f0v0", "enp59s0f0v1"} <= lists["twin"]["names"]
    for side, got in lists.items():
        listed = [link["ifname"] for link in got["json"]]
        assert sorted(listed) == sorted(got["names"]), side
        assert listed == sorted(listed, key=lambda n: _dump_key(got["ifindex"][n])), side
        assert [ln.split()[0].split("@")[0] for ln in got["brief"].splitlines()] == listed, side
        assert [re.match(r"\d+: ([^:@]+)", ln)[1] for ln in got["oneline"].splitlines()] == listed, side
        assert got["pf_text"] in got["text"] and got["pf_brief"] in got["brief"], side
        assert got["pf_oneline"] in got["oneline"] and got["pf_json"] in got["json"], side
        assert json.loads(got["pretty"]) == got["json"] and got["pretty"].startswith("[ {\n"), side
    made = "; ".join(f"ip link add {n} index {i} type dummy" for n, i in DUMMIES)
    try:
        listed = json.loads(vmlab.sh("node02", f"modprobe dummy numdummies=0 && {made} && ip -j link show").stdout)
    finally:
        vmlab.sh("node02", "; ".join(f"ip link del {n}" for n, _ in DUMMIES), check=False)
    came = [link["ifname"] for link in sorted(listed, key=lambda link: link["ifindex"])
            if not link["ifname"].startswith("gfd")] + [n for n, _ in DUMMIES]      # the order links were made
    index = {link["ifname"]: link["ifindex"] for link in listed}
    assert [link["ifname"] for link in listed] == sorted(came, key=lambda n: ((index[n] & 255), -came.index(n)))
    assert [link["ifname"] for link in listed][:3] == ["gfdC", "lo", "enp0s3"]
    assert {link["ifname"]: link["qdisc"] for link in listed if link["ifname"].startswith("gfd")} == \
        dict.fromkeys(["gfdA", "gfdB", "gfdC"], "noop")
    twin_vf = json.loads(twin1.sh("node01", "ip -j link show enp59s0f0v0").stdout)[0]
    assert (twin_vf["qdisc"], "UP" in twin_vf["flags"]) == ("noop", False)


# ``ip address`` on a PF that holds the RoCE address its provisioning gave it
# (a NetworkManager profile: ipv4 manual /24, ipv6 disabled) and on a VF held
# down: {net} is the first three octets of the PF's address, so "{net}.77" is
# a secondary of it; 10.77.0.6 is one of 10.77.0.5 and goes with it
ADDR_COMMANDS = [
    "ip addr show dev {pf}", "ip address show {pf}", "ip a s {pf}", "ip -j addr show dev {pf}",
    "ip -j -p addr show dev {pf}", "ip -br addr show dev {pf}", "ip -j -br addr show {pf}",
    "ip -o addr show dev {pf}", "ip -o -j addr show dev {pf}", "ip -4 addr show dev {pf}",
    "ip -4 -j addr show dev {pf}", "ip -6 addr show dev {pf}", "ip -6 -j addr show dev {pf}",
    "ip addr show dev {pf} up", "ip -j addr show {pf} up",
    "ip addr add {net}.77/24 dev {pf}", "ip addr add {net}.77/24 dev {pf}", "ip addr add 10.77.0.5/24 brd + dev {pf}",
    "ip addr add 10.77.0.6/24 dev {pf}", "ip addr add 10.78.0.1/31 brd + dev {pf}",
    "ip addr add 10.79.0.4/24 brd - dev {pf}", "ip addr add 10.80.0.5/24 broadcast 10.80.0.9 dev {pf}",
    "ip addr add 127.0.0.9/8 dev {pf}", "ip addr add local 10.81.0.1 dev {pf}",
    "ip addr show dev {pf}", "ip -j addr show dev {pf}", "ip -j -p addr show dev {pf}", "ip -br addr show dev {pf}",
    "ip -j -br addr show dev {pf}", "ip -o addr show dev {pf}", "ip -4 -o addr show {pf}", "ip -o -j addr show {pf}",
    "ip addr del 10.77.0.5/24 dev {pf}", "ip addr del 10.77.0.6/24 dev {pf}", "ip addr del 10.81.0.1 dev {pf}",
    "ip addr del 127.0.0.9/8 dev {pf}", "ip addr del 10.78.0.1/31 dev {pf}", "ip addr del 10.79.0.4/24 dev {pf}",
    "ip addr delete 10.80.0.5/24 dev {pf}", "ip addr del {net}.77/24 dev {pf}", "ip addr del {net}.77/24 dev {pf}",
    "ip addr show dev {pf}",
    "ip addr add 300.1.1.1/24 dev {pf}", "ip addr add 1.2.3.4/33 dev {pf}", "ip addr add dev {pf}",
    "ip addr add 1.2.3.4/24", "ip addr add 1.2.3.4/24 dev gfnosuch", "ip addr show dev gfnosuch",
    "ip addr add 2001:db8::5/64 dev {pf}", "ip addr del 2001:db8::5/64 dev {pf}",
    "ip link set dev {vf} down", "ip addr add 10.90.0.9/24 dev {vf}", "ip -o addr show dev {vf}",
    "ip -o -j addr show dev {vf}", "ip -4 -o addr show {vf}", "ip -o -j addr show dev {vf} up",
    "ip -o addr show dev {vf} up", "ip -br addr show dev {vf} up", "ip -j addr show dev {vf} up",
    "ip -6 -j addr show dev {vf}", "ip addr del 10.90.0.9/24 dev {vf}", "ip -o -j addr show dev {vf}",
    "ip -o addr show dev {vf}",
    # one IP with two prefixes, then one of them gone: its GID goes with it (read after these)
    "ip addr add 10.82.0.5/24 dev {pf}", "ip addr add 10.82.0.5/16 dev {pf}", "ip -br addr show dev {pf}",
    "ip addr del 10.82.0.5/16 dev {pf}",
    # the last dev word is the one
    "ip addr add 10.83.0.1/24 dev lo dev {pf}", "ip -br addr show dev {pf}", "ip addr del 10.83.0.1/24 dev lo dev {pf}",
    "ip addr show dev {pf}",
]
# the PF's entry in these lists is its own answer under the same options
ADDR_LISTS = ["ip addr", "ip -j addr", "ip -br addr", "ip -o addr", "ip -4 addr", "ip -4 -j addr", "ip -o -j addr",
              "ip -br -j addr show"]
# the IPv4 addresses of the PF's RoCE GID entries (RoCE v2)
GID_READ = ("for g in $(grep -l '^0000:0000:0000:0000:0000:ffff:' {sys}/class/infiniband/*/ports/1/gids/*); do "
            "n=${{g##*/}}; d=${{g%/gids/*}}; "
            "[ \"$(cat $d/gid_attrs/ndevs/$n 2>/dev/null)\" = {pf} ] && "
            "[ \"$(cat $d/gid_attrs/types/$n 2>/dev/null)\" = 'RoCE v2' ] && cat $g; done | sort -u; echo @end; ")


def addr_answers(sh, sys, pf, vf):
    """What each of ADDR_COMMANDS prints (stdout, stderr, exit status) on a
    node, the PF's and VF's names, the PF's MAC, ifindexes and the PF's
    subnet put in words; the IPv4 addresses of the PF's RoCE v2 GIDs before,
    after the adds and at the end; and each of ADDR_LISTS with the PF's
    answer to the same options."""
    first = json.loads(sh(f"ip -j addr show dev {pf}").stdout)[0]
    own = first["addr_info"][0]["local"]
    net = own.rsplit(".", 1)[0]

    def words(text):
        return re.sub(re.escape(own) + r"(?![\d.])", "PFADDR", text).replace(net + ".", "NET.")
    gids = GID_READ.format(sys=sys, pf=pf)
    adds = ADDR_COMMANDS.index("ip addr show dev {pf}", 1)
    script = gids + "".join(f"{c.format(pf=pf, vf=vf, net=net)} 2>/tmp/ip.err; echo \"@rc=$?\"; cat /tmp/ip.err; "
                            "echo @end; " + (gids if n == adds else "") for n, c in enumerate(ADDR_COMMANDS))
    script += gids + "".join(f"{c} 2>&1; echo @end; {c.replace(' show', '')} show dev {pf} 2>&1; echo @end; "
                             for c in ADDR_LISTS)
    out = sh(script).stdout
    for name, word in ((vf, "VF"), (pf, "PF")):
        # -br pads the name to 16 and a blank before the state
        out = re.sub(rf"(?m)^{re.escape(name)} +(?=(?:UP|DOWN|UNKNOWN) )", word.ljust(17), out)
        out = out.replace(name, word)
    out = words(out.replace(first["address"], "PFMAC"))
    out = re.sub(r"(?m)^\d+: (PF|VF)\b", r"N: \1", out)
    out = re.sub(r"(\"(?:if)?index\": ?)\d+", r"\g<1>0", out)
    parts = out.split("@end\n")
    gid_at = [0, adds + 2, len(ADDR_COMMANDS) + 2]
    gid_sets = [sorted(words(".".join(str(int(h[i:i + 2], 16)) for h in g.split(":")[6:] for i in (0, 2)))
                       for g in parts[k].split()) for k in gid_at]
    answers = parts[1:adds + 2] + parts[adds + 3:len(ADDR_COMMANDS) + 2]
    lists = parts[len(ADDR_COMMANDS) + 3:-1]
    assert len(answers) == len(ADDR_COMMANDS) and len(lists) == 2 * len(ADDR_LISTS), out
    return answers, gid_sets, list(zip(lists[0::2], lists[1::2]))


@pytest.mark.layers(6)
def test_the_twins_ip_addr_answers_as_real_iproute2_does(vmlab, twin1):
    """iproute2's ``ip address`` (Debian 12's 6.1) on the VM node's igb PF,
    which holds the address its NetworkManager profile gives it, and the
    twin's on a ConnectX PF holding the twin's provisioned RoCE address:
    ``show`` in text, -j, -j -p, -br, -o, -4 and -6, with and without
    ``up``; ``add`` and ``del`` of addresses in the PF's subnet (a
    secondary) and outside it, with ``brd +``, ``brd -``, a broadcast, a
    /31, a loopback address (scope host, before the global ones), a /32,
    and a wildcard deletion (iproute2's warning); deleting a primary takes
    its secondary (promote_secondaries 0); the kernel's and iproute2's
    refusals (an address the netdev has or has not, a bad prefix, no
    address, IPv6 on a PF whose profile disables it); a VF held down, with
    -o, ``up`` and -6; one IP with two prefixes, one of them deleted
    (the IP's GID goes, the other address stays); ``dev`` given twice (the
    last is the one). The RoCE v2 GIDs of the PF follow its IPv4
    addresses on both (Soft-RoCE on the VM node). In each list, the PF's
    entry is its own answer."""
    vmlab.sh("node02", IP_SETUP.format(sys="/sys", bdf="0000:01:00.0", pf="enp1s0"))
    vmlab.sh("node02", "modprobe rdma_rxe && (rdma link | grep -q 'netdev enp1s0 ' || "
                       "rdma link add rxe_enp1s0 type rxe netdev enp1s0)")
    twin1.sh("node01", IP_SETUP.format(sys="/run/simlab/sys", bdf="0000:3b:00.0", pf="enp59s0f0np0"))
    real, real_gids, real_lists = addr_answers(lambda s: vmlab.sh("node02", s), "/sys", "enp1s0", "enp1s0v0")
    twin, twin_gids, twin_lists = addr_answers(lambda s: twin1.sh("node01", s), "/run/simlab/sys", "enp59s0f0np0",
                                              "enp59s0f0v0")
    for sh, pf in ((lambda c: vmlab.sh("node02", c), "enp1s0"), (lambda c: twin1.sh("node01", c), "enp59s0f0np0")):
        sh(f"ip addr del 10.82.0.5/24 dev {pf}")
    said = dict(zip(ADDR_COMMANDS, real))
    assert said["ip addr add 1.2.3.4/24 dev gfnosuch"] == '@rc=1\nCannot find device "gfnosuch"\n'
    # 10.82.0.5/24 stays on the PF at the end, its GID does not
    assert "10.82.0.5/24" in real[-1] and "10.82.0.5" not in real_gids[2]
    assert "10.83.0.1/24" in real[ADDR_COMMANDS.index("ip addr add 10.83.0.1/24 dev lo dev {pf}") + 1]
    assert said["ip addr add 2001:db8::5/64 dev {pf}"] == "@rc=2\nRTNETLINK answers: Permission denied\n"
    assert "secondary PF" in real[ADDR_COMMANDS.index("ip addr show dev {pf}", 1)]
    assert {"PFADDR", "NET.77", "10.77.0.5", "10.77.0.6"} <= set(real_gids[1]) and \
        real_gids[0] == real_gids[2] == ["PFADDR"]
    for n, (cmd, t, r) in enumerate(zip(ADDR_COMMANDS, twin, real)):
        assert t == r, f"{n}: {cmd}: twin {t!r} != real {r!r}"
    assert twin_gids == real_gids
    for side, lists in (("real", real_lists), ("twin", twin_lists)):
        for cmd, (listed, own) in zip(ADDR_LISTS, lists):
            if "-j" in cmd:
                assert json.loads(own)[0] in json.loads(listed), f"{side}: {cmd}"
            else:
                assert own and own in listed, f"{side}: {cmd}"


KMOD_COMMANDS = ["modinfo mlx5_core", "modinfo mlx5_ib", "modinfo ib_core", "modinfo mlx5_core ib_core",
                 "modinfo -F depends ib_core", "modinfo -F depends mlx5_core", "modinfo -n mlx5_ib",
                 "modinfo -F vermagic mlx5-ib", "modinfo -F parm ib_core", "modinfo -p mlx5_core",
                 "modinfo --field=alias mlx5_ib", "modinfo -F signature ib_core", "modinfo -a -F license mlx5_ib",
                 "modinfo -F nosuch ib_core", "modinfo nosuch", "modinfo", "modinfo -F",
                 "modprobe -D mlx5_ib", "modprobe -D rdma_ucm", "modprobe -D mlx5-core", "modprobe -D ib_core",
                 "modprobe --show-depends br_netfilter", "modprobe -D overlay", "modprobe -D vfio-pci",
                 "modprobe -D vfio_iommu_type1", "modprobe -D vfio", "modinfo -F parmtype mlx5_core", "modprobe -D nosuch"]


def kmod_answers(sh):
    """What each of KMOD_COMMANDS prints (stdout, stderr, exit status) on a
    node, its kernel release put in a word, and what differs by the key
    that signed the modules (signer, key, the signature's bytes) masked."""
    script = "uname -r; " + "".join(f"{c} 2>/tmp/kmod.err; echo \"@rc=$?\"; cat /tmp/kmod.err; echo @end; "
                                    for c in KMOD_COMMANDS)
    out = sh(script).stdout
    release, _, out = out.partition("\n")
    out = re.sub(r"(?m)^(signer|sig_key):( +).*$", r"\1:\2KEY", out.replace(release, "RELEASE"))
    out = re.sub(r"(?m)^(signature: +|\t\t)?((?:[0-9A-F]{2}:)+[0-9A-F]{2}:?)$",
                 lambda m: (m.group(1) or "") + re.sub("[0-9A-F]{2}", "XX", m.group(2)), out)
    answers = out.split("@end\n")
    assert len(answers) == len(KMOD_COMMANDS) + 1, out
    return answers[:-1]


@pytest.mark.layers(5)
def test_the_twins_modinfo_and_modprobe_answer_as_real_kmod_does(vmlab, twin1):
    """kmod 30 on the VM node's Debian 12 kernel and the twin's kmod on its
    inbox node: modinfo of mlx5_core, mlx5_ib and ib_core line for line
    (every alias, parameter and signature line, the padding of an empty
    field), its -F/-n/-p answers, and modprobe -D's chains of the ConnectX,
    RDMA, bridge and VFIO modules from modules.dep, the same, and what kmod
    says of a module it lacks or an option without its value; the release
    and the signing key aside."""
    real = kmod_answers(lambda s: vmlab.sh("node02", s))
    twin = kmod_answers(lambda s: twin1.sh("node01", s))
    said = dict(zip(KMOD_COMMANDS, real))
    assert said["modinfo -F depends ib_core"] == "\n@rc=0\n" and said["modinfo nosuch"].startswith("@rc=1\n")
    assert "insmod /lib/modules/RELEASE/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko \n@rc=0" in said["modprobe -D mlx5_ib"]
    for n, (cmd, t, r) in enumerate(zip(KMOD_COMMANDS, twin, real)):
        assert t == r, f"{n}: {cmd}: twin {t!r} != real {r!r}"


SYSCTL_CONF = ("; a comment\nnet.ipv4.ip_forward\n-net.bridge.excluded\n-net.bridge.no-such-key = 1\n"
               "   net.bridge.bridge-nf-call-iptables =  1  \nnet.ipv4.ip_forward=0\n")
SYSCTL_COMMANDS = [
    "sysctl net.ipv4.ip_forward", "sysctl -n net.ipv4.ip_forward", "sysctl net/ipv4/ip_forward",
    "sysctl -w net.ipv4.ip_forward=1", "sysctl -n -w net.ipv4.ip_forward=0", "sysctl -b net.ipv4.ip_forward",
    "sysctl --values --binary net.ipv4.ip_forward", "sysctl -w net.ipv4.ip_forward=0x1", "sysctl -n net.ipv4.ip_forward",
    "sysctl -nw net.ipv4.ip_forward=010", "sysctl -n net.ipv4.ip_forward", "sysctl -w net.ipv4.ip_forward=09",
    "sysctl -w net.ipv4.ip_forward=+1", "sysctl -w net.ipv4.ip_forward=yes", "sysctl -w net.ipv4.ip_forward=",
    "sysctl -w net.ipv4.ip_forward=2147483648", "sysctl -w net.ipv4.ip_forward", "sysctl -w 'net.ipv4.ip_forward = 2 '",
    "sysctl -n net.ipv4.ip_forward", "sysctl -qw net.ipv4.ip_forward=0", "sysctl net.ipv4.ip_forward -q -w",
    "sysctl -w net.bridge.bridge-nf-call-iptables=2", "sysctl net.bridge.bridge-nf-call-iptables",
    "sysctl -w net.bridge.bridge-nf-call-iptables=0", "sysctl net.bridge.no-such-key",
    "sysctl -e net.bridge.no-such-key", "sysctl net.bridge.no-such-key net.bridge.nope net.ipv4.ip_forward",
    "sysctl -w net.bridge.no-such-key=1", "sysctl -e -w net.bridge.no-such-key=1",
    "sysctl -p /tmp/sysctl-test.conf", "sysctl -p/tmp/sysctl-test.conf", "sysctl --load=/tmp/sysctl-test.conf",
    "sysctl -e -p /tmp/sysctl-test.conf", "sysctl -p /tmp/no-such.conf", "sysctl -n net.bridge.bridge-nf-call-iptables",
    "sysctl -fq", "sysctl -p /tmp", "sysctl --load=", "sysctl -b net.ipv4.ip_forward kernel.ostype",
    "sysctl net.ipv4.ip_forward kernel.ostype", "sysctl -- -net.ipv4.ip_forward",
]


@pytest.mark.layers(10)
def test_the_twins_sysctl_answers_as_procps_on_a_real_kernel_does(vmlab, twin1):
    """procps-ng's sysctl (Debian 12's 4.0.2) on the VM node's kernel and the
    twin's on its node, br_netfilter loaded on both: reads in dots and
    slashes, -n and -b, writes echoed as given, what the kernel's
    proc_dointvec() takes (hex, octal, blanks) and refuses (09, +1, a word,
    nothing, past int), the bridge switch storing 2 as 1, keys the kernel
    lacks (with -e too, and the exit status adding up over reads), a write
    without '=', and a file's lines (a comment, a line without '=', an
    excluded key, an ignored failure) through -p, -pFILE and --load=; each
    the same stdout, stderr and exit status."""
    setup = (f"modprobe br_netfilter && printf '{SYSCTL_CONF}' > /tmp/sysctl-test.conf && "
             "sysctl -qw net.ipv4.ip_forward=0 net.bridge.bridge-nf-call-iptables=1")
    keep = "net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables"

    def answers(sh):
        forward = sh("sysctl -n net.ipv4.ip_forward").stdout.strip()
        had_bridge = sh("test -e /sys/module/br_netfilter || test -e /run/simlab/sys/module/br_netfilter",
                        check=False).returncode == 0
        sh(setup)
        script = "".join(f"{c} 2>/tmp/sysctl.err; echo \"@rc=$?\"; cat /tmp/sysctl.err; echo @end; "
                         for c in SYSCTL_COMMANDS)
        out = sh(script).stdout.split("@end\n")
        assert len(out) == len(SYSCTL_COMMANDS) + 1, out
        sh(f"sysctl -qw net.ipv4.ip_forward={forward} net.bridge.bridge-nf-call-iptables=1" +
           ("" if had_bridge else " && modprobe -r br_netfilter"))
        return out[:-1]

    real = answers(lambda s, check=True: vmlab.sh("node02", s, check=check))
    twin = answers(lambda s, check=True: twin1.sh("node01", s, check=check))
    said = dict(zip(SYSCTL_COMMANDS, real))
    assert said["sysctl -w net.ipv4.ip_forward=09"] == \
        '@rc=1\nsysctl: setting key "net.ipv4.ip_forward": Invalid argument\n'
    assert said["sysctl net.bridge.bridge-nf-call-iptables"].startswith("net.bridge.bridge-nf-call-iptables = 1\n")
    for n, (cmd, t, r) in enumerate(zip(SYSCTL_COMMANDS, twin, real)):
        assert t == r, f"{n}: {cmd}: twin {t!r} != real {r!r}"


@pytest.mark.layers(8)
def test_real_dcb_on_igb_is_named_as_a_device_without_dcb(vmlab):
    """The emulated 82576 has no dcbnl ops: real iproute2 answers `Attribute
    read: Operation not supported`, which the dcb parser names as a device
    without DCB (reason no-dcb), not as a parse error or a crash."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import iproute_dcb
    pf = vmlab.sh("node01", "ls /sys/bus/pci/devices/0000:01:00.0/net | head -n 1").stdout.strip()
    proc = vmlab.sh("node01", f"dcb -N pfc show dev {pf}", check=False)
    assert proc.returncode == 1 and proc.stdout == "", proc
    assert proc.stderr == "Attribute read: Operation not supported\n", proc.stderr
    with pytest.raises(iproute_dcb.DcbUnsupported) as exc:
        iproute_dcb.parse_pfc(proc.stderr)
    assert exc.value.reason == "no-dcb"


@pytest.mark.layers(9)
def test_real_lldpd_over_the_rail_reads_as_the_plan_and_as_the_twin_prints_it(vmlab):
    """lldpd (Debian 12's) in a VM node hears the LLDPDU that the switch end
    of each fabric cable sends (simlab.vm.hub speaks it, as 802.1AB lays it
    out) over the real igb link. The node reader (lldp.parse) reads real
    lldpcli in both JSON forms, the neighbours are the cabling plan's ends,
    and the twin's lldpcli prints the same neighbours in the same shape."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import lldp
    from simlab.fabric import cables
    from simlab.tools import lldpcli
    lab = vmlab.lab
    mine = [c for c in lab.doc["cabling"] if c["node"] == "node01"]
    pfs = [c["pf"] for c in mine]
    deadline = time.monotonic() + 60
    while True:
        real0 = vmlab.sh("node01", "lldpcli -f json0 show neighbors").stdout
        # with VFs on the PF, the emulated 82576's embedded switch loops the node's own
        # LLDPDU back to the PF, and lldpd lists it: the cabling check skips it
        got = [n for n in lldp.parse(real0, managed=pfs) if n["local"] in pfs and n["sysname"] != "node01"]
        if len(got) == len(pfs) or time.monotonic() > deadline:
            break
        time.sleep(2)
    ends = lambda ns: sorted((n["local"], n["sysname"], n["chassis_id"], n["port_id_type"], n["port_id"],
                              n["port_descr"], n["ttl"]) for n in ns)
    want = [dict(cables.advertised(lab.doc, c["switch"], c["port"]), local=c["pf"]) for c in mine]
    assert ends(got) == ends([dict(w, ttl=str(w["ttl"]), port_descr=w["port_descr"] or None) for w in want]), real0
    real = [n for n in lldp.parse(vmlab.sh("node01", "lldpcli -f json show neighbors").stdout)
            if n["local"] in pfs and n["sysname"] != "node01"]
    assert ends(real) == ends(got)
    # the twin's lldpcli: the same neighbours, the same keys per entry as real lldpd prints
    twin = lldp.parse(lldpcli.render(want, "json0"))
    assert ends(twin) == ends(got)
    real_entry = next(e for e in json.loads(real0)["lldp"][0]["interface"]
                      if e["name"] == pfs[0] and e["chassis"][0]["name"][0]["value"] != "node01")
    twin_entry = json.loads(lldpcli.render(want, "json0"))["lldp"][0]["interface"][0]
    assert set(twin_entry) == set(real_entry)
    assert set(twin_entry["port"][0]) == set(real_entry["port"][0])
    assert set(twin_entry["chassis"][0]) <= set(real_entry["chassis"][0])


def test_acs_of_a_real_root_port_reads_as_lspci_prints_it(vmlab):
    """QEMU's PCIe root port above each igb NIC has an ACS capability. The
    collection's reader (the extended capability list of the port's sysfs
    config, the control word at +6) reads what the kernel left there as
    lspci -vvv prints it, with the IOMMU on (the kernel's isolation set, as
    on the twin's switch ports); the NIC's path from sysfs is the root port
    below the host bridge: PHB between two such NICs, as nvidia-smi would
    name it."""
    node = "node02"
    if not vm_has_iommu(vmlab):
        vm_iommu_on(vmlab)
    nics = vmlab.sh(node, "ls -d /sys/bus/pci/devices/*/sriov_totalvfs | cut -d/ -f6").stdout.split()
    assert nics
    paths = [pcie.path_of(vmlab.sh(node, f"readlink -f /sys/bus/pci/devices/{bdf}").stdout.strip()) for bdf in nics]
    for bdf, path in zip(nics, paths):
        assert path[0] == "pci0000:00" and path[-1] == bdf and len(path) == 3, path
        port = path[1]
        cfg = base64.b64decode(vmlab.sh(node, f"base64 -w0 /sys/bus/pci/devices/{port}/config").stdout)
        shown = vmlab.sh(node, f"lspci -vvv -s {port}").stdout
        lines = {k: next((line for line in shown.splitlines() if line.strip().startswith(k + ":")), None)
                 for k in ("ACSCap", "ACSCtl")}
        got = pcie.acs(cfg)
        assert len(cfg) == pcie.PCI_CONFIG_SIZE
        assert got is not None and None not in lines.values(), shown
        assert pcie.acs_text(got["cap"]) == lines["ACSCap"].split(":", 1)[1].strip()
        assert pcie.acs_text(got["ctrl"]) == lines["ACSCtl"].split(":", 1)[1].strip()
        # the kernel's isolation set, where the port offers it, as the twin's Kernel.acs_ctrl gives it
        assert got["ctrl"] == got["cap"] & pcie.ACS_ISOLATION, pcie.acs_text(got["ctrl"])
    if len(paths) == 2:
        assert pcie.relation({"path": paths[0], "numa_node": "-1"}, {"path": paths[1], "numa_node": "-1"})["kind"] == "PHB"

