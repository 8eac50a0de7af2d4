"""The rollout's node maintenance decisions and drain outcomes on recorded
Kubernetes API responses (tests/unit/fixtures/kube/rollout), the twin
stand-in's state changes, batch plans and report merging."""

import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import node_maintenance as nm
from ansible_collections.gpufabric.stack.plugins.plugin_utils import rollout

pytestmark = pytest.mark.layers(11)

FIX = Path(__file__).parent / "fixtures" / "kube" / "rollout"


def load(name):
    return json.loads((FIX / name).read_text())


# --------------------------------------------------------------------------- decisions

def test_schedulable_node_without_other_actors_is_drained_and_uncordoned():
    d = nm.decide(load("node-schedulable.json"), [load("sriovnetworknodestate-idle.k8s_info.json"),
                                                  load("crd-missing.k8s_info.json")])
    assert d["action"] == "drain" and d["uncordon"] is True
    assert d["node"] == "gpu-a02" and d["found"] and not d["unschedulable"] and not d["ours"]
    assert d["holders"] == []


def test_node_the_sriov_config_daemon_wants_drained_is_waited_for():
    d = nm.decide(load("node-sriov-drain-required.json"))
    assert d["action"] == "wait"
    assert d["holders"][0]["owner"] == "sriov-network-operator"
    assert "Drain_Required" in d["reason"]


def test_operator_drain_in_progress_on_the_node_state_is_waited_for():
    d = nm.decide(load("node-schedulable.json"), [load("sriovnetworknodestate-draining.k8s_info.json")])
    assert d["action"] == "wait"
    [h] = d["holders"]
    assert h["object"] == "SriovNetworkNodeState/sriov-network-operator/gpu-a02"
    assert h["state"] == "Draining" and "Drain_Required" in h["detail"]


def test_node_state_of_another_node_is_ignored():
    d = nm.decide(load("node-schedulable.json"), [load("sriovnetworknodestate-draining.k8s_info.json")],
                  node_name="gpu-a03")
    assert d["action"] == "drain" and d["holders"] == []


def test_nvidia_node_maintenance_draining_this_node_is_waited_for_and_others_are_ignored():
    d = nm.decide(load("node-schedulable.json"), [load("nodemaintenance-nvidia-draining.k8s_info.json")])
    assert d["action"] == "wait"
    [h] = d["holders"]      # the Ready one is for gpu-a03
    assert h["object"] == "NodeMaintenance/nvidia-network-operator/sriov-network-operator-gpu-a02"
    assert h["state"] == "Draining"
    assert "sriov.network.nvidia.com" in h["owner"] and "configuration.net.nvidia.com" in h["owner"]


def test_nvidia_node_maintenance_ready_is_joined_without_second_drain_or_uncordon():
    node = load("node-cordoned-by-admin.json")      # the operator cordoned it, no rollout mark
    d = nm.decide(node, [load("nodemaintenance-nvidia-ready.k8s_info.json")])
    assert d["action"] == "join" and d["uncordon"] is False
    assert "already drained by maintenance-operator" in d["reason"]
    d = nm.decide(node, [load("nodemaintenance-nvidia-ready.k8s_info.json")], join_maintenance=False)
    assert d["action"] == "wait"


def test_nvidia_node_maintenance_being_deleted_is_waited_for():
    d = nm.decide(load("node-cordoned-by-admin.json"), [load("nodemaintenance-nvidia-deleting.k8s_info.json")])
    assert d["action"] == "wait" and d["holders"][0]["state"] == "Deleting"


def test_failed_nvidia_node_maintenance_blocks_naming_the_error():
    d = nm.decide(load("node-schedulable.json"), [load("nodemaintenance-nvidia-failed.k8s_info.json")])
    assert d["action"] == "blocked"
    assert "mlxfwreset exited 1" in d["reason"]


