"""Layer 8 through upstream tools (roce_qos' qos_tool dcb): on a ConnectX PF of
the inbox mlx5 driver with no mlnx-tools, the host QoS is read with iproute2's
dcb and the RDMA-CM configfs, converged with dcb commands and configfs
writes, and a second run changes nothing. The stand-in answers dcb as
iproute2 prints it (dcb/dcb_pfc.c, dcb_app.c: a space after every token) and
as the mlx5 driver behaves (drivers/net/ethernet/mellanox/mlx5/core/
en_dcbnl.c: DSCP trust while the APP table holds DSCP entries, replace
instead of duplicate, no apptrust); tests/unit/fixtures/dcb_real holds the
published outputs the parser is held to."""

import os

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
from real_sysfs import RealSysfs

pytestmark = pytest.mark.layers(8)

PF = "enp59s0f0np0"
DEV = "mlx5_0"
INTENT = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp", "ecn": True,
          "host_mtu": 9000}


class Mlx5Dcb(object):
    """An AnsibleModule on an inbox-mlx5 host: dcb and ip, no mlnx-tools."""
    check_mode = False
    _diff = True

    def __init__(self, sysfs, tools=("dcb", "ip")):
        self.sysfs, self.tools, self.ran, self.warned = sysfs, tools, [], []
        self.pfc = [False] * 8
        self.app = {}           # dscp -> prio; empty: PCP trust

    def get_bin_path(self, tool, required=False, opt_dirs=None):
        return "/usr/sbin/" + tool if tool in self.tools else None

    def warn(self, msg):
        self.warned.append(msg)

    def run_command(self, argv, **kw):
        args = [os.path.basename(argv[0])] + list(argv[1:])
        self.ran.append(" ".join(args))
        if args[0] == "ip":
            assert args[1:5] == ["link", "set", "dev", PF] and args[5] == "mtu"
            with open(os.path.join(self.sysfs, "class/net", PF, "mtu"), "w") as fh:
                fh.write(args[6] + "\n")
            return 0, "", ""
        assert args[0] == "dcb", args
        if args[1] == "-N":
            args = args[:1] + args[2:]
        obj, verb, dev = args[1], args[2], args[4]
        assert dev == PF and args[3] == "dev", args
        if (obj, verb) == ("pfc", "show"):
            return 0, ("pfc-cap 8 macsec-bypass off delay 7 \nprio-pfc "
                       + "".join("%d:%s " % (i, "on" if v else "off") for i, v in enumerate(self.pfc)) + "\n"), ""
        if (obj, verb) == ("pfc", "set"):
            assert args[5] == "prio-pfc"
            for tok in args[6:]:
                i, v = tok.split(":")
                self.pfc[int(i)] = v == "on"
            return 0, "", ""
        if (obj, verb) == ("app", "show"):
            if not self.app:
                return 0, "", ""
            return 0, "dscp-prio " + "".join("%d:%d " % (d, p) for d, p in sorted(self.app.items())) + "\n", ""
        if (obj, verb) == ("app", "replace"):
            assert args[5] == "dscp-prio"
            for tok in args[6:]:
                d, p = tok.split(":")
                self.app[int(d)] = int(p)
            return 0, "", ""
        if (obj, verb) == ("app", "flush"):
            self.app = {}
            return 0, "", ""
        raise AssertionError("unexpected %s" % args)


@pytest.fixture
def host(tmp_path):
    t = RealSysfs(tmp_path / "sys")
    t.sriov_pf("0000:3b:00.0", PF, vendor="15b3", device="1021", vf_device="101e", totalvfs=16,
               driver="mlx5_core", vf_driver="mlx5_core", bridge="0000:00:02.2", rdma=DEV)
    port = os.path.join(t.root, "kernel/config/rdma_cm", DEV, "ports", "1")
    os.makedirs(port)
    # the kernel's defaults; a write replaces the value (a stand-in file keeps what a shorter write leaves)
    for name, value in (("default_roce_mode", "RoCE v2\n"), ("default_roce_tos", "0\n")):
        with open(os.path.join(port, name), "w") as fh:
            fh.write(value)
    return t


def params(t, state="merged", **kw):
    p = {"node": "node01", "config": INTENT, "state": state, "sysfs_root": t.root, "pfs": [{"name": PF}],
         "rdma_port": 1, "firmware_query": False, "qos_tool": "auto"}
    p.update(kw)
    return p


def configfs(t, name):
    with open(os.path.join(t.root, "kernel/config/rdma_cm", DEV, "ports/1", name)) as fh:
        return fh.read().strip()


