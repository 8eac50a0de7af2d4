"""The check files of the two layers read across nodes, without Ansible:
checks/rdma_check.py (layer 9) and checks/nccl_validate.py (layer 15), each
outcome of check(reading, intent, host) on the readings their roles'
tasks/doctor.yml hand to the doctor action."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import test_nccl_parser as N15
import test_rdma_pairs as R9
from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate as NV
from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs as RP
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import nccl_validate as C15
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_check as C9

pytestmark = pytest.mark.layers(9, 15)

REPO = Path(__file__).resolve().parents[2]


def test_the_check_files_import_without_ansible():
    code = ("import sys; sys.path[:0] = [%r, %r]\n"
            "from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_check, nccl_validate\n"
            "bad = sorted(m for m in sys.modules if m == 'ansible' or m.startswith('ansible.'))\n"
            "assert not bad, bad\n" % (str(REPO / ".build"), str(REPO)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("module, layer", [(C9, 9), (C15, 15)])
def test_shape_and_what_a_fabric_layer_reads(module, layer):
    assert module.LAYER == layer and module.INTENT
    wish = module.reads({}, "node01")
    assert list(wish) == ["fabric"] and isinstance(wish["fabric"], str) and "tasks/doctor.yml" in wish["fabric"]


# --------------------------------------------------------------------------- layer 9

INTENT9 = {"rdma_check_gate_share": 0.9, "rdma_check_doctor_bandwidth": True}
PAIR1 = "node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 swp1 <-> leaf1 swp2)"
PAIR2 = "node01 enp134s0f0np0 -> node02 enp134s0f0np0 (leaf2 swp1 <-> leaf2 swp2)"


def reading9(me="node01", nodes=("node01", "node02"), faults=None, client=None):
    """What tasks/doctor.yml hands over for ``me``: its links, the pairs it
    sent on (``client``: the client's job of each, by default 392 Gb/s) and
    the plan's untested PFs."""
    ls = R9.links(list(nodes), faults)
    plan = RP.plan_pairs(ls)
    pairs = [RP.pair_result(p, (client or (lambda p: R9.job(R9.perftest_output(392.0))))(p), None, 0.9)
             for rnd in plan["rounds"] for p in rnd if p["client"]["node"] == me]
    return {"links": next(x for x in ls if x["node"] == me), "pairs": pairs, "untested": plan["untested"]}


def test_layer9_passes_naming_pfs_and_pairs():
    reading = reading9()
    r = C9.check(reading, INTENT9, "node01")
    assert r == doctor.record(r)
    assert (r["layer"], r["name"], r["status"]) == (9, "rdma_check", "pass")
    assert r["reason"] == "2 PF(s) up with a RoCE v2 GID; 2 pair(s) at or above 90% of line rate"
    assert r["remediation"] == ""
    links = [e for p in reading["links"]["pfs"] for e in p["evidence"]]
    assert links and any("RoCE v2 GID 3" in e for e in links)
    assert r["evidence"][:len(links)] == links
    messages = [e for e in r["evidence"] if " -> " in e]
    assert [m.split(": ")[0] for m in messages] == [PAIR1, PAIR2]
    assert all("meets the gate of 360.00 Gb/s" in m for m in messages)
    json.dumps(r)


def test_layer9_gate_share_is_the_intents():
    r = C9.check(reading9(), dict(INTENT9, rdma_check_gate_share=0.95), "node01")
    assert r["status"] == "pass" and r["reason"].endswith("2 pair(s) at or above 95% of line rate")


def test_layer9_without_the_pairwise_test_judges_links_only():
    # pairs in the reading are not judged when the doctor does not run the test
    slow = reading9(client=lambda p: R9.job(R9.perftest_output(150.0)))
    r = C9.check(slow, dict(INTENT9, rdma_check_doctor_bandwidth=False), "node01")
    assert r["status"] == "pass"
    assert r["reason"] == "2 PF(s) up with a RoCE v2 GID; pairwise bandwidth not tested (turned off)"
    assert not [e for e in r["evidence"] if " -> " in e]


def test_layer9_fails_on_its_own_link_down_naming_pf_port_and_cause():
    reading = reading9("node02", faults={"node02": {0: {"up": False}}})
    r = C9.check(reading, INTENT9, "node02")
    assert r["status"] == "fail"
    assert r["reason"] == ("node02 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, cabled to leaf1 swp2): link down "
                           "(netdev operstate down, RDMA port DOWN, physical state DISABLED)")
    assert r["remediation"] == ("check the cable and transceiver of node02 enp59s0f0np0 and the switch port leaf1 "
                                "swp2 (is it up, is it the port the cabling plan names?); `ip link show "
                                "enp59s0f0np0` and `rdma link show` on node02")


def test_layer9_warns_on_a_pair_its_peer_could_not_run():
    r = C9.check(reading9("node01", faults={"node02": {0: {"up": False}}}), INTENT9, "node01")
    assert r["status"] == "warn"
    assert r["reason"].startswith(PAIR1 + ": not tested, server node02 enp59s0f0np0: link down")
    assert r["remediation"] == "the pairs named were not measured; fix the other end and run the check again"
    assert r["reason"] in r["evidence"]


def test_layer9_warns_on_a_rail_without_a_peer():
    reading = reading9("solo", nodes=("solo",))
    assert reading["pairs"] == [] and len(reading["untested"]) == 2
    r = C9.check(reading, INTENT9, "solo")
    assert r["status"] == "warn"
    assert r["reason"] == "solo enp59s0f0np0: %s" % reading["untested"][0]["reason"]
    assert "bandwidth not tested" in r["reason"]


def test_layer9_fails_a_slow_pair_naming_both_ends_and_the_chain():
    r = C9.check(reading9(client=lambda p: R9.job(R9.perftest_output(150.2))), INTENT9, "node01")
    assert r["status"] == "fail"
    assert r["reason"] == (PAIR1 + ": 150.20 Gb/s is under the gate of 360.00 Gb/s (90% of 400 Gb/s line rate)")
    assert r["remediation"] == (
        "the pair runs lossy: check the RoCE chain on both ends, host QoS of node01 enp59s0f0np0 and node02 "
        "enp59s0f0np0 (layer 8: trust dscp, PFC on the RoCE priority; mlnx_qos -i <pf>) and switch ports leaf1 "
        "swp1 and leaf1 swp2 (layer 7); validate.yml names the first link that differs")


def test_layer9_fails_a_pair_that_could_not_run():
    r = C9.check(reading9(client=lambda p: R9.job("", 1, "Couldn't connect to 172.30.0.2:18515")), INTENT9, "node01")
    assert r["status"] == "fail" and r["reason"].startswith(PAIR1 + ": ib_write_bw failed (rc 1)")
    assert r["remediation"] == ("ib_write_bw could not run over the pair: check that perftest is installed on both "
                                "nodes, the server address is reachable, and the switch MTU fits the RoCE MTU "
                                "(layer 7)")


@pytest.mark.parametrize("kwargs, cause, remediation", [
    ({"bound": False}, "no driver bound (layer 5)",
     "the PF is not usable for RoCE: see the layer named in the reason and run its role"),
    ({"ipv4": False}, "no RoCE v2 GID with an IPv4 address",
     "give enp59s0f0np0 an IPv4 address (RoCE v2 GIDs follow the netdev's addresses) or set "
     "rdma_check_gid_index / rdma_check_addresses; `show_gids` lists the table"),
])
def test_layer9_fails_a_pf_that_cannot_carry_roce(kwargs, cause, remediation):
    links = RP.link_check("node01", [R9.pf(0, 1, **kwargs)], [{"match": {"pci_address": "0000:3b:00.0"}}],
                          R9.cabling(["node01"]))
    r = C9.check({"links": links, "pairs": [], "untested": []}, INTENT9, "node01")
    assert r["status"] == "fail" and cause in r["reason"] and r["reason"].startswith("node01 ")
    assert r["remediation"] == remediation


def test_layer9_fails_on_inventory_errors_naming_the_variables():
    links = RP.link_check("node03", [R9.pf(0, 3)], R9.NICS + [{"match": {"name": "ens9"}}], R9.cabling(["node01"]))
    r = C9.check({"links": links, "pairs": [], "untested": []}, INTENT9, "node03")
    assert r["status"] == "fail" and r["reason"] == links["errors"][0] and r["reason"].startswith("node03: ")
    assert r["remediation"] == "fix gpufabric_nics / gpufabric_cabling for this host in the inventory"


def test_layer9_bad_reading_or_intent_is_an_error_naming_host_and_value():
    with pytest.raises(ValueError, match="^node01: layer 9's reading has no links of the node"):
        C9.check({}, INTENT9, "node01")
    with pytest.raises(ValueError, match=r"rdma_check_gate_share must be in \(0, 1\], got 1.5"):
        C9.check(reading9(), dict(INTENT9, rdma_check_gate_share=1.5), "node01")


# --------------------------------------------------------------------------- layer 15

ROCE = {"priority": 3, "dscp": 26}
NICS15 = [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8}]
INTENT15 = {"nccl_validate_gpus_per_node": 8}
FILE = "/srv/reports/nccl_validate-last.json"
RERUN = "run site.yml --tags layer15"


