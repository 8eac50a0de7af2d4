"""Layer 8 host QoS logic (plugins/module_utils/roce_host/roce_qos.py): parse the tools'
outputs (real mlnx_qos captures), diff against the intent, render the exact
commands, inbox vs OFED ECN, bad input, the doctor's verdict."""

import os

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware.mlx_tools import parse_mlxconfig_query
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import roce_host as roce_host_check
from simlab.tools import formats

pytestmark = pytest.mark.layers(8)

INTENT = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp",
          "ecn": {"min_kbytes": 150, "max_kbytes": 1500, "probability": 100}, "host_mtu": 9000, "switch_mtu": 9216}
PF = {"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "rdma_device": "rocep59s0f0"}

# mlxconfig -e q in the layout of mstflint's mlxcfg_ui (Default / Current / Next Boot columns)
FW_QUERY = """
Device #1:
----------

Device type:        ConnectX7
Name:               MCX75310AAS-NEAT_Ax
Description:        NVIDIA ConnectX-7 HHHL Adapter card
Device:             0000:3b:00.0

Configurations:                                         Default             Current             Next Boot
        ROCE_CC_PRIO_MASK_P1                            255                 {mask}                 {mask}
        CNP_DSCP_P1                                     48                  {dscp}                  {dscp}
        CNP_802P_PRIO_P1                                6                   6                   6
"""


def want():
    return Q.normalise_intent(INTENT, "node01")


def twin_qos(trust="pcp", pfc=(0,) * 8):
    return formats.mlnx_qos({"trust": trust, "pfc": list(pfc), "buffer": None, "tcs": []})


def make_ofed_sysfs(root, pf="eth0", enable=None, cnp_dscp=48, cnp_prio=6, params=False):
    """An OFED ecn/ tree as en_sysfs.c lays it out (or the documented params/ layout)."""
    enable = enable or {}
    base = os.path.join(root, "class", "net", pf, "ecn")
    for proto in Q.ECN_PROTOS:
        os.makedirs(os.path.join(base, proto, "enable"))
        for p in range(8):
            with open(os.path.join(base, proto, "enable", str(p)), "w") as fh:
                fh.write("%d\n" % enable.get((proto, p), 1))
    np_dir = os.path.join(base, "roce_np", "params") if params else os.path.join(base, "roce_np")
    os.makedirs(np_dir, exist_ok=True)
    for name, value in (("cnp_dscp", cnp_dscp), ("cnp_802p_prio", cnp_prio)):
        with open(os.path.join(np_dir, name), "w") as fh:
            fh.write("%d\n" % value)
    os.makedirs(os.path.join(root, "class", "net", pf, "qos"))
    with open(os.path.join(root, "class", "net", pf, "qos", "trust"), "w") as fh:
        fh.write("dscp\n")
    return base


# ------------------------------------------------------------------ real outputs

def test_real_mlnx_qos_after_the_roce_recipe_matches_the_intent(real_output):
    text = real_output("mlnx_qos/att-netarbiter-cx-dscp-pfc3.txt")
    st = Q.pf_state(dict(PF, name="eth4"), text, "RoCE v2\n", "106\n", 9000)
    assert st["trust"] == "dscp" and st["pfc_priorities"] == [3] and st["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert Q.dscp_priority(st, 26) == 3 and Q.dscp_priority(st, 48) == 6
    assert st["driver"] == "inbox" and st["ecn"] is None
    assert Q.diff(st, want()) == []
    pub = Q.public_state(st, want())
    assert pub["dscp_map"] == {"26": 3, "48": 6} and "dscp_to_prio" not in pub


def test_real_filtered_mlnx_qos_with_pfc_on_5_and_its_ofed_ecn_files(real_output, tmp_path):
    text = real_output("mlnx_qos/spiderpool-rdma-qos-q-filtered-prio5.txt")
    # the capture also lists the ecn sysfs values it read: rebuild that tree
    enable = {}
    for line in text.splitlines():
        if line.startswith("ECN Enabled for priority"):
            path, value = line.split(": ", 1)[1].split(" = ")
            parts = path.split("/")
            enable[(parts[-3], int(parts[-1]))] = int(value)
    assert len(enable) == 16
    make_ofed_sysfs(str(tmp_path), "eth0", enable)
    ecn = Q.read_ecn_sysfs(str(tmp_path), "eth0")
    assert ecn["roce_np"] == [1] * 8 and ecn["roce_rp"] == [1] * 8 and ecn["cnp_dscp"] == 48
    st = Q.pf_state(dict(PF, name="eth0", rdma_device="mlx5_0"), text, "RoCE v2", "106", 9000, ecn,
                    Q.read_trust_sysfs(str(tmp_path), "eth0"))
    assert st["driver"] == "ofed" and st["trust"] == "dscp"
    d = Q.diff(st, want())
    assert [x["text"] for x in d] == ["eth0 PFC {5} vs intent {3}"]
    cmds = Q.render(st, want(), d, str(tmp_path))
    assert [c["text"] for c in cmds] == ["mlnx_qos -i eth0 --pfc 0,0,0,1,0,0,0,0"]


# ------------------------------------------------------------------ diff and render

def test_twin_default_pf_renders_the_roce_recipe_in_order():
    st = Q.pf_state(PF, twin_qos(), "RoCE v2", "0", 1500, None, None)
    d = Q.diff(st, want())
    assert [x["text"] for x in d] == [
        "enp59s0f0np0 trust pcp vs intent dscp",
        "enp59s0f0np0 PFC {} vs intent {3}",
        "enp59s0f0np0 RDMA-CM default TOS 0 vs intent 106",
        "enp59s0f0np0 MTU 1500 vs intent 9000",
    ]
    # the map is not shown while trust is pcp: the default map (26 -> 3, 48 -> 6) comes with trust dscp
    assert [c["text"] for c in Q.render(st, want(), d)] == [
        "mlnx_qos -i enp59s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0",
        "cma_roce_tos -d rocep59s0f0 -p 1 -t 106",
        "ip link set dev enp59s0f0np0 mtu 9000",
    ]
    assert Q.diff(Q.predict(st, want(), d), want()) == []


def test_roce_v1_and_wrong_pfc_on_a_dscp_host():
    st = Q.pf_state(PF, twin_qos("dscp", (0, 0, 0, 1, 1, 0, 0, 0)), "IB/RoCE v1\n", "106", 9000)
    d = Q.diff(st, want())
    assert [x["text"] for x in d] == ["enp59s0f0np0 PFC {3,4} vs intent {3}",
                                      "enp59s0f0np0 RDMA-CM default RoCE mode IB/RoCE v1 vs intent RoCE v2"]
    assert [c["text"] for c in Q.render(st, want(), d)] == [
        "mlnx_qos -i enp59s0f0np0 --pfc 0,0,0,1,0,0,0,0", "cma_roce_mode -d rocep59s0f0 -p 1 -m 2"]


def test_a_dscp_off_the_default_map_gets_its_own_mlnx_qos_call():
    intent = dict(INTENT, dscp=46, priority=3)
    w = Q.normalise_intent(intent)
    assert w["roce_tos"] == 186
    st = Q.pf_state(PF, twin_qos("dscp", (0, 0, 0, 1, 0, 0, 0, 0)), "RoCE v2", "186", 9000)
    d = Q.diff(st, w)
    assert [x["text"] for x in d] == ["enp59s0f0np0 DSCP 46 -> priority 5 vs intent 3"]
    # mlnx_qos refuses --trust with --dscp2prio, so the map is a call of its own
    full = [c["text"] for c in Q.render_full(w, "enp59s0f0np0", "rocep59s0f0")]
    assert full[:2] == ["mlnx_qos -i enp59s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0",
                        "mlnx_qos -i enp59s0f0np0 --dscp2prio set,46,3"]


def test_trust_pcp_intent_ignores_the_dscp_map():
    w = Q.normalise_intent(dict(INTENT, trust="pcp"))
    st = Q.pf_state(PF, twin_qos("pcp", (0, 0, 0, 1, 0, 0, 0, 0)), "RoCE v2", "106", 9000)
    assert Q.diff(st, w) == [] and w["dscp_map"] == {}


def test_ofed_ecn_off_on_the_roce_priority_is_set_through_sysfs(tmp_path):
    root = str(tmp_path)
    make_ofed_sysfs(root, "enp59s0f0np0", {("roce_np", 3): 0, ("roce_rp", 3): 0}, cnp_dscp=46, params=True)
    ecn = Q.read_ecn_sysfs(root, "enp59s0f0np0")
    assert ecn["np_params_dir"] == "params" and ecn["cnp_dscp"] == 46
    st = Q.pf_state(PF, twin_qos("dscp", (0, 0, 0, 1, 0, 0, 0, 0)), "RoCE v2", "106", 9000, ecn)
    d = Q.diff(st, want())
    assert all(x["settable"] for x in d)
    assert [x["text"] for x in d] == ["enp59s0f0np0 ECN roce_np on priority 3 off vs intent on",
                                      "enp59s0f0np0 ECN roce_rp on priority 3 off vs intent on",
                                      "enp59s0f0np0 CNP DSCP 46 vs intent 48"]
    base = os.path.join(root, "class/net/enp59s0f0np0/ecn")
    assert [c["text"] for c in Q.render(st, want(), d, root)] == [
        "echo 1 > %s/roce_np/enable/3" % base, "echo 1 > %s/roce_rp/enable/3" % base,
        "echo 48 > %s/roce_np/params/cnp_dscp" % base]
    assert Q.notes(st, want()) == []


def test_inbox_ecn_comes_from_the_firmware_and_is_never_set():
    fw = Q.firmware_ecn(parse_mlxconfig_query(FW_QUERY.format(mask=255, dscp=48)))
    assert fw["roce_np"] == [1] * 8 and fw["cnp_dscp"] == 48 and fw["cnp_802p_prio"] == 6
    st = Q.pf_state(PF, twin_qos("dscp", (0, 0, 0, 1, 0, 0, 0, 0)), "RoCE v2", "106", 9000, fw, driver="inbox")
    assert Q.diff(st, want()) == []
    assert "ROCE_CC_PRIO_MASK_P1=255 (ECN on for priority 3)" in Q.notes(st, want())[0]
    # priority 3 masked off in firmware, CNP DSCP 46: reported, not settable, no command
    fw = Q.firmware_ecn(parse_mlxconfig_query(FW_QUERY.format(mask=0xf7, dscp=46)))
    st = Q.pf_state(PF, twin_qos("dscp", (0, 0, 0, 1, 0, 0, 0, 0)), "RoCE v2", "106", 9000, fw, driver="inbox")
    d = Q.diff(st, want())
    assert [x["text"] for x in d] == [
        "enp59s0f0np0 ECN roce_np on priority 3 off vs intent on (firmware ROCE_CC_PRIO_MASK_P1)",
        "enp59s0f0np0 ECN roce_rp on priority 3 off vs intent on (firmware ROCE_CC_PRIO_MASK_P1)",
        "enp59s0f0np0 CNP DSCP 46 vs intent 48 (firmware CNP_DSCP_P1)"]
    assert not any(x["settable"] for x in d) and Q.render(st, want(), d) == []
    # no firmware query possible: a note, no difference
    st = Q.pf_state(PF, twin_qos("dscp", (0, 0, 0, 1, 0, 0, 0, 0)), "RoCE v2", "106", 9000, None)
    assert Q.diff(st, want()) == [] and Q.notes(st, want())[0].endswith("not read (no mlxconfig/mstconfig query)")


def test_inbox_sysfs_has_no_ecn_tree(tmp_path):
    os.makedirs(os.path.join(str(tmp_path), "class/net/enp59s0f0np0"))
    assert Q.read_ecn_sysfs(str(tmp_path), "enp59s0f0np0") is None
    assert Q.read_trust_sysfs(str(tmp_path), "enp59s0f0np0") is None


def test_rendered_and_boot_lines_for_ofed_and_inbox():
    w = want()
    assert [c["text"] for c in Q.render_full(w, "enp59s0f0np0", "mlx5_0", ofed=True)] == [
        "mlnx_qos -i enp59s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0",
        "echo 1 > /sys/class/net/enp59s0f0np0/ecn/roce_np/enable/3",
        "echo 1 > /sys/class/net/enp59s0f0np0/ecn/roce_rp/enable/3",
        "echo 48 > /sys/class/net/enp59s0f0np0/ecn/roce_np/cnp_dscp",
        "echo 6 > /sys/class/net/enp59s0f0np0/ecn/roce_np/cnp_802p_prio",
        "cma_roce_mode -d mlx5_0 -p 1 -m 2",
        "cma_roce_tos -d mlx5_0 -p 1 -t 106",
        "ip link set dev enp59s0f0np0 mtu 9000",
    ]
    assert Q.boot_lines(w, ofed=False) == [
        'run mlnx_qos -i "$PF" --trust dscp --pfc 0,0,0,1,0,0,0,0',
        'run cma_roce_mode -d "$DEV" -p 1 -m 2',
        'run cma_roce_tos -d "$DEV" -p 1 -t 106',
        'run ip link set dev "$PF" mtu 9000',
    ]
    assert 'put "$SYSFS/class/net/$PF/ecn/roce_np/enable/3" 1' in Q.boot_lines(w, ofed=True)


def test_cma_outputs():
    assert Q.parse_cma_roce_mode("RoCE v2\n") == "RoCE v2"
    assert Q.parse_cma_roce_mode("IB/RoCE v1\n") == "IB/RoCE v1"
    assert Q.parse_cma_roce_tos("106\n") == 106
    with pytest.raises(ValueError):
        Q.parse_cma_roce_mode("Module rdma_cm is not loaded or does not support configfs\n")
    with pytest.raises(ValueError):
        Q.parse_cma_roce_tos("You must be root to run this\n")


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("change, words", [
    ({"priority": 8}, ["node01", "priority 8", "0-7"]),
    ({"priority": True}, ["node01", "priority True"]),
    ({"dscp": 64}, ["dscp 64", "0-63"]),
    ({"cnp_dscp": -1}, ["cnp_dscp -1"]),
    ({"host_mtu": 10000}, ["mtu 10000", "68-9978"]),
    ({"trust": "both"}, ["trust 'both'"]),
    ({"tos": 160}, ["tos 160 carries DSCP 40", "DSCP is 26"]),
    ({"cnp_dscp": 26}, ["dscp 26 is both the RoCE DSCP"]),
    ({"priority": "three"}, ["priority 'three' is not an integer"]),
])
def test_bad_intent_names_host_field_and_value(change, words):
    with pytest.raises(Q.RoceQosError) as err:
        Q.normalise_intent(dict(INTENT, **change), "node01")
    for w in words:
        assert w in str(err.value)


def test_intent_without_priority_is_refused():
    with pytest.raises(Q.RoceQosError, match="needs priority and dscp"):
        Q.normalise_intent({"dscp": 26}, "node01")


def test_mlnx_qos_without_pfc_row_is_refused():
    with pytest.raises(ValueError):
        Q.pf_state(PF, "Priority trust state: dscp\n", "RoCE v2", "106", 9000)


# ------------------------------------------------------------------ doctor verdict

def gathered(drift=(), not_settable=(), notes=()):
    return {"failed": False, "drift": list(drift), "not_settable": list(not_settable), "notes": list(notes),
            "gathered": {"enp59s0f0np0": {}, "enp134s0f0np0": {}}}


def test_layer_result_names_node_pf_and_pfc_sets():
    r = roce_host_check.layer_result("node02", gathered(["enp59s0f0np0 PFC {4} vs intent {3}"]), True)
    assert r["layer"] == 8 and r["name"] == "roce_host" and r["status"] == "fail"
    assert r["reason"] == "node02 enp59s0f0np0 PFC {4} vs intent {3}"
    assert r["remediation"].startswith("run roce_host (tag layer08) on node02")


def test_layer_result_orders_causes():
    assert roce_host_check.layer_result("n", {"failed": True, "msg": "n: mlnx_qos not found"})["reason"] == \
        "n: host QoS could not be read: n: mlnx_qos not found"
    r = roce_host_check.layer_result("n", gathered(), False)
    assert r["status"] == "fail" and "gpufabric-roce-qos.service is not enabled" in r["reason"]
    chain = {"differences": [{"text": "n p PFC {3} vs leaf1 swp1 PFC {}",
                              "remediation": "run roce_switch (tag layer07) on leaf1"}], "unchecked": [], "checked": 1}
    r = roce_host_check.layer_result("n", gathered(), True, chain=chain)
    assert (r["status"], r["reason"], r["remediation"]) == (
        "fail", "n p PFC {3} vs leaf1 swp1 PFC {}", "run roce_switch (tag layer07) on leaf1")
    r = roce_host_check.layer_result("n", gathered(not_settable=["p ECN roce_np on priority 3 off vs intent on (firmware)"]), True)
    assert r["status"] == "warn"
    r = roce_host_check.layer_result("n", gathered(notes=["p: inbox"]), True, chain={"differences": [], "checked": 2})
    assert r["status"] == "pass" and r["reason"] == "2 PF(s) match the RoCE intent and their switch ports"
    assert r["evidence"] == ["p: inbox"]
    assert roce_host_check.layer_result("n", gathered(), None, persist=False)["status"] == "pass"


class _ToolModule(object):
    """What roce_qos_host.Host needs of an AnsibleModule: records the tools run."""

    def __init__(self, out):
        self.ran, self.out = [], out

    def get_bin_path(self, tool, required=False, opt_dirs=None):
        return "/usr/bin/" + tool

    def run_command(self, argv, **kw):
        self.ran.append(argv)
        return 0, self.out, ""


def test_the_firmware_ecn_comes_from_the_query_the_module_run_already_made():
    from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
    whole = FW_QUERY.format(mask=0xf7, dscp=46)
    module = _ToolModule(FW_QUERY.format(mask=255, dscp=48))
    host = roce_qos_host.Host(module, "node01", {"0000:3b:00.0": whole})
    fw = host.firmware("0000:3b:00.0")
    # nic_facts' firmware read of the PF answers: no second query, its values (not the tool's)
    assert module.ran == [] and fw["mask"] == 0xf7 and fw["cnp_dscp"] == 46
    # another PF, or a query without the ECN parameters, is asked of the tool
    assert host.firmware("0000:86:00.0")["mask"] == 255 and len(module.ran) == 1
    bare = "\n".join(line for line in whole.splitlines() if "ROCE_CC" not in line)
    host = roce_qos_host.Host(module, "node01", {"0000:3b:00.0": bare})
    assert host.firmware("0000:3b:00.0")["mask"] == 255 and len(module.ran) == 2
    assert module.ran[-1][1:] == ["-d", "0000:3b:00.0", "-e", "q", "ROCE_CC_PRIO_MASK_P1", "CNP_DSCP_P1",
                                  "CNP_802P_PRIO_P1"]
