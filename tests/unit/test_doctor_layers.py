"""How the doctor walks a host's layers (roles/doctor/tasks/layers.yml and
gate.yml): a layer's check runs only while no layer below it failed, every
layer gets a result (the check's own, skipped for --skip-tags, blocked above
the first failure), a check that stops with an error is recorded as that
layer's failure, and a gate run again in the same play never reports an
earlier gate's result. Real roles (kernel, rdma_drivers) on twin kernel trees
read by nic_facts over a local connection; plugin_utils.doctor's
earlier_failure and layer_results directly."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
from test_twin_kernel import make

pytestmark = pytest.mark.layers("all")

REPO = Path(__file__).resolve().parents[2]
LAYERS = [{"layer": 3, "role": "kernel"}, {"layer": 5, "role": "rdma_drivers"}, {"layer": 6, "role": "sriov_vfs"}]


def res(layer, status, reason="r"):
    return doctor.result(layer, status, reason)


def test_results_per_layer_skipped_checked_then_blocked():
    given = [res(3, "pass"), res(5, "fail", "module x"), res(6, "pass", "checked all the same")]
    out = doctor.layer_results(LAYERS, [], given)
    assert [(r["layer"], r["status"]) for r in out] == [(3, "pass"), (5, "fail"), (6, "blocked")]
    assert out[2]["reason"] == "blocked by layer 5" and out[2]["name"] == "sriov_vfs"
    assert doctor.earlier_failure(LAYERS[:1], [], given) is None
    assert doctor.earlier_failure(LAYERS[:2], [], given)["reason"] == "module x"
    # a layer given to --skip-tags is neither checked nor looked at
    out = doctor.layer_results(LAYERS, ["layer05"], given)
    assert [(r["layer"], r["status"]) for r in out] == [(3, "pass"), (5, "skipped"), (6, "pass")]
    assert out[1]["reason"] == "not checked: --skip-tags layer05" and out[1]["name"] == "rdma_drivers"
    assert doctor.earlier_failure(LAYERS[:2], ["layer05"], given) is None


def test_a_check_without_a_result_is_that_layers_failure():
    out = doctor.layer_results(LAYERS, [], [res(3, "pass")])
    assert [(r["layer"], r["status"]) for r in out] == [(3, "pass"), (5, "fail"), (6, "blocked")]
    assert out[1]["reason"] == "the rdma_drivers check stopped with an error"


PLAY = """
- name: The doctor over layers 3 and 5
  hosts: nodes
  gather_facts: false
  tasks:
    - name: As validate.yml checks a node
      block:
        - name: Read the node once and check layers 3 and 5
          gpufabric.stack.doctor: {layers: [3, 5]}
          register: doctor_node
      always:
        - name: Record the layers
          ansible.builtin.import_role:
            name: gpufabric.stack.doctor
            tasks_from: layers
            rolespec_validate: false
          vars:
            doctor_layers:
              - {layer: 3, role: kernel}
              - {layer: 5, role: rdma_drivers}
            doctor_node_results: "{{ doctor_node.results | default([]) }}"

    - name: Report on every host of the play
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        apply:
          delegate_to: localhost
          run_once: true
      vars:
        doctor_hosts: "{{ ansible_play_hosts_all }}"
"""

GATE = """
- name: The gate twice in one play, the second time with layer 5's check stopping
  hosts: nodes
  gather_facts: false
  tasks:
    - name: Gate
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        tasks_from: gate
      vars:
        doctor_gate_layers: [{layer: 3, role: kernel}, {layer: 5, role: rdma_drivers}]
        doctor_gate_fail: false

    - name: Keep the first gate's results
      ansible.builtin.set_fact:
        first_gate: "{{ doctor_results }}"
        second_gate: true

    - name: Gate again
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        tasks_from: gate
      vars:
        doctor_gate_layers: [{layer: 3, role: kernel}, {layer: 5, role: rdma_drivers}]
        doctor_gate_fail: false

- name: Write what the gates recorded
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Write the results of both gates
      ansible.builtin.copy:
        content: >-
          {{ {'first': hostvars['good'].first_gate, 'second': hostvars['good'].doctor_results,
              'good2': hostvars['good2'].doctor_gate} | to_json }}
        dest: "{{ out_dir }}/gates.json"
        mode: "0644"