@pytest.mark.parametrize("fixture,action,state", [
    ("nodemaintenance-medik8s-running.k8s_info.json", "wait", "Running"),
    ("nodemaintenance-medik8s-succeeded.k8s_info.json", "join", "Succeeded"),
    ("nodemaintenance-medik8s-failed.k8s_info.json", "blocked", "Failed"),
])
def test_medik8s_node_maintenance_phases(fixture, action, state):
    d = nm.decide(load("node-cordoned-by-admin.json"), [load(fixture)])
    assert d["action"] == action
    assert d["holders"][0]["state"] == state and d["holders"][0]["owner"] == "node-maintenance-operator"


def test_medik8s_running_reports_progress_and_last_error():
    d = nm.decide(load("node-schedulable.json"), [load("nodemaintenance-medik8s-running.k8s_info.json")])
    assert "40% done" in d["reason"] and "disruption budget" in d["reason"]


@pytest.mark.parametrize("fixture,action", [
    ("node-ofed-upgrade-draining.json", "wait"),
    ("node-ofed-upgrade-failed.json", "blocked"),
    ("node-ofed-upgrade-done.json", "drain"),
])
def test_driver_upgrade_state_label(fixture, action):
    d = nm.decide(load(fixture))
    assert d["action"] == action
    if action != "drain":
        assert d["holders"][0]["owner"] == "nvidia-network-operator"


def test_node_left_cordoned_by_an_earlier_rollout_is_resumed_and_uncordoned():
    d = nm.decide(load("node-cordoned-by-rollout.json"))
    assert d["action"] == "drain" and d["ours"] and d["unschedulable"] and d["uncordon"] is True
    assert "4711" in d["reason"]


def test_node_cordoned_by_someone_else_is_drained_but_left_cordoned():
    d = nm.decide(load("node-cordoned-by-admin.json"))
    assert d["action"] == "drain" and not d["ours"] and d["uncordon"] is False
    assert "someone else" in d["reason"]


def test_missing_node_blocks_naming_the_variable():
    d = nm.decide(None, [], node_name="gpu-a09")
    assert d["action"] == "blocked" and not d["found"]
    assert "gpu-a09" in d["reason"] and "kube_node_name" in d["reason"]


def test_failed_outranks_busy_outranks_drained():
    objs = [load("nodemaintenance-medik8s-succeeded.k8s_info.json"), load("sriovnetworknodestate-draining.k8s_info.json")]
    assert nm.decide(load("node-schedulable.json"), objs)["action"] == "wait"
    objs.append(load("nodemaintenance-nvidia-failed.k8s_info.json"))
    assert nm.decide(load("node-schedulable.json"), objs)["action"] == "blocked"


def test_objects_may_be_lists_and_unknown_kinds_are_ignored():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "y"}}
    items = {"apiVersion": "v1", "kind": "List",
             "items": load("sriovnetworknodestate-draining.k8s_info.json")["resources"]}
    d = nm.decide(load("node-schedulable.json"), [pod, items])
    assert d["action"] == "wait"
    with pytest.raises(nm.MaintenanceError):
        nm.kind_of("not an object")


# --------------------------------------------------------------------------- drain outcomes

@pytest.mark.parametrize("fixture,drained,kind,fallback,evicted", [
    ("drain-ok.k8s_drain.json", True, "drained", False, 3),
    ("drain-already-cordoned.k8s_drain.json", True, "drained", False, 3),
    ("drain-pdb.k8s_drain.json", False, "pdb", True, 0),
    ("drain-timeout.k8s_drain.json", False, "timeout", True, 4),
    ("drain-unmanaged.k8s_drain.json", False, "unmanaged", False, 0),
    ("drain-node-missing.k8s_drain.json", False, "not_found", False, 0),
])
def test_drain_outcome(fixture, drained, kind, fallback, evicted):
    out = nm.drain_outcome(load(fixture))
    assert (out["drained"], out["kind"], out["fallback"], out["evicted"]) == (drained, kind, fallback, evicted)
    assert out["reason"]