def node(speed=400000):
    pfs = [{"name": n, "pci_address": a, "vendor_device": "15b3:1021", "speed_mbps": speed, "rdma_device": d,
            "rdma": {"roce_v2_gid_index": 3}, "vfs": []}
           for n, a, d in (("enp59s0f0np0", "0000:3b:00.0", "rocep59s0f0"),
                           ("enp134s0f0np0", "0000:86:00.0", "rocep134s0f0"))]
    return {"pfs": pfs, "nics": NICS15, "gpus": 8}


def log(transport, hosts=("node01", "node02")):
    """all_reduce_perf output in the twin's format, NCCL_DEBUG=INFO (the
    NCCL parser tests' builder)."""
    return N15._twin_log(transport, hosts)


def run15(transport="IB", expected=None, nodes=None):
    plan = NV.plan(nodes or {"node01": node(), "node02": node()}, ROCE)
    gate = NV.gate_output(log(transport), expected or plan["expected_busbw_gbs"], plan["efficiency"],
                          require_ib=True, exit_code=0)
    return {"plan": plan, "gate": gate}


def live(run):
    """The reading of a run this play made (hosts mode, or the converge)."""
    return {"run": run, "file": None, "mode": "hosts"}


def recorded(run, mode="k8s"):
    """The reading of the last recorded run (JSON, as the file keeps it)."""
    return {"run": json.loads(json.dumps(run)) if run is not None else None, "file": FILE, "mode": mode}