"""


def node(tmp_path, name, cmdline):
    _k, t, _ = make(cmdline=cmdline)
    root = tmp_path / name
    t.materialize(str(root / "sys"))
    (root / "proc").mkdir()
    (root / "proc" / "cmdline").write_text(cmdline + "\n")
    return {"ansible_connection": "local", "gpufabric_sysfs_root": str(root / "sys"),
            "gpufabric_proc_root": str(root / "proc"),
            "gpufabric_nics": [{"match": {"pci_address": "0000:3b:00.0"}, "num_vfs": 4}]}


def run(tmp_path, hosts, play, *args, group="nodes"):
    (tmp_path / "hosts.json").write_text(json.dumps({group: {"hosts": hosts}}))
    (tmp_path / "play.yml").write_text(play)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
               ANSIBLE_NOCOLOR="1", PYTHONPATH=str(REPO))
    return subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.json"),
                           str(tmp_path / "play.yml"), "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", "doctor_report_dir=%s" % (tmp_path / "reports"), "-e", "out_dir=%s" % tmp_path]
                          + list(args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def layers_of(tmp_path):
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    return {h: [(r["layer"], r["status"], r["reason"]) for r in v["layers"]] for h, v in report.items()}


# a GPU node converged: the IOMMU on, ACS redirect off on its PCIe switches
FLAGS = "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt pci=disable_acs_redir=pci:1000:c030"


@pytest.fixture()
def rack(tmp_path):
    hosts = {"good": node(tmp_path, "good", FLAGS), "noflag": node(tmp_path, "noflag", "BOOT_IMAGE=/vmlinuz ro"),
             "broken": node(tmp_path, "broken", FLAGS)}
    # layer 5's check cannot even template its input on this host: it stops with an error
    hosts["broken"]["rdma_drivers_modules"] = "{{ a_variable_nobody_defined }}"
    return hosts


def test_layers_run_in_order_and_stop_above_the_first_failure(tmp_path, rack):
    proc = run(tmp_path, rack, PLAY)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-2000:]  # broken's check failed
    got = layers_of(tmp_path)
    assert [g[:2] for g in got["good"]] == [(3, "pass"), (5, "pass")]
    assert got["noflag"] == [(3, "fail", "flag intel_iommu=on iommu=pt pci=disable_acs_redir=pci:1000:c030 missing from /proc/cmdline"),
                             (5, "blocked", "blocked by layer 3")]
    assert got["broken"] == [(3, "pass", "kernel arguments present and IOMMU active; ACS redirect off between the GPUs and their NICs"),
                             (5, "fail", "the rdma_drivers check stopped with an error")]
    # the error is named on the host whose check stopped, with the variable's error
    said = " ".join(proc.stdout.split())
    assert "broken: the layer 5 (rdma_drivers) check stopped with an error" in said
    assert "a_variable_nobody_defined" in said
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert any("a_variable_nobody_defined" in e for e in report["broken"]["layers"][1]["evidence"])


def test_a_skipped_layer_is_recorded_and_does_not_block(tmp_path, rack):
    del rack["broken"]
    proc = run(tmp_path, rack, PLAY, "--skip-tags", "layer03")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    got = layers_of(tmp_path)
    for host in ("good", "noflag"):
        assert [g[:2] for g in got[host]] == [(3, "skipped"), (5, "pass")]
        assert got[host][0][2] == "not checked: --skip-tags layer03"


def test_a_second_gate_in_the_play_never_reports_the_firsts_result(tmp_path, rack):
    good = rack["good"]
    # layer 5's input templates on the first gate and not on the second
    good["rdma_drivers_modules"] = "{{ ['mlx5_core', 'mlx5_ib'] if not second_gate | default(false) else nowhere }}"
    # a second node that passes both gates keeps the play going after good fails
    proc = run(tmp_path, {"good": good, "good2": node(tmp_path, "good2", FLAGS)}, GATE)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-2000:]
    gates = json.loads((tmp_path / "gates.json").read_text())
    assert [(r["layer"], r["status"]) for r in gates["first"]] == [(3, "pass"), (5, "pass")]
    assert [(r["layer"], r["status"], r["reason"]) for r in gates["second"]] == [
        (3, "pass", "kernel arguments present and IOMMU active; ACS redirect off between the GPUs and their NICs"),
        (5, "fail", "the rdma_drivers check stopped with an error")]
    assert gates["good2"]["verdict"]["status"] == "pass"


CLUSTER = """
- name: The doctor over layer 3 and the cluster layer 11
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Read the node once and check layer 3
      gpufabric.stack.doctor: {layers: [3]}
      register: doctor_node

    - name: Record the layers, layer 11 read from the cluster by layers.yml
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        tasks_from: layers
      vars:
        doctor_layers: [{layer: 3, role: kernel}, {layer: 11, role: kubeadm}]
        doctor_node_results: "{{ doctor_node.results }}"

    - name: Write what each host recorded and what the cluster read returned
      ansible.builtin.copy:
        content: "{{ {'results': doctor_results, 'cluster': doctor_cluster.hosts | default(none)} | to_json }}"
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