def test_drain_outcome_rejects_non_results():
    with pytest.raises(nm.MaintenanceError):
        nm.drain_outcome("node drained")


# --------------------------------------------------------------------------- twin stand-in

def test_twin_cordon_drain_uncordon_round_trip_and_decisions():
    st = nm.twin_apply({}, "read", "node03")
    assert nm.decide(st["node"], st["objects"])["action"] == "drain"
    st = nm.twin_apply(st, "cordon", "node03", rollout_id="r1")
    assert st["node"]["spec"]["unschedulable"] is True
    assert st["node"]["metadata"]["annotations"][nm.ROLLOUT_ANNOTATION] == "r1"
    resumed = nm.decide(st["node"], st["objects"])
    assert resumed["ours"] and resumed["uncordon"]
    st = nm.twin_apply(st, "drain", "node03")
    st = nm.twin_apply(st, "uncordon", "node03")
    assert "unschedulable" not in st["node"]["spec"]
    assert nm.ROLLOUT_ANNOTATION not in st["node"]["metadata"]["annotations"]
    with pytest.raises(nm.MaintenanceError):
        nm.twin_apply(st, "reboot", "node03")


def test_twin_drain_refused_by_pdb_unless_deleting():
    st = nm.twin_apply({}, "read", "node03")
    st["node"]["metadata"]["annotations"][nm.TWIN_REFUSE] = "pdb"
    out = nm.drain_outcome(nm.twin_drain_result(st, "node03"))
    assert (out["drained"], out["kind"], out["fallback"]) == (False, "pdb", True)
    assert nm.drain_outcome(nm.twin_drain_result(st, "node03", disable_eviction=True))["drained"]


def test_twin_state_with_other_actor_objects():
    st = nm.twin_apply({"objects": load("nodemaintenance-nvidia-ready.k8s_info.json")["resources"]}, "read", "gpu-a02")
    assert nm.decide(st["node"], st["objects"])["action"] == "join"


# --------------------------------------------------------------------------- plans

def test_batches_follow_ansible_serial_semantics():
    hosts = ["n%d" % i for i in range(1, 8)]
    assert rollout.batches(hosts, 2) == [["n1", "n2"], ["n3", "n4"], ["n5", "n6"], ["n7"]]
    assert rollout.batches(hosts, "30%") == [["n1", "n2"], ["n3", "n4"], ["n5", "n6"], ["n7"]]   # int(2.1)
    assert rollout.batches(hosts, "10%") == [[h] for h in hosts]                                # at least 1
    assert rollout.batches(hosts, [1, "50%"]) == [["n1"], ["n2", "n3", "n4"], ["n5", "n6", "n7"]]
    assert rollout.batches(hosts, 0) == [hosts]
    assert rollout.batches(hosts, "2") == rollout.batches(hosts, 2)


@pytest.mark.parametrize("bad", ["0%", "150%", "two", -1, True, [], "20 percent"])
def test_bad_serial_is_named(bad):
    with pytest.raises(rollout.RolloutError) as err:
        rollout.parse_serial(bad)
    assert "rollout_serial" in str(err.value)


def test_default_serial_is_one_for_control_plane_pools_and_twenty_percent_for_workers():
    assert rollout.default_serial(["cp1", "cp2"], ["cp1", "cp2", "cp3"]) == 1
    assert rollout.default_serial(["cp1", "w1"], ["cp1"]) == "20%"
    assert rollout.default_serial([], ["cp1"]) == "20%"