@pytest.mark.parametrize("gpus", [0, "0"])
def test_layer15_a_node_without_gpus_is_not_checked(gpus):
    r = C15.check({}, {"nccl_validate_gpus_per_node": gpus}, "cpu01")
    assert r == doctor.result(15, "skipped", "not applicable: cpu01 has no GPUs (nccl_validate_gpus_per_node 0)",
                              ["nccl_validate_gpus_per_node=0 (gpu_count)"], "none; layer 15 runs on GPU nodes")
    # whatever was read
    assert C15.check(live(run15("Socket")), {"nccl_validate_gpus_per_node": gpus}, "node01")["status"] == "skipped"


def test_layer15_passes_on_a_run_over_net_ib():
    run = run15()
    r = C15.check(live(run), INTENT15, "node01")
    assert r == doctor.record(r)
    assert (r["layer"], r["name"], r["status"]) == (15, "nccl_validate", "pass")
    assert r["reason"] == run["gate"]["reason"] and r["reason"].startswith("busbw 90.50 GB/s at 4294967296 bytes >= ")
    assert r["evidence"][0] == "nodes: node01, node02 (16 ranks)"
    assert r["evidence"][1].startswith("NCCL env: NCCL_IB_HCA==rocep59s0f0:1,rocep134s0f0:1")
    assert "gate 85.00 GB/s = 0.85 x 100.00 GB/s expected" in r["evidence"]
    assert "node01: NCCL transport NET/IB" in r["evidence"] and r["remediation"] == ""
    # the same run read back from its record gives the same record
    assert C15.check(recorded(run), INTENT15, "node01") == r


def test_layer15_a_node_that_fell_back_to_sockets_fails_and_its_peer_warns():
    run = run15({"node02": "Socket"})
    bad = C15.check(live(run), INTENT15, "node02")
    assert (bad["status"], bad["reason"]) == ("fail", "NCCL used NET/Socket instead of NET/IB")
    assert bad["remediation"] == C15.REMEDIATION["socket"]
    assert "node02: NCCL transport NET/Socket" in bad["evidence"]
    assert not [e for e in bad["evidence"] if e.startswith("node01:")]
    ok = C15.check(live(run), INTENT15, "node01")
    assert (ok["status"], ok["reason"]) == ("warn", "all_reduce_perf with node02 failed: node02 used NET/Socket")
    assert ok["remediation"] == C15.PEER_SOCKET_REMEDIATION % "node02"
    assert "node01: NCCL transport NET/IB" in ok["evidence"] and "node02: NCCL transport NET/Socket" in ok["evidence"]
    assert C15.check(recorded(run), INTENT15, "node01")["status"] == "warn"