def test_layers_reads_the_cluster_layers_of_its_list_once_for_the_play(tmp_path, rack):
    del rack["broken"]
    proc = run(tmp_path, rack, CLUSTER, group="gpu_workers")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # one read for the play, registered on every host
    assert proc.stdout.count("TASK [gpufabric.stack.doctor : Read the Kubernetes API once") == 1, proc.stdout[-3000:]
    got = {h: json.loads((tmp_path / (h + ".json")).read_text()) for h in ("good", "noflag")}
    assert got["good"]["cluster"] == got["noflag"]["cluster"] and sorted(got["good"]["cluster"]) == ["good", "noflag"]
    # no control-plane host: layer 11 skipped with the reason, and above a failed layer 3 blocked
    assert [(r["layer"], r["status"]) for r in got["good"]["results"]] == [(3, "pass"), (11, "skipped")]
    assert got["good"]["results"][1]["reason"] == got["good"]["cluster"]["good"][0]["reason"]
    assert "no kube_control_plane host" in got["good"]["results"][1]["reason"], got["good"]
    assert [(r["layer"], r["status"], r["reason"]) for r in got["noflag"]["results"]] == [
        (3, "fail", "flag intel_iommu=on iommu=pt pci=disable_acs_redir=pci:1000:c030 missing from /proc/cmdline"), (11, "blocked", "blocked by layer 3")]
    # a list without cluster layers: the read is asked for none and returns no record
    proc = run(tmp_path, rack, CLUSTER.replace(", {layer: 11, role: kubeadm}", ""), group="gpu_workers")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    got = json.loads((tmp_path / "good.json").read_text())
    assert got["cluster"] == {} and [(r["layer"], r["status"]) for r in got["results"]] == [(3, "pass")]


# validate.yml's play over layer 3 and the fabric layer 9
FABRIC = PLAY.replace("{layers: [3, 5]}", "{layers: [3]}").replace(
    "- {layer: 5, role: rdma_drivers}", "- {layer: 9, role: rdma_check}")


def test_a_fabric_layers_bad_variable_is_named_before_its_tasks_run(tmp_path, rack):
    assert FABRIC.count("rdma_check") == 1 and "rdma_drivers" not in FABRIC
    del rack["broken"]
    # layer 3 passes on good, so its layer 9 is due; noflag's is blocked by layer 3
    rack["good"]["rdma_check_pairs"] = "bogus"
    rack["noflag"]["rdma_check_pairs"] = "bogus"
    proc = run(tmp_path, rack, FABRIC)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-2000:]
    said = " ".join(proc.stdout.split())
    # the host, the role, the variable and its value, from the check on the role's doctor entry point
    assert ("good: variables that do not match the argument spec of their role, nothing changed: rdma_check: "
            "value of rdma_check_pairs must be one of: ring, all, got: bogus") in said, proc.stdout[-3000:]
    assert "noflag: variables that do not match" not in said
    # none of layer 9's own tasks ran
    assert "TASK [gpufabric.stack.rdma_check :" not in proc.stdout
    got = layers_of(tmp_path)
    assert got["good"][1] == (9, "fail", "the rdma_check check stopped with an error")
    assert got["noflag"][1] == (9, "blocked", "blocked by layer 3")


def test_a_fabric_layer_skipped_by_tag_is_neither_checked_nor_run(tmp_path, rack):
    del rack["broken"], rack["noflag"]
    rack["good"]["rdma_check_pairs"] = "bogus"
    proc = run(tmp_path, rack, FABRIC, "--skip-tags", "layer09")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "variables that do not match" not in proc.stdout
    assert "TASK [gpufabric.stack.rdma_check :" not in proc.stdout
    assert layers_of(tmp_path)["good"] == [
        (3, "pass", "kernel arguments present and IOMMU active; ACS redirect off between the GPUs and their NICs"),
        (9, "skipped", "not checked: --skip-tags layer09")]


def test_a_doctor_action_that_records_nothing_leaves_the_node_layers_to_the_record(tmp_path, rack):
    del rack["broken"], rack["noflag"]
    # the action refuses its arguments: it records no layer at all
    play = PLAY.replace("gpufabric.stack.doctor: {layers: [3, 5]}", "gpufabric.stack.doctor: {layers: [3, 5], no_such_option: 1}")
    assert play != PLAY
    proc = run(tmp_path, rack, play)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-2000:]
    said = " ".join(proc.stdout.split())
    assert "no_such_option" in said
    # the record names the layers; no node layer's role is looked at as if it were read across nodes
    assert "TASK [gpufabric.stack.doctor : Record the result of every layer]" in proc.stdout
    assert "TASK [gpufabric.stack.doctor : Check against its argument spec" not in proc.stdout
    assert "argument spec 'doctor'" not in said