def test_plan_flags_batches_with_two_control_plane_nodes():
    p = rollout.plan("gpu_workers", ["cp1", "w1", "cp2", "w2"], 3, ["cp1", "cp2"])
    assert p["batches"] == [["cp1", "w1", "cp2"], ["w2"]]
    assert p["control_plane_conflicts"] == [{"batch": 1, "hosts": ["cp1", "cp2"]}]
    p = rollout.plan("gpu_workers", ["cp1", "w1", "cp2", "w2"], 2, ["cp1", "cp2"])
    assert p["control_plane_conflicts"] == [] and p["serial"] == 2
    assert rollout.batch_of(p, "cp2") == 2 and rollout.batch_of(p, "nope") == 0


def test_layer_selection_by_tags():
    layers = [{"layer": 3, "role": "kernel"}, {"layer": 6, "role": "sriov_vfs"}]
    assert rollout.select_layers(layers, ["all"], []) == layers
    assert rollout.select_layers(layers, ["layer06"], []) == [layers[1]]
    assert rollout.select_layers(layers, ["kernel"], []) == [layers[0]]
    assert rollout.select_layers(layers, ["all"], ["layer03"]) == [layers[1]]
    assert rollout.select_layers(layers, ["layer06"], [], wanted=["layer03"]) == [layers[0]]
    assert rollout.select_layers(layers, ["nccl"], []) == []
    with pytest.raises(rollout.RolloutError):
        rollout.select_layers([{"role": "kernel"}], ["all"], [])


def test_signals_read_dotted_fact_paths():
    facts = {"kernel_missing_args": ["intel_iommu=on"], "bios_plan": {"reset_needed": False, "stage": {}},
             "nic_firmware_reboot_required": True}
    paths = ["kernel_missing_args", "bios_plan.reset_needed", "bios_plan.stage", "nic_firmware_reboot_required",
             "sriov_vfs_result.changed"]
    assert rollout.signals(facts, paths) == ["kernel_missing_args", "nic_firmware_reboot_required"]


# --------------------------------------------------------------------------- report merging

def test_merge_reports_of_slices():
    slice1 = {"node01": {"verdict": {"status": "pass"}}, "node02": {"verdict": {"status": "fail", "layer": 6}}}
    slice2 = {"node03": {"verdict": {"status": "pass"}}}
    out = rollout.merge_reports([slice1, None, slice2])
    assert list(out["report"]) == ["node01", "node02", "node03"]
    assert out["conflicts"] == [] and out["fragments"] == 2


def test_merge_reports_keeps_the_newer_record_of_a_host_and_names_it():
    old = {"node04": {"outcome": "failed", "generated": "2026-08-30T07:00:00+00:00"}}
    new = {"node04": {"outcome": "changed", "generated": "2026-08-30T08:00:00+00:00"}}
    assert rollout.merge_reports([new, old])["report"]["node04"]["outcome"] == "changed"
    out = rollout.merge_reports([old, new])
    assert out["report"]["node04"]["outcome"] == "changed" and out["conflicts"] == ["node04"]
    # without stamps the later fragment wins
    assert rollout.merge_reports([{"a": 1}, {"a": 2}])["report"] == {"a": 2}
    with pytest.raises(rollout.RolloutError):
        rollout.merge_reports([["node01"]])


def test_rollout_records_become_fragments_and_lines():
    rec = {"host": "node04", "outcome": "failed", "batch": 2, "batches": 3, "rollout": "7",
           "gate": {"status": "fail", "layer": 1}, "failure": "Hold the node when the health gate fails: layer 1"}
    assert rollout.record_fragment(rec) == {"node04": rec}
    assert rollout.record_line(rec) == ("node04: failed, batch 2 of 3, rollout 7, gate fail: "
                                        "Hold the node when the health gate fails: layer 1")
    with pytest.raises(rollout.RolloutError):
        rollout.record_fragment({"outcome": "changed"})


def test_drain_outcome_of_a_failure_registered_with_failed_when_false():
    res = dict(load("drain-pdb.k8s_drain.json"), failed=False, failed_when_result=False)
    out = nm.drain_outcome(res)
    assert (out["drained"], out["kind"]) == (False, "pdb")
