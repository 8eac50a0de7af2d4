"""The node's tool twins run in-process against an Agent: their output is
parsed by the collection's own parsers, their errors are the real tools'."""

from __future__ import annotations

import errno
import io
import json
import re
import sys

import pytest

from plugins.module_utils.nic_firmware import mlx_tools
from plugins.module_utils.rdma_check import rdma_tools
from simlab.node import agent as agent_mod
from simlab.node import boot, hardware
from simlab.node.kernel import KernelError
from simlab.tools import (agentclient, cargs, cma_roce, grubby, ip, mlnx_qos, mlxconfig, modprobe, mstflint,
                          mstfwreset, nmcli, rdma)

pytestmark = pytest.mark.layers(4, 5, 8)

BDF = "0000:3b:00.0"
PF = "enp59s0f0np0"


def make_state(driver="inbox", link_type="ETH", preset="ready"):
    hw = hardware.default_spec("node01", 1, nics=2, driver=driver, link_type=link_type)
    hw["preset"] = preset
    fw = hardware.factory_firmware(hw)
    if preset == "ready":
        for nic in hardware.nic_specs(hw):
            for col in ("current", "next"):
                fw[nic.bdf][col].update(SRIOV_EN=1, NUM_OF_VFS=nic.totalvfs)
    return {"hw": hw, "firmware": fw, "cmdline": "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1 ro",
            "bios": {"sriov": True, "iommu": True, "acs": False}, "faults": {}}


@pytest.fixture
def agent(tmp_path, monkeypatch):
    monkeypatch.setattr(boot, "LAB", tmp_path)
    a = agent_mod.Agent(make_state())

    def request(req, sock_path=None, timeout=30):
        return json.loads(json.dumps(a.handle(json.loads(json.dumps(req)))))

    monkeypatch.setattr(agentclient, "request", request)
    return a


def run(capsys, module, argv, prog=None, stdin=None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    rc = module.main(argv, prog=prog) if prog else module.main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def enable_vfs(a, n=2, pf_index=0):
    k = a.kernel
    pf = k.pfs[pf_index]
    k.write_numvfs(pf, f"{n}\n".encode())
    for vf in pf.vfs:
        vf.probed_at = 0
    k.generation += 1
    return pf


# ----------------------------------------------------------------- mlxconfig
def test_mlxconfig_extended_query_parses(agent, capsys):
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-e", "q"], prog="mlxconfig")
    assert rc == 0
    parsed = mlx_tools.parse_mlxconfig_query(out)
    p = parsed["params"]
    assert p["SRIOV_EN"]["current"] == "True(1)" and p["NUM_OF_VFS"]["next_int"] == 16
    assert p["LINK_TYPE_P1"]["default"] == "ETH(2)"
    assert "Device:             0000:3b:00.0" in out
    assert "*" in out.split("Configurations:")[1]     # SRIOV_EN/NUM_OF_VFS differ from the defaults


def test_mlxconfig_short_bdf_and_specific_params(agent, capsys):
    rc, out, _ = run(capsys, mlxconfig, ["-d", "3b:00.0", "q", "SRIOV_EN"], prog="mstconfig")
    assert rc == 0
    assert "SRIOV_EN" in out and "NUM_OF_VFS" not in out
    assert "Next Boot" in out and "Default" not in out


def test_mlxconfig_set_then_pending(agent, capsys):
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-y", "set", "NUM_OF_VFS=8", "SRIOV_EN=True"],
                     prog="mlxconfig")
    assert rc == 0
    res = mlx_tools.parse_mlxconfig_set(out)
    assert res["applied"] and res["reset_required"] == "reboot"
    assert {c["name"]: c["new"] for c in res["changes"]} == {"NUM_OF_VFS": "8", "SRIOV_EN": "True(1)"}
    assert agent.kernel.firmware[BDF]["next"]["NUM_OF_VFS"] == 8
    assert agent.kernel.firmware[BDF]["current"]["NUM_OF_VFS"] == 16
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-e", "q"], prog="mlxconfig")
    pending = mlx_tools.mlxconfig_pending(mlx_tools.parse_mlxconfig_query(out))
    assert "NUM_OF_VFS" in json.dumps(pending)


def test_mlxconfig_link_type_label(agent, capsys):
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-y", "set", "LINK_TYPE_P1=IB"], prog="mlxconfig")
    assert rc == 0 and agent.kernel.firmware[BDF]["next"]["LINK_TYPE_P1"] == 1
    assert "IB(1)" in out


def test_mlxconfig_prompt_reads_stdin(agent, capsys, monkeypatch):
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "set", "NUM_OF_VFS=4"], prog="mlxconfig",
                     stdin="n\n", monkeypatch=monkeypatch)
    assert rc == 2
    assert " Apply new Configuration? (y/n) [n] : -E- Aborted by user." in out
    assert agent.kernel.firmware[BDF]["next"]["NUM_OF_VFS"] == 16
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "set", "NUM_OF_VFS=4"], prog="mlxconfig",
                     stdin="y\n", monkeypatch=monkeypatch)
    assert rc == 0 and "Applying... Done!" in out
    assert agent.kernel.firmware[BDF]["next"]["NUM_OF_VFS"] == 4


def test_mlxconfig_errors(agent, capsys):
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-y", "set", "NUM_OF_VFS=128"], prog="mlxconfig")
    assert rc == 3
    assert "Applying... Failed!\n-E- Parameter NUM_OF_VFS' value is larger than maximum allowed 127\n" in out
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-y", "set", "FOO_BAR=1"], prog="mlxconfig")
    assert rc == 3 and out.endswith("-E- Failed to find Param / TLV with name 'FOO_BAR' port 0 module -1\n")
    res = mlx_tools.parse_mlxconfig_set(out)
    assert res["failed"] and not res["applied"]
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-y", "set", "SRIOV_EN=maybe"], prog="mlxconfig")
    assert rc == 3 and "-E- Unknown value maybe" in out
    rc, out, _ = run(capsys, mlxconfig, ["-d", "0000:3c:00.0", "q"], prog="mlxconfig")
    assert rc == 3 and out == "-E- Failed to open the device\n-E- Failed to open the device\n"
    rc, out, _ = run(capsys, mlxconfig, ["-d", "/dev/mst/mt4129_pciconf0", "q"], prog="mstconfig")
    assert rc == 3
    rc, out, _ = run(capsys, mlxconfig, ["-d", "/dev/mst/mt4129_pciconf1", "q"], prog="mlxconfig")
    assert rc == 0 and "/dev/mst/mt4129_pciconf1" in out


def test_mlxconfig_reset(agent, capsys):
    rc, out, _ = run(capsys, mlxconfig, ["-d", BDF, "-y", "reset"], prog="mlxconfig")
    assert rc == 0
    assert out == ("\n Reset configuration for device 0000:3b:00.0? (y/n) [n] : y\nApplying... Done!\n"
                   "-I- Please reboot machine to load new configurations.\n")
    assert agent.kernel.firmware[BDF]["next"]["SRIOV_EN"] == 0


# ----------------------------------------------------------------- mstflint / mstfwreset
def test_mstflint_query_and_running_version(agent, capsys):
    rc, out, _ = run(capsys, mstflint, ["-d", BDF, "q"], prog="mstflint")
    q = mlx_tools.parse_mstflint_query(out)
    assert rc == 0 and q["fw_version"] == "28.39.1002" and q["psid"] == "MT_0000000838"
    assert q["base_mac"]["value"] == "0c42a1000100" and not q["reset_pending"]
    agent.kernel.firmware[BDF]["fw_version"] = "28.41.1000"
    rc, out, _ = run(capsys, mstflint, ["-d", BDF, "q"], prog="flint")
    q = mlx_tools.parse_mstflint_query(out)
    assert q["fw_version_running"] == "28.39.1002" and q["reset_pending"]
    rc, out, _ = run(capsys, mstflint, ["-d", "0000:3c:00.0", "q"], prog="mstflint")
    assert rc == 1 and out.startswith("-E- Cannot open Device: 0000:3c:00.0.")


def test_mstfwreset_query_levels(agent, capsys):
    rc, out, _ = run(capsys, mstfwreset, ["-d", BDF, "q"], prog="mstfwreset")
    assert rc == 0
    desc = 'Driver, PCI link, network link will remain up ("live-Patch")'
    assert "0: %-62s-Supported     (default)\n" % desc in out
    assert "1: %-62s-Not Supported \n" % 'Only ARM side will not remain up ("Immediate reset").' in out
    agent.kernel.firmware[BDF]["next"]["NUM_OF_VFS"] = 4
    rc, out, _ = run(capsys, mstfwreset, ["-d", BDF, "q"], prog="mstfwreset")
    assert "3: Driver restart and PCI reset" in out and "-Supported     (default)" in out.split("\n3:")[1]