def test_layer15_every_node_fails_when_every_node_used_sockets():
    run = run15("Socket")
    got = [C15.check(live(run), INTENT15, h) for h in ("node01", "node02")]
    assert [(r["status"], r["reason"]) for r in got] == [("fail", "NCCL used NET/Socket instead of NET/IB")] * 2


def test_layer15_fails_under_the_gate():
    run = run15(expected=200.0)
    r = C15.check(live(run), INTENT15, "node01")
    assert r["status"] == "fail" and r["reason"] == run["gate"]["reason"]
    assert r["reason"] == "busbw 90.50 GB/s at 4294967296 bytes is below 170.00 GB/s (85% of 200.00 GB/s)"
    assert r["remediation"] == C15.REMEDIATION["below"]


def test_layer15_fails_a_run_that_printed_nothing_with_its_last_line():
    plan = NV.plan({"node01": node(), "node02": node()}, ROCE)
    gate = NV.gate_output("bash: mpirun: command not found\n", plan["expected_busbw_gbs"], exit_code=127)
    r = C15.check(live({"plan": plan, "gate": gate}), INTENT15, "node01")
    assert r["status"] == "fail"
    assert r["reason"] == "no nccl-tests output (exit status 127): bash: mpirun: command not found"
    assert r["remediation"] == C15.REMEDIATION["no_output"]
    assert "output: bash: mpirun: command not found" in r["evidence"]


def test_layer15_a_plan_with_problems_fails_naming_them():
    down = node()
    down["pfs"][0]["speed_mbps"] = None
    plan = NV.plan({"node01": node(), "node02": down}, ROCE)
    r = C15.check(live({"plan": plan, "gate": None}), INTENT15, "node01")
    assert r["status"] == "fail" and r["reason"] == "node02: pf enp59s0f0np0 (0000:3b:00.0): link down, no speed"
    assert r["evidence"][:len(plan["problems"])] == plan["problems"]
    assert r["remediation"] == C15.REMEDIATION["problem"]


def test_layer15_one_node_has_no_fabric_to_gate():
    plan = NV.plan({"node01": node()}, ROCE)
    r = C15.check(live({"plan": plan, "gate": None}), INTENT15, "node01")
    assert r == doctor.result(15, "skipped", plan["skip"], ["nodes in the run: node01"])
    assert "layer 15 needs at least 2 nodes" in r["reason"]


def test_layer15_a_plan_that_did_not_run():
    plan = NV.plan({"node01": node(), "node02": node()}, ROCE)
    r = C15.check(recorded({"plan": plan, "gate": None}), INTENT15, "node01")
    assert r == doctor.result(15, "skipped", "no NCCL run recorded", [], RERUN)


@pytest.mark.parametrize("mode, reason", [("k8s", "no NCCL run recorded"), ("hosts", "no NCCL run recorded"),
                                          ("render", "rendered only (gpufabric_render_dir)")])
def test_layer15_without_a_recorded_run(mode, reason):
    r = C15.check(recorded(None, mode), INTENT15, "node01")
    assert r == doctor.result(15, "skipped", reason, [FILE + " does not exist"], RERUN)


def test_layer15_a_node_not_in_the_run():
    run = run15()
    r = C15.check(recorded(run), INTENT15, "node03")
    assert r == doctor.result(15, "skipped", "not in the last NCCL run (node01, node02)", [FILE], RERUN)
    r = C15.check(live(run), INTENT15, "node03")
    assert r == doctor.result(15, "skipped", "not in the play's NCCL run (node01, node02)",
                              ["nodes in the run: node01, node02"], RERUN)


def test_layer15_bad_reading_is_an_error_naming_the_host():
    with pytest.raises(ValueError, match="^node01: layer 15's reading has neither a run nor the file"):
        C15.check({}, INTENT15, "node01")
    with pytest.raises(ValueError, match="^node01: layer 15's run has no plan \\(%s\\)" % FILE):
        C15.check({"run": {"gate": None}, "file": FILE, "mode": "k8s"}, INTENT15, "node01")