def test_auto_picks_dcb_without_mlnx_tools_and_converges_then_changes_nothing(host):
    module = Mlx5Dcb(host.root)
    v1 = dict(INTENT, roce_mode=1)
    got = roce_qos_host.online(module, params(host, config=v1))
    assert got["qos_tool"] == "dcb" and got["pfs"][0]["qos_tool"] == "dcb"
    assert got["before"][PF]["trust"] == "pcp" and got["before"][PF]["pfc_priorities"] == []
    # in PCP trust the DSCP map counts as the firmware default, where 26 and 48 already go to 3 and 6
    assert got["drift"] == [
        PF + " trust pcp vs intent dscp", PF + " PFC {} vs intent {3}",
        PF + " RDMA-CM default RoCE mode RoCE v2 vs intent IB/RoCE v1", PF + " RDMA-CM default TOS 0 vs intent 106",
        PF + " MTU 1500 vs intent 9000"]
    cfg = os.path.join(host.root, "kernel/config/rdma_cm", DEV)
    assert got["commands"] == [
        "dcb pfc set dev %s prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off" % PF,
        "dcb app replace dev %s dscp-prio 26:3 48:6" % PF,
        "mkdir -p " + cfg,
        "echo 'IB/RoCE v1' > %s/ports/1/default_roce_mode" % cfg,
        "echo 106 > %s/ports/1/default_roce_tos" % cfg,
        "ip link set dev %s mtu 9000" % PF]
    assert got["changed"] and module.app == {26: 3, 48: 6} and module.pfc[3]
    assert (configfs(host, "default_roce_mode"), configfs(host, "default_roce_tos")) == ("IB/RoCE v1", "106")
    after = got["after"][PF]
    assert (after["trust"], after["pfc_priorities"], after["dscp_map"]["26"], after["dscp_map"]["48"]) == \
        ("dscp", [3], 3, 6)
    # the DSCPs the table lacks keep the firmware default (dscp >> 3): no drift, no command
    assert (after["roce_mode"], after["roce_tos"], after["mtu"]) == ("IB/RoCE v1", 106, 9000)
    assert "mlnx_qos" not in " ".join(module.ran)
    again = roce_qos_host.online(module, params(host, config=v1))
    assert (again["changed"], again["commands"], again["drift"]) == (False, [], [])


def test_the_boot_lines_are_the_same_commands_on_shell_words(host):
    got = roce_qos_host.online(Mlx5Dcb(host.root), params(host, state="gathered"))
    lines = got["pfs"][0]["boot_lines"]
    assert lines == [
        'run dcb pfc set dev "$PF" prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off',
        'run dcb app replace dev "$PF" dscp-prio 26:3 48:6',
        'run mkdir -p "$SYSFS/kernel/config/rdma_cm/$DEV"',
        'put "$SYSFS/kernel/config/rdma_cm/$DEV/ports/1/default_roce_mode" "RoCE v2"',
        'put "$SYSFS/kernel/config/rdma_cm/$DEV/ports/1/default_roce_tos" 106',
        'run ip link set dev "$PF" mtu 9000']
    assert lines == Q.boot_lines(Q.normalise_intent(INTENT), False, tool="dcb")


def test_check_mode_predicts_and_touches_nothing(host):
    module = Mlx5Dcb(host.root)
    module.check_mode = True
    got = roce_qos_host.online(module, params(host))
    assert got["changed"] and got["after"][PF]["trust"] == "dscp"
    assert [c for c in module.ran if " set " in c or " replace " in c or c.startswith("ip ")] == []
    assert configfs(host, "default_roce_tos") == "0" and module.app == {}


def test_pcp_trust_flushes_the_dscp_entries(host):
    module = Mlx5Dcb(host.root)
    module.app = {26: 3, 48: 6}
    intent = dict(INTENT, trust="pcp")
    got = roce_qos_host.online(module, params(host, config=intent))
    assert "dcb app flush dev %s dscp-prio" % PF in got["commands"] and module.app == {}
    assert got["after"][PF]["trust"] == "pcp"


def test_a_dscp_with_two_priorities_is_drift_not_a_guess(host):
    module = Mlx5Dcb(host.root)
    state = Q.pf_state_dcb({"name": PF}, "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n",
                           "dscp-prio 26:3 26:5 48:6 \n", "RoCE v2\n", "106\n", 9000)
    assert state["dscp_to_prio"][26] == [3, 5] and state["dscp_to_prio"][10] == 1
    drift = [d["text"] for d in Q.diff(state, Q.normalise_intent(INTENT))]
    assert drift == [PF + " DSCP 26 -> priority [3, 5] vs intent 3"]
    assert module.ran == []