def test_mstfwreset_reset_applies_next_boot(agent, capsys):
    pf = enable_vfs(agent, 2)
    agent.kernel.firmware[BDF]["next"]["NUM_OF_VFS"] = 4
    rc, out, _ = run(capsys, mstfwreset, ["-d", BDF, "--skip_driver", "-l", "3", "-y", "reset"],
                     prog="mstfwreset")
    assert rc == 0, out
    assert "Continue with reset?[y/N] y" in out and out.endswith("-I- FW was loaded successfully.\n")
    assert "Stopping Driver" not in out
    assert agent.kernel.firmware[BDF]["current"]["NUM_OF_VFS"] == 4 and pf.numvfs == 0 and pf.vfs == []
    rc, out, _ = run(capsys, mstfwreset, ["-d", BDF, "-l", "1", "-y", "reset"], prog="mstfwreset")
    assert rc == 1 and "-E- Reset-level '1' is not supported in the current state of this device." in out
    rc, out, _ = run(capsys, mstfwreset, ["-d", "0000:3c:00.0", "q"], prog="mstfwreset")
    assert rc == 1 and "Failed to re-open device (0000:3c:00.0)" in out


# ----------------------------------------------------------------- mlnx_qos
def test_mlnx_qos_roce_recipe(agent, capsys, monkeypatch):
    monkeypatch.setattr(mlnx_qos, "_lldpad_running", lambda: False)
    rc, out, _ = run(capsys, mlnx_qos, ["-i", PF, "--trust", "dscp", "--pfc", "0,0,0,1,0,0,0,0"])
    assert rc == 0
    q = mlx_tools.parse_mlnx_qos(out)
    assert q["trust"] == "dscp" and q["pfc_enabled"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert agent.kernel.pfs[0].trust == "dscp" and agent.kernel.pfs[0].pfc[3] == 1
    assert "\tprio:3 dscp:24,25,26,27,28,29,30,31," in out
    rc, out, _ = run(capsys, mlnx_qos, ["-i", PF, "--dscp2prio", "set,48,6", "--cable_len", "20"])
    assert rc == 0 and agent.kernel.pfs[0].cable_len == 20 and "Cable len: 20" in out


def test_mlnx_qos_errors(agent, capsys, monkeypatch):
    monkeypatch.setattr(mlnx_qos, "_lldpad_running", lambda: False)
    rc, out, _ = run(capsys, mlnx_qos, ["-i", PF, "--pfc", "0,0,0,1"])
    assert rc == 1 and out == "pfc list must have 8 items\n"
    rc, out, _ = run(capsys, mlnx_qos, ["-i", PF, "--pfc", "0,0,0,2,0,0,0,0"])
    assert rc == 1 and out.startswith("Bad value for PFC: 2 is not in the range 0..1\n")
    rc, out, _ = run(capsys, mlnx_qos, ["-i", "nosuch0"])
    assert rc == 1 and out.endswith("ETS features are not supported on your system\n")
    rc, out, _ = run(capsys, mlnx_qos, ["-i", PF, "--trust", "foo"])
    assert rc == 1 and out == "Invalid trust state command. Refer to the help.\n"
    rc, out, _ = run(capsys, mlnx_qos, [])
    assert rc == 1 and out.startswith("Interface name is required\n")


# ----------------------------------------------------------------- cma_roce
def test_cma_roce_mode_and_tos(agent, capsys, monkeypatch):
    monkeypatch.setattr(cma_roce.os, "geteuid", lambda: 0)
    rc, out, _ = run(capsys, cma_roce, ["-d", "rocep59s0f0", "-p", "1", "-m", "1"], prog="cma_roce_mode")
    assert rc == 0 and out == "IB/RoCE v1\n" and agent.kernel.pfs[0].roce_mode == "IB/RoCE v1"
    rc, out, _ = run(capsys, cma_roce, ["-d", "rocep59s0f0", "-m", "2"], prog="cma_roce_mode")
    assert out == "RoCE v2\n"
    rc, out, _ = run(capsys, cma_roce, ["-d", "rocep59s0f0", "-t", "106"], prog="cma_roce_tos")
    assert rc == 0 and out == "106\n" and agent.kernel.pfs[0].roce_tos == 106
    rc, out, err = run(capsys, cma_roce, ["-d", "mlx5_9"], prog="cma_roce_mode")
    assert rc == 1 and out == "Failed to create configuration for mlx5_9\n"
    agent.kernel.modules.discard("rdma_cm")
    rc, out, _ = run(capsys, cma_roce, ["-d", "rocep59s0f0"], prog="cma_roce_tos")
    assert rc == 1 and out == "Module rdma_cm is not loaded or does not support configfs\n"


# ----------------------------------------------------------------- RDMA tools
def test_ibv_devinfo_show_gids_rdma_link(agent, capsys):
    enable_vfs(agent, 2)
    rc, out, _ = run(capsys, rdma, [], prog="ibv_devinfo")
    devs = rdma_tools.parse_ibv_devinfo(out)
    names = [d["hca_id"] for d in devs]
    assert names[:2] == ["rocep59s0f0", "rocep134s0f0"] and "rocep59s0f1" in names
    assert "\tvendor_part_id:\t\t\t4129\n" in out and "\tvendor_part_id:\t\t\t4126\n" in out
    rc, out, _ = run(capsys, rdma, ["-d", "rocep59s0f0", "-v"], prog="ibv_devinfo")
    assert "\t\t\tGID[  3]:\t\t::ffff:172.30.0.1, RoCE v2\n" in out
    rc, out, err = run(capsys, rdma, ["-d", "nope"], prog="ibv_devinfo")
    assert rc == 255 and err == "IB device 'nope' wasn't found\n"
    rc, out, _ = run(capsys, rdma, ["rocep59s0f0"], prog="show_gids")
    g = rdma_tools.parse_show_gids(out)
    assert "n_gids_found=4" in out and "172.30.0.1" in out and g
    rc, out, _ = run(capsys, rdma, ["link"], prog="rdma")
    assert "link rocep59s0f0/1 state ACTIVE physical_state LINK_UP netdev enp59s0f0np0 \n" in out
    assert "netdev enp59s0f0v1" in out
    rc, out, _ = run(capsys, rdma, ["-j", "link", "show"], prog="rdma")
    assert json.loads(out)[0]["netdev"] == "enp59s0f0np0"
    rc, out, _ = run(capsys, rdma, ["dev"], prog="rdma")
    assert out.startswith("0: rocep59s0f0: node_type ca fw 28.39.1002 node_guid 0c42:a1ff:fe00:0100 ")


def test_modprobe_mlx5_ib_gates_rdma(agent, capsys, monkeypatch):
    monkeypatch.setattr(modprobe, "_real", lambda argv: pytest.fail(f"real modprobe called: {argv}"))
    rc, _, err = run(capsys, modprobe, ["-r", "ib_core"])
    assert rc == 1 and err == "modprobe: FATAL: Module ib_core is in use.\n"
    rc, _, _ = run(capsys, modprobe, ["-r", "rdma_ucm"])
    assert rc == 0 and "rdma_ucm" not in agent.kernel.modules and "rdma_cm" not in agent.kernel.modules
    rc, _, _ = run(capsys, modprobe, ["-r", "mlx5_ib"])
    assert rc == 0 and "mlx5_ib" not in agent.kernel.modules
    assert agent.kernel.rdma_devices() == {}
    assert not any(p.startswith("/class/infiniband/") for p in _tree_paths(agent))
    rc, out, err = run(capsys, rdma, [], prog="ibv_devinfo")
    assert rc == 255 and err == "No IB devices found\n"
    assert run(capsys, modprobe, ["-r", "mlx5_ib"]) == (0, "", "")      # kmod 30: not loaded is passed over
    rc, _, err = run(capsys, modprobe, ["-r", "--first-time", "mlx5_ib"])
    assert rc == 1 and err == "modprobe: FATAL: Module mlx5_ib is not in kernel.\n"
    rc, _, _ = run(capsys, modprobe, ["mlx5_ib"])
    assert rc == 0 and {"mlx5_ib", "mlx5_core", "ib_core", "ib_uverbs"} <= agent.kernel.modules
    assert all(p.bound for p in agent.kernel.pfs) and "rocep59s0f0" in agent.kernel.rdma_devices()
    assert "/module/mlx5_ib/initstate" in _tree_paths(agent)
    called = []
    monkeypatch.setattr(modprobe, "_real", lambda argv: called.append(argv) or 0)
    assert modprobe.main(["loop"]) == 0 and called == [["loop"]]


def _tree_paths(a):
    a.tree.refresh()
    return set(a.tree.entries)


# ----------------------------------------------------------------- grubby / nmcli
def test_grubby_edits_cmdline_and_grub_cfg(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "grub.cfg"
    cfg.write_text("menuentry 'Debian GNU/Linux' {\n\tlinux\t/boot/vmlinuz-6.1.0-28-amd64 root=UUID=x ro quiet\n"
                   "\tinitrd\t/boot/initrd.img-6.1.0-28-amd64\n}\n")
    monkeypatch.setattr(grubby, "GRUB_CFG", cfg)
    monkeypatch.setattr(grubby, "CMDLINE", tmp_path / "cmdline")
    assert grubby.main(["--update-kernel=ALL", "--args=intel_iommu=on iommu=pt"]) == 0
    assert boot.grub_cmdline_from_cfg(cfg.read_text()).endswith("root=UUID=x ro quiet intel_iommu=on iommu=pt")
    assert grubby.main(["--update-kernel=ALL", "--remove-args=quiet", "--args=iommu=off"]) == 0
    assert (tmp_path / "cmdline").read_text() == "root=UUID=x ro intel_iommu=on iommu=off\n"
    capsys.readouterr()
    assert grubby.main(["--info=ALL"]) == 0
    out = capsys.readouterr().out
    assert 'args="ro intel_iommu=on iommu=off"' in out and 'root="UUID=x"' in out
    assert grubby.main(["--update-kernel=/boot/vmlinuz-9", "--args=x"]) == 1


def test_nmcli_vf_unmanaged_by_udev_rule(agent, tmp_path, monkeypatch, capsys):
    enable_vfs(agent, 2)
    rules = tmp_path / "rules.d"
    rules.mkdir()
    (rules / "70-nm-unmanaged.rules").write_text(
        'SUBSYSTEM=="net", ACTION=="add|change|move", KERNELS=="0000:3b:00.1", ENV{NM_UNMANAGED}="1"\n')
    net = tmp_path / "net"
    (net / "lo").mkdir(parents=True)
    (net / "eth0").mkdir()
    monkeypatch.setattr(nmcli, "RULES_DIRS", (rules,))
    monkeypatch.setattr(nmcli, "SYS_NET", net)
    monkeypatch.setattr(nmcli.rows, "__defaults__", ((rules,), net))
    rc = nmcli.main(["-t", "-f", "DEVICE,TYPE,STATE", "device"])
    out = capsys.readouterr().out
    lines = dict(line.split(":", 1) for line in out.splitlines())
    assert rc == 0
    assert lines["enp59s0f0v0"] == "ethernet:unmanaged"
    assert lines["enp59s0f0v1"] == "ethernet:connected"
    assert lines["enp59s0f0np0"] == "ethernet:connected" and lines["lo"] == "loopback:unmanaged"


# ----------------------------------------------------------------- iproute2 dcb
def test_dcb_reads_parse_with_the_collections_parser_and_follow_mlx5(agent, capsys):
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import iproute_dcb
    from simlab.tools import dcb
    rc, out, _ = run(capsys, dcb, ["-N", "pfc", "show", "dev", PF])
    assert rc == 0 and out == "pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:off 7:off \n"
    rc, out, _ = run(capsys, dcb, ["-N", "app", "show", "dev", PF])
    assert (rc, out) == (0, "")                               # PCP trust: an empty APP table prints nothing
    assert iproute_dcb.qos_state(dcb.run(["-N", "pfc", "show", "dev", PF]), out)["trust"] == "pcp"
    rc, _, _ = run(capsys, dcb, ["pfc", "set", "dev", PF, "prio-pfc", "all:off", "3:on"])
    rc2, _, _ = run(capsys, dcb, ["app", "replace", "dev", PF, "dscp-prio", "26:3", "CS6:6"])
    assert (rc, rc2) == (0, 0)
    pf = agent.kernel.pfs[0]
    assert pf.pfc == [0, 0, 0, 1, 0, 0, 0, 0] and pf.trust == "dscp" and pf.app_dscp == {26, 48}
    rc, out, _ = run(capsys, dcb, ["app", "show", "dev", PF])
    assert out == "dscp-prio AF31:3 CS6:6 \n"                   # rt_dsfield names without -N
    q = iproute_dcb.qos_state(dcb.run(["-N", "pfc", "show", "dev", PF]), dcb.run(["-N", "app", "show", "dev", PF]))
    assert q["trust"] == "dscp" and q["pfc_priorities"] == [3] and q["dscp_to_prio"][26] == 3
    # mlx5's delapp: the DSCP maps to 0 again; the last entry gone is PCP trust again
    rc, _, err = run(capsys, dcb, ["app", "del", "dev", PF, "dscp-prio", "26:5"])
    assert (rc, err) == (1, "Attribute write: No such file or directory\n")
    run(capsys, dcb, ["app", "flush", "dev", PF, "dscp-prio"])
    assert pf.trust == "pcp" and pf.app_dscp == set() and pf.dscp2prio[26] == 0
    # mlnx_qos --trust dscp: the driver registers every DSCP (mlx5e_dcbnl_dscp_app INIT)
    agent.kernel.set_trust(pf, "dscp")
    assert len(iproute_dcb.parse_app(dcb.run(["-N", "app", "show", "dev", PF]))["dscp_prio"]) == 64


def test_dcb_errors_are_iproute2s(agent, capsys):
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import iproute_dcb
    from simlab.tools import dcb
    rc, _, err = run(capsys, dcb, ["apptrust", "show", "dev", PF])
    assert (rc, err) == (1, "Attribute not found: Success\n")  # mlx5 has no apptrust ops
    with pytest.raises(iproute_dcb.DcbUnsupported) as exc:
        iproute_dcb.parse_apptrust(err)
    assert exc.value.reason == "not-found"
    rc, _, err = run(capsys, dcb, ["pfc", "show", "dev", "nosuch0"])
    assert (rc, err) == (1, "Attribute read: No such device\n")
    enable_vfs(agent)
    rc, _, err = run(capsys, dcb, ["pfc", "show", "dev", hardware.nic_specs(agent.kernel.hw)[0].vf_netdev(0)])
    assert (rc, err) == (1, "Attribute read: Operation not supported\n")
    rc, _, err = run(capsys, dcb, ["app", "add", "dev", PF, "pcp-prio", "1:1"])
    assert (rc, err) == (1, "Attribute write: Invalid argument\n")   # mlx5 takes DSCP entries only
    rc, out, _ = run(capsys, dcb, ["ets", "show", "dev", PF])
    assert iproute_dcb.parse_ets(out)["prio_tc"] == [1, 0, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("driver,real", [
    ("inbox", "modinfo-mlx5_core-inbox-debian12-6.1.0-31.txt"),
    ("ofed", "modinfo-mlx5_core-mlnxofed-24.10-debian12.txt"),
])
def test_modinfo_twin_has_the_fields_of_the_real_output(tmp_path, monkeypatch, capsys, driver, real):
    from pathlib import Path
    from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import driver_stack
    from simlab.tools import modinfo
    monkeypatch.setattr(boot, "LAB", tmp_path)
    a = agent_mod.Agent(make_state(driver=driver))
    monkeypatch.setattr(agentclient, "request", lambda req, sock_path=None, timeout=30: a.handle(req))
    rc, out, _ = run(capsys, modinfo, ["mlx5_core"])
    mine = driver_stack.parse_modinfo(out, "mlx5_core")
    text = (Path(__file__).parent / "fixtures/driver_stack_real" / real).read_text().partition("# ---\n")[2]
    theirs = driver_stack.parse_modinfo(text, "mlx5_core")
    assert list(mine) == list(theirs)          # the same fields, in kmod's order (tests/unit/test_twin_kmod.py
    assert driver_stack.disk_stack(mine) == driver_stack.disk_stack(theirs)      # holds them line for line)
    sysfs_version = agent_mod.Tree(a.kernel).lookup("/module/mlx5_core/version")
    assert (sysfs_version is not None) == (driver == "ofed")
    rc, out, _ = run(capsys, modinfo, ["-s"], prog="ofed_info")
    assert driver_stack.parse_ofed_info(out)["name"] == "OFED-internal"


@pytest.mark.parametrize("real", ["pfc-manpage-eth0.txt", "pfc-hns3-eth0-on.txt"])
def test_dcb_twin_prints_pfc_in_the_shape_of_real_dcb(agent, capsys, real):
    """Word for word but the values: the twin's `dcb pfc show` has the lines,
    keywords and token layout of real published output (dcb_real), each
    line ending in the space dcb.c prints."""
    import re
    from pathlib import Path
    from simlab.tools import dcb
    text = (Path(__file__).parent / "fixtures/dcb_real" / real).read_text().partition("# ---\n")[2]
    rc, out, _ = run(capsys, dcb, ["pfc", "show", "dev", PF])

    def shape(t):
        return [re.sub(r"\d+", "N", re.sub(r"\b(on|off)\b", "B", line.strip())) for line in t.splitlines()]
    assert rc == 0 and shape(out) == shape(text)
    assert all(line.endswith(" ") for line in out.splitlines())


def test_the_wrappers_entry_point_runs_every_tool_on_the_standard_library_alone(tmp_path):
    """A wrapper starts the entry point with python3 -S -c (agent.ENTRY): no
    site, so a tool twin that imported anything outside the standard library
    and the twin's own code would fail in every node. Each tool's module
    imports that way, and the entry point takes the tool's name and its
    arguments as `python3 -m simlab.tools` does (an unknown tool: 127)."""
    import subprocess
    import sys
    from pathlib import Path
    from simlab.tools.__main__ import MODULES
    repo = str(Path(__file__).resolve().parents[2])
    env = {"PYTHONPATH": repo, "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    imports = "; ".join("import %s" % m for m in sorted(set(MODULES.values())))
    proc = subprocess.run([sys.executable, "-S", "-c", imports], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    wrapper = agent_mod.wrapper("mpirun")   # the others reach ENTRY through the fork server's client
    assert "python3 -S -c '%s' mpirun \"$@\"" % agent_mod.ENTRY in wrapper
    for argv in ([sys.executable, "-S", "-c", agent_mod.ENTRY, "no-such-tool", "x"],
                 [sys.executable, "-m", "simlab.tools", "no-such-tool", "x"]):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (127, "", "no-such-tool: not available in this twin node\n")


def test_ibv_devinfo_reads_a_port_as_strtol_does():
    """devinfo.c reads -i with strtol(optarg, NULL, 0): base 16 after 0x,
    8 after 0, the leading digits only, 0 when there are none (then the
    usage and exit status 1, as tests/vm holds against the real tool)."""
    from simlab.tools.cargs import strtol
    assert [strtol(x)[0] for x in ("1", "0x2", "010", "08", "12abc", "abc", "-3", " 7")] == [1, 2, 8, 0, 12, 0, -3, 7]


# ----------------------------------------------------------------- ip link
# What real iproute2 6.1 answers (the VM tier compares them live on an igb PF:
# tests/vm/test_vm_twin_faithful.py): exit status and stderr.
IP_REFUSALS = [
    (["vf", "1", "trust", "maybe"], 1, 'Error: argument of "trust" must be one of "off", "on", not "maybe"\n'),
    (["vf", "x", "trust", "on"], 255, 'Error: argument "x" is wrong: Invalid "vf" value\n\n'),
    (["vf", "1", "spoofchk"], 255, 'Command line is not complete. Try option "help"\n'),
    (["vf", "1", "qos", "3"], 255, 'Command line is not complete. Try option "help"\n'),
    (["vf", "7", "trust", "on"], 2, "RTNETLINK answers: Invalid argument\n"),
    (["vf", "1", "vlan", "5000"], 255, 'Error: argument "5000" is wrong: Invalid "vlan" value\n\n'),
    (["vf", "1", "vlan", "10", "qos", "9"], 2, "RTNETLINK answers: Invalid argument\n"),
    (["vf", "1", "vlan", "10", "proto", "802.1ad"], 2, "RTNETLINK answers: Protocol not supported\n"),
    (["vf", "1", "vlan", "10", "proto", "ipx"], 255,
     'Error: argument "ipx" is wrong: Invalid "vlan protocol" value - supported 802.1Q, 802.1ad\n\n'),
    (["vf", "1", "vlan", "10", "proto", "foo"], 255, 'Error: argument "foo" is wrong: protocol is invalid\n\n'),
    (["vf", "1", "mac", "02:zz:00:00:00:01"], 1, '"zz" is invalid lladdr.\n'),
    (["vf", "1", "mac", "02:11:22:33:44"], 1, "Invalid address length 5 - must be 6 bytes\n"),
    (["vf", "1", "mac", "1.2.3.4"], 1, "Invalid address length 4 - must be 6 bytes\n"),
    (["vf", "1", "mac", "01:00:5e:00:00:01"], 2, "RTNETLINK answers: Invalid argument\n"),
    (["vf", "1", "max_tx_rate", "x"], 255, 'Error: argument "x" is wrong: Invalid "max tx rate" value\n\n'),
    (["vf", "1", "query_rss", "on"], 2, "RTNETLINK answers: Operation not supported\n"),
    (["vf", "1", "mtu", "1500"], 255, 'Command line is not complete. Try option "help"\n'),
    (["mtu", "x"], 255, 'Error: argument "x" is wrong: Invalid "mtu" value\n\n'),
    (["vf", "1", "vlan", "18446744073709551616"], 255,
     'Error: argument "18446744073709551616" is wrong: Invalid "vlan" value\n\n'),
    (["vf", "1", "mac", "10.8"], 1, "Invalid address length 4 - must be 6 bytes\n"),
    (["vf", "1", "vlan", "10", "proto", "802.1ad", "vlan", "20"], 2, "RTNETLINK answers: Operation not supported\n"),
    (["vf", "9", "min_tx_rate", "5"], 1, "Cannot find VF 9\n"),
    (["vf", "1", "node_guid", "00:11:22:33:44:55:66:zz"], 255,
     'Error: argument "00:11:22:33:44:55:66:zz" is wrong: Invalid GUID format\n\n'),
    (["promisc", "on"], 2, 'ip: the simlab twin does not model "promisc" on its netdevs\n'),
    ([PF], 255, f'Error: either "dev" is duplicate, or "{PF}" is a garbage.\n'),
]


@pytest.mark.parametrize("words,rc,err", IP_REFUSALS, ids=[" ".join(w) for w, _, _ in IP_REFUSALS])
def test_ip_link_set_vf_refuses_as_iproute2_and_the_kernel_do(agent, capsys, words, rc, err):
    """ip/iplink.c iplink_parse_vf() (iproute2 6.1) refuses what it cannot
    read before anything is sent; the kernel refuses what mlx5 does not take
    (a multicast MAC, 802.1ad, qos above 7, query_rss); nothing of a refused
    VLAN call is applied."""
    pf = enable_vfs(agent)
    before = [vars(v).copy() for v in pf.vfs]
    assert run(capsys, ip, ["link", "set", "dev", PF, *words]) == (rc, "", err)
    assert [vars(v) for v in pf.vfs] == before


def test_ip_link_set_vf_reads_words_as_iproute2_does_and_applies_in_the_kernels_order(agent, capsys):
    """A keyword's prefix (``t`` trust, ``o`` off), numbers in C's bases
    (``rate 0x64``), the legacy ``rate`` overridden by max_tx_rate, and
    do_setvfinfo()'s order: the MAC is set before query_rss is refused."""
    pf = enable_vfs(agent)
    assert run(capsys, ip, ["link", "set", "dev", PF, "vf", "1", "t", "on", "spoofchk", "o", "rate", "0x64"]) == (0, "", "")
    assert (pf.vfs[1].trust, pf.vfs[1].spoofchk, pf.vfs[1].max_tx_rate) == (True, False, 100)
    assert run(capsys, ip, ["link", "set", PF, "vf", "1", "rate", "5", "max_tx_rate", "200"])[0] == 0
    assert pf.vfs[1].max_tx_rate == 200
    assert run(capsys, ip, ["link", "set", PF, "vf", "1", "min_tx_rate", "300"]) == (
        1, "", "Invalid min_tx_rate 300 - must be <= max_tx_rate 200\n")
    rc, _, err = run(capsys, ip, ["link", "set", PF, "vf", "0", "query_rss", "on", "mac", "02:00:00:00:00:aa"])
    assert (rc, err, pf.vfs[0].mac) == (2, "RTNETLINK answers: Operation not supported\n", "02:00:00:00:00:aa")
    assert run(capsys, ip, ["link", "set", PF, "vf", "0", "vlan", "0x10", "qos", "2", "proto", "0x8100"])[0] == 0
    assert (pf.vfs[0].vlan, pf.vfs[0].qos) == (16, 2)
    # the legacy rate keeps the VF's min_tx_rate, and rtnl_set_vf_rate() refuses a max below it
    assert run(capsys, ip, ["link", "set", PF, "vf", "0", "max_tx_rate", "0", "min_tx_rate", "50"])[0] == 0
    assert run(capsys, ip, ["link", "set", PF, "vf", "0", "rate", "10"]) == (2, "", "RTNETLINK answers: Invalid argument\n")
    assert (pf.vfs[0].max_tx_rate, pf.vfs[0].min_tx_rate) == (0, 50)


def test_ip_link_show_json_pretty_and_up_filter(agent, capsys):
    """-j, -j -p (any prefix of -json/-pretty, --json too) through
    iproute2's json_writer; ``up`` leaves a link that is down out; a second
    device name is iproute2's duplicate error."""
    enable_vfs(agent)
    rc, compact, _ = run(capsys, ip, ["-j", "link", "show", "dev", PF])
    rc2, pretty, _ = run(capsys, ip, ["-json", "-pr", "link", "show", PF])
    assert (rc, rc2) == (0, 0)
    data = json.loads(compact)
    assert json.loads(pretty) == data and pretty.startswith('[ {\n        "ifindex": ') and pretty.endswith("} ]\n")
    assert [v["vf"] for v in data[0]["vfinfo_list"]] == [0, 1]
    assert rdma_tools.parse_ip_json_vfinfo(pretty)[1]["vf"] == 1
    assert run(capsys, ip, ["--json", "link", "show", PF, "up"])[1] == compact
    assert run(capsys, ip, ["link", "set", PF, "down"])[0] == 0
    assert run(capsys, ip, ["link", "show", PF, "up"]) == (0, "", "")
    # iplink_get() opens the link's object before print_linkinfo() leaves it out
    assert run(capsys, ip, ["-j", "link", "show", PF, "up"]) == (0, "[{}]\n", "")
    assert run(capsys, ip, ["-j", "-p", "link", "show", PF, "up"]) == (0, "[ {} ]\n", "")
    assert run(capsys, ip, ["link", "show", PF, PF]) == (255, "", f'Error: either "dev" is duplicate, or "{PF}" is a garbage.\n')
    assert run(capsys, ip, ["link", "show", PF, "dev"]) == (255, "", 'Command line is not complete. Try option "help"\n')


def test_c_number_words_are_read_as_libc_reads_them():
    """get_integer/get_unsigned take the whole word (strtol/strtoul, base 0);
    sscanf("%x") takes a leading hex number."""
    assert [cargs.whole_int(x) for x in ("7", "0x10", "010", "-3", "08", "", "1x", "2147483648")] == \
        [7, 16, 8, -3, None, None, None, None]
    assert [cargs.whole_unsigned(x) for x in ("4294967295", "4294967296", "-1", "-0", " 5")] == \
        [4294967295, None, None, 0, 5]
    assert [cargs.scan_hex(x) for x in ("ff", "0x1f", "1g", "zz", "-1", " a")] == [255, 31, 1, None, -1, 10]


def test_dcb_pretty_json_is_iproute2s_writer_on_one_object(agent, capsys):
    """dcb opens no array (new_json_obj_plain): -j is one object, -j -p the
    same object in the writer's pretty layout."""
    from simlab.tools import dcb
    rc, compact, _ = run(capsys, dcb, ["-j", "pfc", "show", "dev", PF])
    rc2, pretty, _ = run(capsys, dcb, ["-j", "-p", "pfc", "show", "dev", PF])
    assert (rc, rc2) == (0, 0) and json.loads(pretty) == json.loads(compact)
    assert compact.startswith('{"pfc_cap":8,') and pretty.startswith('{\n    "pfc_cap": 8,\n') and pretty.endswith("\n}\n")
    assert '"prio_pfc": [ ' in pretty


@pytest.mark.parametrize("want", [{"vlan": 200, "qos": 3}, {"vlan": 100, "qos": 5}, {"vlan": 300}])
def test_the_sriov_modules_vlan_change_converges_in_one_pass(agent, capsys, want):
    """sriov_vf's plan (vf_changes, vf_settings_to_send, ip_args) sent to ip
    as iproute2 reads it: after one pass nothing differs, where a VLAN sent
    without its QoS would have reset the QoS to 0 and a QoS sent with vlan 0
    would have removed the VLAN; a QoS the intent is silent on is 0."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov

    def current():
        out = run(capsys, ip, ["-j", "link", "show", "dev", PF])[1]
        return {v["vf"]: v for v in rdma_tools.parse_ip_json_vfinfo(out)}[0]
    enable_vfs(agent)
    assert run(capsys, ip, ["link", "set", "dev", PF, "vf", "0", "vlan", "100", "qos", "3"])[0] == 0
    cur = current()
    delta = sriov.vf_changes(cur, want)
    args = sriov.ip_args(PF, 0, sriov.vf_settings_to_send(want, delta))
    assert run(capsys, ip, args) == (0, "", "")
    assert sriov.vf_changes(current(), want) == {}
    assert current()["qos"] == want.get("qos", 0)


def test_ip_options_and_the_kernels_u8_qos(agent, capsys):
    """ip.c stops reading options at ``--``; an option the twin does not
    print with is named rather than ignored; ndo_set_vf_vlan() takes the
    QoS as a u8, so 256 is 0."""
    pf = enable_vfs(agent)
    assert run(capsys, ip, ["--", "link", "show", PF])[1].startswith("2: " + PF)
    assert run(capsys, ip, ["-s", "link", "show", PF]) == (
        2, "", "ip: the simlab twin does not model -stats for its netdevs (it prints -j, -p, -br and -o)\n")
    assert run(capsys, ip, ["-d", "-j", "link", "set", PF, "up"])[0] == 2
    assert run(capsys, ip, ["link", "set", PF, "vf", "1", "vlan", "10", "qos", "256"]) == (0, "", "")
    assert (pf.vfs[1].vlan, pf.vfs[1].qos) == (10, 0)


def test_the_json_writer_leaves_single_quotes_as_they_are():
    """iproute2 6.1's jsonw_puts escapes tab, newline, CR, FF, BS, backslash
    and the double quote only (single quotes are not, since "json: do not
    escape single quotes")."""
    from simlab.tools import formats
    assert formats.iproute2_json([{"alias": "it's \"x\"\t\\"}]) == '[{"alias":"it\'s \\"x\\"\\t\\\\"}]'


# The container's own netdevs as the real ip lists them: lo and the VM node's
# management NIC from real iproute2 6.1 captures (tests/unit/fixtures/rdma_tools_real)
_REAL_LIST = "tests/unit/fixtures/rdma_tools_real/"


def _real_ip(tmp_path, monkeypatch):
    """A stand-in for the node container's real ip: its one link, lo, as
    the real captures have it, in the form the options ask for. With the
    file ``lo-down`` it answers as if lo were down (``{}`` under ``up``
    with -j, nothing in text); with ``order-lost`` its ``ip -j link show``
    lists no link. It records what it was asked."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[2] / _REAL_LIST
    first = lambda name, n: "".join((root / name).read_text().splitlines(keepends=True)[:n])
    lo = json.loads((root / "ip-j-p-link-show-up-debian12-iproute2-6.1-igb-2vf-pf-down.txt").read_text())[0]
    lo_brief = json.loads((root / "ip-j-br-link-show-debian12-iproute2-6.1-igb-2vf-all.txt").read_text())[0]
    (tmp_path / "text").write_text(first("ip-link-show-debian12-iproute2-6.1-igb-2vf-all.txt", 2))
    (tmp_path / "br").write_text(first("ip-br-link-show-debian12-iproute2-6.1-igb-2vf-all.txt", 1))
    (tmp_path / "o").write_text(first("ip-o-link-show-debian12-iproute2-6.1-igb-2vf-all.txt", 1))
    (tmp_path / "j").write_text(json.dumps([lo], separators=(",", ":")) + "\n")
    (tmp_path / "jbr").write_text(json.dumps([lo_brief], separators=(",", ":")) + "\n")
    script = tmp_path / "ip"
    script.write_text(f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
here = {str(tmp_path)!r}
open(here + "/asked", "a").write(" ".join(args) + "\\n")
if args == ["-j", "link", "show"] and os.path.exists(here + "/order-lost"):
    print("[]")
elif "up" in args and os.path.exists(here + "/lo-down"):
    print("[{{}}]" if "-j" in args else "", end="")
else:
    form = ("j" if "-j" in args else "") + ("br" if "-br" in args else "") + ("o" if "-o" in args else "")
    sys.stdout.write(open(here + "/" + (form or "text")).read())
""")
    script.chmod(0o755)
    monkeypatch.setattr(ip, "REAL_IP", (str(script),))
    return lo, lo_brief


def test_ip_link_brief_and_oneline_on_a_twin_netdev(agent, capsys):
    """``-br`` prints print_linkinfo_brief()'s line (and ``-j -br`` its four
    members) from the same netdev state as ``-j``; ``-o`` is the text of
    ``ip link show`` with its inner newlines as backslashes; ``up`` leaves
    a down PF out of both, inside ``[{}]`` with -j as iplink_get() does."""
    enable_vfs(agent)
    full = json.loads(run(capsys, ip, ["-j", "link", "show", "dev", PF])[1])[0]
    brief = {k: full[k] for k in ("ifname", "operstate", "address", "flags")}
    assert run(capsys, ip, ["-br", "link", "show", "dev", PF]) == (
        0, "%-16s %-14s %s <%s> \n" % (PF, "UP", full["address"], "BROADCAST,MULTICAST,UP,LOWER_UP"), "")
    assert json.loads(run(capsys, ip, ["-j", "-br", "link", "show", PF])[1]) == [brief]
    assert run(capsys, ip, ["-brief", "-json", "-p", "link", "show", PF])[1].startswith('[ {\n        "ifname": ')
    text = run(capsys, ip, ["link", "show", PF])[1]
    assert text.count("\n") == 4 and run(capsys, ip, ["-o", "link", "show", PF])[1] == \
        "\\".join(text.splitlines()) + "\n"
    assert run(capsys, ip, ["link", "set", PF, "down"])[0] == 0
    assert run(capsys, ip, ["-br", "link", "show", PF]) == (0, f"{PF:<16} DOWN           {full['address']} "
                                                               "<BROADCAST,MULTICAST> \n", "")
    assert run(capsys, ip, ["-br", "link", "show", PF, "up"]) == (0, "", "")
    assert run(capsys, ip, ["-j", "-br", "link", "show", PF, "up"]) == (0, "[{}]\n", "")


def test_a_vfs_link_follows_its_link_state_in_ip_sysfs_and_its_rdma_port(agent, capsys):
    """One place decides a VF netdev's link (the kernel's carrier()): under
    ``auto`` its PF's, ``enable`` up and ``disable`` down whatever the PF's
    (ip-link(8)); ip's flags, sysfs' operstate and carrier and the RDMA
    port's state in ``rdma link`` all read it. A netdev never up prints
    ``qdisc noop``; ifindexes are handed out as netdevs register."""
    pf = enable_vfs(agent)
    vf_dev = pf.spec.vf_netdev(0)

    def seen():
        link = json.loads(run(capsys, ip, ["-j", "link", "show", vf_dev])[1])[0]
        port = next(x for x in json.loads(run(capsys, rdma, ["-j", "link", "show"], prog="rdma")[1])
                    if x.get("netdev") == vf_dev)
        return (link["operstate"], "NO-CARRIER" in link["flags"], agent.tree.read(f"/class/net/{vf_dev}/operstate"),
                agent.tree.read(f"/class/net/{vf_dev}/carrier"), port["state"])

    assert json.loads(run(capsys, ip, ["-j", "link", "show", vf_dev])[1])[0]["qdisc"] == "noop"
    assert run(capsys, ip, ["link", "set", vf_dev, "up"])[0] == 0
    assert seen() == ("UP", False, b"up\n", b"1\n", "ACTIVE")
    assert json.loads(run(capsys, ip, ["-j", "link", "show", vf_dev])[1])[0]["qdisc"] == "mq"
    assert run(capsys, ip, ["link", "set", PF, "vf", "0", "state", "disable"])[0] == 0
    assert seen() == ("DOWN", True, b"down\n", b"0\n", "DOWN")
    assert run(capsys, ip, ["link", "set", PF, "vf", "0", "state", "enable"])[0] == 0
    assert run(capsys, ip, ["link", "set", PF, "down"])[0] == 0
    assert seen() == ("UP", False, b"up\n", b"1\n", "ACTIVE")
    # a netdev down: net-sysfs refuses its carrier, speed and duplex; held up by
    # enable over a PF without its link, the VF has no speed (mlx5e's get_speed_duplex())
    for attr in ("carrier", "speed", "duplex"):
        with pytest.raises(KernelError) as err:
            agent.tree.read(f"/class/net/{PF}/{attr}")
        assert err.value.errno == errno.EINVAL
    speed = lambda dev: (agent.tree.read(f"/class/net/{dev}/speed"), agent.tree.read(f"/class/net/{dev}/duplex"))
    assert speed(vf_dev) == (b"-1\n", b"unknown\n")
    assert run(capsys, ip, ["link", "set", PF, "vf", "0", "state", "auto"])[0] == 0
    assert seen() == ("DOWN", True, b"down\n", b"0\n", "DOWN")
    assert run(capsys, ip, ["link", "set", PF, "up"])[0] == 0
    assert seen() == ("UP", False, b"up\n", b"1\n", "ACTIVE") and speed(vf_dev) == (b"400000\n", b"full\n")
    # the VF's netdev down: its RDMA port goes down with it (mlx5_query_port_roce())
    assert run(capsys, ip, ["link", "set", vf_dev, "down"])[0] == 0
    link = json.loads(run(capsys, ip, ["-j", "link", "show", vf_dev])[1])[0]
    port = next(x for x in json.loads(run(capsys, rdma, ["-j", "link", "show"], prog="rdma")[1])
                if x.get("netdev") == vf_dev)
    assert (link["operstate"], link["flags"], port["state"], port["physical_state"]) == \
        ("DOWN", ["BROADCAST", "MULTICAST"], "DOWN", "DISABLED")
    vf_rdma = port["ifname"].split("/")[0]
    assert agent.tree.read(f"/class/infiniband/{vf_rdma}/ports/1/state") == b"1: DOWN\n"
    assert agent.tree.read(f"/class/infiniband/{vf_rdma}/ports/1/phys_state") == b"3: Disabled\n"
    with pytest.raises(KernelError):
        agent.tree.read(f"/class/net/{vf_dev}/carrier")
    assert run(capsys, ip, ["link", "set", PF, "down"])[0] == 0
    k = agent.kernel      # lo is 1, the two PFs 2 and 3, then the VFs as they came
    assert [k.ifindex(pf), k.ifindex(k.pfs[1]), k.ifindex(pf, pf.vfs[0]), k.ifindex(pf, pf.vfs[1])] == [2, 3, 4, 5]
    assert json.loads(run(capsys, ip, ["-j", "link", "show", vf_dev])[1])[0]["ifindex"] == 4
    assert agent.tree.read(f"/class/net/{vf_dev}/ifindex") == b"4\n"
    # bound again: a new netdev, with the next number, down and never opened
    k.unbind(pf.vfs[0].bdf)
    k.bind(pf.vfs[0].bdf)
    pf.vfs[0].probed_at = 0
    again = json.loads(run(capsys, ip, ["-j", "link", "show", vf_dev])[1])[0]
    assert (again["ifindex"], again["qdisc"], "UP" in again["flags"]) == (6, "noop", False)
    k.write_numvfs(pf, b"0\n")
    enable_vfs(agent)     # made again: new netdevs, new numbers
    assert [k.ifindex(pf, vf) for vf in pf.vfs] == [7, 8]


def test_ip_link_list_is_the_containers_and_the_twins_in_the_kernels_dump_order(agent, tmp_path, monkeypatch, capsys):
    """``ip link show`` without a device: the container's lo from the real
    ip and every twin netdev as ``ip link show dev`` prints it, together in
    a 6.1 kernel's dump order: hash buckets by ifindex & 255, the newest
    (the higher ifindex) first within one. Once VFs were made 256 times
    over, VF 256 comes first, VF 257 before lo (1), VF 258 before the first
    PF (2). -j and -j -p write one array of both; ``up`` leaves ``{}`` for
    a link that is down with -j (the real ip's ``{}`` kept in lo's place)
    and nothing in text; when the real ip's order cannot be read, a -j
    object still goes by the ifindex it holds and -br lines come first; an
    option the twin does not print with is refused as it is for one twin
    netdev."""
    lo, lo_brief = _real_ip(tmp_path, monkeypatch)
    k = agent.kernel
    pf0, pf1 = k.pfs
    for _ in range(15):
        k.write_numvfs(pf1, b"16\n")
        k.write_numvfs(pf1, b"0\n")
    enable_vfs(agent, 16, pf_index=1)
    vf = [pf1.spec.vf_netdev(i) for i in range(16)]
    assert [k.ifindex(pf0), k.ifindex(pf1)] + [k.ifindex(pf1, v) for v in pf1.vfs] == [2, 3, *range(244, 260)]
    order = [vf[12], vf[13], None, vf[14], pf0.netdev, vf[15], pf1.netdev, *vf[:12]]   # None: lo
    real = {"": (tmp_path / "text").read_text(), "-br": (tmp_path / "br").read_text(), "-o": (tmp_path / "o").read_text()}

    def each(opt, up=()):
        return "".join(real[opt] if n is None else run(capsys, ip, [*filter(None, [opt]), "link", "show", n, *up])[1]
                       for n in order)

    rc, out, err = run(capsys, ip, ["link", "show"])
    assert (rc, err) == (0, "") and out == each("")
    assert out.startswith("256: " + vf[12])
    assert run(capsys, ip, ["link"])[1] == out
    assert run(capsys, ip, ["-br", "link"])[1] == each("-br")
    assert run(capsys, ip, ["-o", "link", "show"])[1] == each("-o")
    listed = json.loads(run(capsys, ip, ["-j", "link", "show"])[1])
    assert listed == [lo if n is None else json.loads(run(capsys, ip, ["-j", "link", "show", n])[1])[0] for n in order]
    pretty = run(capsys, ip, ["-j", "-p", "link", "show"])[1]
    assert json.loads(pretty) == listed and pretty.startswith('[ {\n        "ifindex": 256,')
    assert "-p" not in (tmp_path / "asked").read_text().split()     # the real ip's part is written again
    assert json.loads(run(capsys, ip, ["-j", "-br", "link", "show"])[1]) == \
        [lo_brief if n is None else json.loads(run(capsys, ip, ["-j", "-br", "link", "show", n])[1])[0] for n in order]
    # up: the VFs' netdevs are down as the VF driver leaves them; a PF set down; lo down in the real part
    for n in (vf[13], vf[15]):
        assert run(capsys, ip, ["link", "set", n, "up"])[0] == 0
    assert run(capsys, ip, ["link", "set", pf0.netdev, "down"])[0] == 0
    (tmp_path / "lo-down").write_text("")
    assert [x.get("ifname") for x in json.loads(run(capsys, ip, ["-j", "link", "show", "up"])[1])] == \
        [None, vf[13], None, None, None, vf[15], pf1.netdev] + [None] * 12
    # real iproute2 6.1 with its PF down writes the same empty object in the PF's place
    from pathlib import Path
    real_up = (Path(__file__).resolve().parents[2] / _REAL_LIST /
               "ip-j-p-link-show-up-debian12-iproute2-6.1-igb-2vf-pf-down.txt").read_text()
    assert [x.get("ifname") for x in json.loads(real_up)] == ["lo", "enp0s3", None, "enp1s0v0", "enp1s0v1"]
    twin_up = run(capsys, ip, ["-j", "-p", "link", "show", "up"])[1]
    between = re.compile(r"\n    \},(\{\},)+\{\n")       # objects left empty between two links
    assert len(between.findall(real_up)) == 1 and twin_up.startswith("[ {},{\n") and between.search(twin_up)
    assert run(capsys, ip, ["link", "show", "up"])[1] == "".join(
        run(capsys, ip, ["link", "show", n])[1] for n in (vf[13], vf[15], pf1.netdev))
    (tmp_path / "lo-down").unlink()
    (tmp_path / "order-lost").write_text("")
    # a JSON object names its ifindex and keeps its place; a -br line, which
    # does not, goes first
    assert [x.get("ifname") for x in json.loads(run(capsys, ip, ["-j", "link", "show", "up"])[1])][:3] == \
        [None, vf[13], "lo"]
    assert run(capsys, ip, ["-br", "link", "show"])[1].startswith(real["-br"])
    assert run(capsys, ip, ["-s", "link"]) == (
        2, "", "ip: the simlab twin does not model -stats for its netdevs (it prints -j, -p, -br and -o)\n")
    (tmp_path / "order-lost").unlink()
    # what every twin netdev passes, and what changes nothing in a link list
    whole = run(capsys, ip, ["link", "show"])[1]
    for words in (["-4", "link"], ["-0", "-h", "link", "show"], ["link", "show", "nomaster"],
                  ["link", "show", "group", "default"], ["link", "list", "group", "0", "nomaster"]):
        assert run(capsys, ip, words) == (0, whole, ""), words
    # what no twin netdev passes goes to the real ip whole (here a stand-in for its exec)
    monkeypatch.setattr(ip, "_real", lambda argv: print("real ip:", *argv) or 0)
    assert run(capsys, ip, ["link", "show", "group", "5"]) == (0, "real ip: link show group 5\n", "")
    assert run(capsys, ip, ["link", "show", "master", "br0"]) == (0, "real ip: link show master br0\n", "")
    assert run(capsys, ip, ["link", "show", "nomaster", "dev", pf1.netdev])[1].startswith("real ip:")

    def unreachable(req, sock_path=None, timeout=30):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(agentclient, "request", unreachable)
    assert run(capsys, ip, ["link", "show"]) == (0, "real ip: link show\n", "")    # the real ip's, nothing said


def _gid_ips(agent, dev):
    """The IPv4 addresses of a netdev's RoCE v2 GID entries, by index, from the twin's sysfs."""
    k = agent.kernel
    pf, vf = k.netdevs()[dev]
    name = k.rdma_name(pf, vf)
    out = {}
    for i in range(255):
        try:
            raw = agent.tree.read(f"/class/infiniband/{name}/ports/1/gids/{i}")
        except OSError:
            break
        if raw.startswith(b"0000:0000:0000:0000:0000:ffff:"):
            gid = agent.tree.read(f"/class/infiniband/{name}/ports/1/gids/{i}").decode().strip()
            if agent.tree.read(f"/class/infiniband/{name}/ports/1/gid_attrs/types/{i}") == b"RoCE v2\n":
                out[i] = ".".join(str(int(h[j:j + 2], 16)) for h in gid.split(":")[6:] for j in (0, 2))
    return out


def test_ip_addr_shows_the_provisioned_address_and_adds_and_deletes_as_the_kernel_does(agent, capsys):
    """A PF holds its provisioned RoCE address (NetworkManager's: noprefixroute,
    a /24 with its broadcast), in every form of ``ip addr show``; ``add``
    puts an address inside another's subnet after the primaries as its
    secondary, a loopback one first (scope host); deleting a primary takes
    its secondaries (promote_secondaries 0); the kernel's refusals are
    RTNETLINK's. The GID table's IPv4 entries follow: the first free pair,
    freed again on delete, so perftest and NCCL find the address."""
    pf = enable_vfs(agent)
    own = pf.spec.ipv4
    net = own.rsplit(".", 1)[0]
    rc, text, err = run(capsys, ip, ["addr", "show", "dev", PF])
    assert (rc, err) == (0, "") and text.splitlines()[2:] == [
        f"    inet {own}/24 brd {net}.255 scope global noprefixroute {PF}",
        "       valid_lft forever preferred_lft forever"]
    assert "mode DEFAULT" not in text and "vf 0" not in text
    assert run(capsys, ip, ["-br", "addr", "show", PF])[1] == f"{PF:<16} UP             {own}/24 \n"
    obj = json.loads(run(capsys, ip, ["-j", "addr", "show", "dev", PF])[1])[0]
    assert "linkmode" not in obj and "vfinfo_list" not in obj and obj["addr_info"][0]["noprefixroute"] is True
    assert [set(o) for o in json.loads(run(capsys, ip, ["-4", "-j", "addr", "show", "dev", PF])[1])] == \
        [set(obj) - {"link_type", "address", "broadcast"}]
    assert run(capsys, ip, ["-6", "addr", "show", "dev", PF]) == (0, "", "")
    assert run(capsys, ip, ["-6", "-j", "addr", "show", "dev", PF]) == (0, "[]\n", "")
    assert _gid_ips(agent, PF) == {3: own}
    assert run(capsys, ip, ["addr", "add", f"{net}.77/24", "dev", PF]) == (0, "", "")
    assert run(capsys, ip, ["addr", "add", f"{net}.77/24", "dev", PF]) == (2, "", "RTNETLINK answers: File exists\n")
    assert run(capsys, ip, ["a", "add", "10.77.0.5/24", "brd", "+", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "add", "10.77.0.6/24", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "add", "127.0.0.9/8", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "add", "local", "10.81.0.1", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "add", "10.79.0.4/24", "brd", "-", "dev", PF])[0] == 0
    lines = [ln for ln in run(capsys, ip, ["addr", "show", PF])[1].splitlines() if ln.startswith("    inet ")]
    assert lines == [f"    inet 127.0.0.9/8 scope host {PF}",
                     f"    inet {own}/24 brd {net}.255 scope global noprefixroute {PF}",
                     f"    inet 10.77.0.5/24 brd 10.77.0.255 scope global {PF}",
                     f"    inet 10.81.0.1/32 scope global {PF}",
                     f"    inet 10.79.0.4/24 brd 10.79.0.0 scope global {PF}",
                     f"    inet {net}.77/24 scope global secondary {PF}",
                     f"    inet 10.77.0.6/24 scope global secondary {PF}"]
    assert run(capsys, ip, ["-o", "addr", "show", PF])[1].splitlines()[0] == \
        f"{pf.ifindex}: {PF}    inet 127.0.0.9/8 scope host {PF}\\       valid_lft forever preferred_lft forever"
    assert sorted(_gid_ips(agent, PF).values()) == sorted([own, f"{net}.77", "10.77.0.5", "10.77.0.6", "127.0.0.9",
                                                            "10.81.0.1", "10.79.0.4"])
    # past the first 16 entries the table holds every address's pair
    assert run(capsys, ip, ["addr", "add", "10.82.0.1/24", "dev", PF])[0] == 0
    assert _gid_ips(agent, PF)[17] == "10.82.0.1"
    assert run(capsys, ip, ["addr", "del", "10.82.0.1/24", "dev", PF])[0] == 0
    # a primary takes its secondary; the wildcard deletion warns; the GIDs go with them
    assert run(capsys, ip, ["addr", "del", "10.77.0.5/24", "dev", PF]) == (0, "", "")
    assert run(capsys, ip, ["addr", "del", "10.77.0.6/24", "dev", PF]) == \
        (2, "", "RTNETLINK answers: Cannot assign requested address\n")
    rc, _, err = run(capsys, ip, ["addr", "del", "10.81.0.1", "dev", PF])
    assert rc == 0 and err.startswith("Warning: Executing wildcard deletion") and "(10.81.0.1/32)" in err
    for gone in ("127.0.0.9/8", "10.79.0.4/24", f"{net}.77/24"):
        assert run(capsys, ip, ["addr", "delete", gone, "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "show", "dev", PF])[1] == text
    assert _gid_ips(agent, PF) == {3: own}
    # a GID freed inside the table is reused first
    assert run(capsys, ip, ["addr", "add", "10.1.0.1/24", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "add", "10.2.0.1/24", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "del", "10.1.0.1/24", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "add", "10.3.0.1/24", "dev", PF])[0] == 0
    assert _gid_ips(agent, PF) == {3: own, 5: "10.3.0.1", 7: "10.2.0.1"}
    # one IP with two prefixes: deleting one takes the IP's GID (roce_gid_mgmt's GID_DEL), the other stays
    assert run(capsys, ip, ["addr", "add", "10.2.0.1/16", "dev", PF])[0] == 0
    assert run(capsys, ip, ["addr", "del", "10.2.0.1/16", "dev", PF])[0] == 0
    assert "inet 10.2.0.1/24 " in run(capsys, ip, ["addr", "show", PF])[1]
    assert _gid_ips(agent, PF) == {3: own, 5: "10.3.0.1"}
    # the last dev word is the netdev (ipaddr_modify())
    assert run(capsys, ip, ["addr", "add", "10.4.0.1/24", "dev", "lo", "dev", PF])[0] == 0
    assert "inet 10.4.0.1/24 " in run(capsys, ip, ["addr", "show", PF])[1]
    assert run(capsys, ip, ["addr", "del", "10.4.0.1/24", "dev", "lo", "dev", PF])[0] == 0
    # IPv6: the PF's profile disables it; a VF's is not modelled
    assert run(capsys, ip, ["addr", "add", "2001:db8::5/64", "dev", PF]) == \
        (2, "", "RTNETLINK answers: Permission denied\n")
    assert run(capsys, ip, ["addr", "del", "2001:db8::5/64", "dev", PF]) == \
        (2, "", "RTNETLINK answers: Cannot assign requested address\n")
    vf_dev = pf.spec.vf_netdev(0)
    assert run(capsys, ip, ["addr", "add", "2001:db8::5/64", "dev", vf_dev])[0] == 2
    assert run(capsys, ip, ["addr", "add", "dev", PF]) == (2, "", "RTNETLINK answers: Operation not supported\n")
    for words in (["10.9.9.9/24", "dev", PF, "label", "x"], ["10.9.9.9/24", "scope", "link", "dev", PF],
                  ["0x0a.1.1.1/24", "dev", PF], ["10.8/16", "dev", PF]):
        rc, _, err = run(capsys, ip, ["addr", "add", *words])
        assert rc == 2 and err.startswith("ip: the simlab twin"), words
    assert run(capsys, ip, ["addr", "flush", "dev", PF])[0] == 2
    assert run(capsys, ip, ["addr", "show", "dev", PF, "scope", "global"])[0] == 2
    assert run(capsys, ip, ["-s", "addr", "show", "dev", PF])[0] == 2
    assert run(capsys, ip, ["-0", "addr", "show", "dev", PF])[0] == 2
    # -f inet is -4; the last family option given wins, as in ip/ip.c
    assert run(capsys, ip, ["-f", "inet", "addr", "show", PF]) == run(capsys, ip, ["-4", "addr", "show", PF])
    assert run(capsys, ip, ["-4", "-family", "inet6", "addr", "show", PF]) == (0, "", "")
    # a zero broadcast is left out (inet_fill_ifaddr()); 0.0.0.0 itself is dropped with success
    assert run(capsys, ip, ["addr", "add", "10.5.0.1/24", "brd", "0.0.0.0", "dev", PF])[0] == 0
    assert f"    inet 10.5.0.1/24 scope global {PF}" in run(capsys, ip, ["addr", "show", PF])[1]
    assert run(capsys, ip, ["addr", "add", "0.0.0.0/24", "dev", PF]) == (0, "", "")
    assert "0.0.0.0" not in run(capsys, ip, ["addr", "show", PF])[1]
    # the address RoCE uses is the first global one: a loopback address first in the list is not it
    assert run(capsys, ip, ["addr", "add", "127.0.0.9/8", "dev", PF])[0] == 0
    assert agent.handle({"op": "summary"})["pfs"][0]["ipv4"] == own


def test_ip_addr_on_a_vf_and_the_up_filter(agent, capsys):
    """A VF's netdev starts with no address; one added shows under -o, -br
    and -4; with the VF down, ``up`` leaves it out as iproute2 does: ``{}``
    in -j, ``{"addr_info":[]}`` in -o -j (no link is printed, so the
    addresses alone are left out), nothing in text. A VF bound again is a
    new netdev, without the address. Its GIDs follow as a PF's do."""
    pf = enable_vfs(agent)
    vf_dev = pf.spec.vf_netdev(0)
    index = pf.vfs[0].ifindex
    assert json.loads(run(capsys, ip, ["-j", "addr", "show", vf_dev])[1])[0]["addr_info"] == []
    assert run(capsys, ip, ["-o", "addr", "show", vf_dev]) == (0, "", "")
    assert run(capsys, ip, ["-4", "addr", "show", vf_dev]) == (0, "", "")
    assert run(capsys, ip, ["addr", "add", "10.90.0.9/24", "dev", vf_dev]) == (0, "", "")
    assert run(capsys, ip, ["-o", "addr", "show", vf_dev])[1] == (
        f"{index}: {vf_dev}    inet 10.90.0.9/24 scope global {vf_dev}\\"
        "       valid_lft forever preferred_lft forever\n")
    assert run(capsys, ip, ["-4", "addr", "show", "dev", vf_dev])[1].splitlines()[1] == \
        f"    inet 10.90.0.9/24 scope global {vf_dev}"
    assert _gid_ips(agent, vf_dev) == {3: "10.90.0.9"}
    assert run(capsys, ip, ["-j", "addr", "show", vf_dev, "up"]) == (0, "[{}]\n", "")
    assert run(capsys, ip, ["-o", "-j", "addr", "show", vf_dev, "up"]) == (0, '[{"addr_info":[]}]\n', "")
    assert run(capsys, ip, ["-br", "addr", "show", vf_dev, "up"]) == (0, "", "")
    assert run(capsys, ip, ["addr", "show", vf_dev, "up"]) == (0, "", "")
    assert json.loads(run(capsys, ip, ["-j", "-br", "addr", "show", vf_dev])[1]) == [
        {"ifname": vf_dev, "operstate": "DOWN", "addr_info": [{"local": "10.90.0.9", "prefixlen": 24}]}]
    k = agent.kernel
    k.unbind(pf.vfs[0].bdf)
    k.bind(pf.vfs[0].bdf)
    pf.vfs[0].probed_at = 0
    assert json.loads(run(capsys, ip, ["-j", "addr", "show", vf_dev])[1])[0]["addr_info"] == []
    assert _gid_ips(agent, vf_dev) == {}


def test_ip_addr_of_the_containers_own_link_goes_to_the_real_ip(agent, tmp_path, monkeypatch, capsys):
    """On a node with twin netdevs, ``ip addr show`` of lo, with a filter
    or a family option the twin does not model for its own, is the real
    ip's answer."""
    enable_vfs(agent)
    handed = []
    monkeypatch.setattr(ip, "_real", lambda argv: handed.append(argv) or 0)    # not exec'd in the test
    for argv in (["addr", "show", "dev", "lo", "scope", "host"], ["-f", "inet", "addr", "show", "dev", "lo"],
                 ["-0", "addr", "show", "lo"]):
        assert run(capsys, ip, argv) == (0, "", "") and handed[-1] == argv, argv
    assert run(capsys, ip, ["addr", "show", "dev", PF, "scope", "host"])[0] == 2 and len(handed) == 3


def test_ip_addr_list_is_the_containers_and_the_twins(agent, tmp_path, monkeypatch, capsys):
    """``ip addr`` without a device: the real ip's links (lo) and each twin
    netdev as ``ip addr show dev`` prints it, in the dump order; -4 leaves
    out the netdevs without an IPv4 address, -6 all of the twin's."""
    _real_ip(tmp_path, monkeypatch)
    pf = enable_vfs(agent)
    text = run(capsys, ip, ["addr"])[1]
    assert text.startswith("1: lo: ") and run(capsys, ip, ["addr", "show", PF])[1] in text
    names = [link.get("ifname") for link in json.loads(run(capsys, ip, ["-j", "addr", "show"])[1])]
    assert names == ["lo", PF, agent.kernel.pfs[1].netdev, pf.spec.vf_netdev(0), pf.spec.vf_netdev(1)]
    four = run(capsys, ip, ["-4", "addr"])[1]
    assert run(capsys, ip, ["-4", "addr", "show", PF])[1] in four and pf.spec.vf_netdev(0) not in four
    assert PF not in run(capsys, ip, ["-6", "addr"])[1]