def test_missing_tools_and_configfs_are_named_before_anything_changes(host, tmp_path):
    module = Mlx5Dcb(host.root, tools=("ip",))
    with pytest.raises(Q.RoceQosError, match=r"node01: dcb not found on the host: install iproute2 5.11"):
        roce_qos_host.online(module, params(host))
    with pytest.raises(Q.RoceQosError, match=r"mlnx_qos not found on the host: install mlnx-tools .*qos_tool: dcb"):
        roce_qos_host.online(module, params(host, qos_tool="mlnx_qos"))
    assert module.ran == []
    # rdma_cm not loaded (or configfs not mounted): no rdma_cm directory
    bare = RealSysfs(tmp_path / "bare")
    bare.sriov_pf("0000:3b:00.0", PF, vendor="15b3", device="1021", vf_device="101e", totalvfs=16,
                  driver="mlx5_core", vf_driver="mlx5_core", bridge="0000:00:02.2", rdma=DEV)
    module = Mlx5Dcb(bare.root)
    with pytest.raises(Q.RoceQosError, match=r"node01: enp59s0f0np0: .*/kernel/config/rdma_cm is missing: load rdma_cm"):
        roce_qos_host.online(module, params(bare))
    assert [c for c in module.ran if " set " in c or " replace " in c] == []


def test_a_device_directory_made_for_the_read_is_removed_again(host):
    d = os.path.join(host.root, "kernel/config/rdma_cm", DEV)
    os.rename(d, d + ".kept")
    # a plain directory stands in for configfs, which fills ports/ itself: the read then fails naming the file,
    # and the directory it made is gone
    with pytest.raises(Q.RoceQosError, match=r"cannot read .*/rdma_cm/mlx5_0/ports/1/default_roce_mode"):
        roce_qos_host.online(Mlx5Dcb(host.root), params(host, state="gathered"))
    assert not os.path.exists(d)


def test_the_dcb_output_it_cannot_read_fails_quoting_the_line(host):
    module = Mlx5Dcb(host.root)
    real = module.run_command

    def run(argv, **kw):
        rc, out, err = real(argv, **kw)
        if "pfc" in argv and "show" in argv:
            out = out.replace("prio-pfc", "pg-pfc")
        return rc, out, err
    module.run_command = run
    with pytest.raises(Q.RoceQosError, match=r"node01: enp59s0f0np0: dcb pfc: cannot read 'pg-pfc 0:off"):
        roce_qos_host.online(module, params(host))


CONFIGFS_REAL = os.path.join(os.path.dirname(__file__), "fixtures", "rdma_cm_real")
DCB_REAL = os.path.join(os.path.dirname(__file__), "fixtures", "dcb_real")


def _real(directory, name):
    with open(os.path.join(directory, name)) as fh:
        head, sep, body = fh.read().partition("# ---\n")
    assert sep and head.startswith("# source: "), name
    return body


@pytest.mark.parametrize("name, mode", [("rhel7-mlx5_0-roce-mode.txt", "RoCE v2"),
                                        ("rhel10-mlx5_0-roce-mode.txt", "RoCE v2"),
                                        ("nvidia-rhel89-mlx4_0-roce-mode.txt", "IB/RoCE v1")])
def test_the_configfs_reads_of_real_hosts(name, mode):
    state = Q.pf_state_dcb({"name": PF}, "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n", "",
                           _real(CONFIGFS_REAL, name), "106\n", 9000)
    assert state["roce_mode"] == mode and state["roce_tos"] == 106


def test_a_mode_string_mainline_does_not_print_is_refused():
    # RHEL 7 read back the "RoCE v1" written to it; mainline's gid_type_str has no such string
    with pytest.raises(ValueError, match="no 'RoCE v2' or 'IB/RoCE v1' line"):
        Q.pf_state_dcb({"name": PF}, "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off \n", "",
                       _real(CONFIGFS_REAL, "rhel7-mlx5_0-roce-v1-written.txt"), "106\n", 9000)


def _shape(text):
    """Each line's name and the form of its tokens (digits and on/off as placeholders)."""
    import re
    return [re.sub(r"\d+", "N", re.sub(r"\b(on|off)\b", "B", line.strip())) for line in text.splitlines()]


def test_the_stand_in_prints_what_dcb_prints_on_real_hosts(host):
    module = Mlx5Dcb(host.root)
    _, pfc, _ = module.run_command(["/usr/sbin/dcb", "-N", "pfc", "show", "dev", PF])
    assert _shape(pfc) == _shape(_real(DCB_REAL, "pfc-hns3-eth0-off.txt"))
    assert all(line.endswith(" ") for line in pfc.splitlines())      # dcb.c: a space after every token
    module.app = {24: 2, 48: 6}
    _, app, _ = module.run_command(["/usr/sbin/dcb", "-N", "app", "show", "dev", PF])
    assert _shape(app) == _shape(_real(DCB_REAL, "app-sparx5-eth1-duplicate.txt"))
    assert app.rstrip("\n").endswith(" ")
