"""The gpufabric.stack.rdma_check action (layer 9's coordination across
nodes) in a real ansible-playbook run over three local hosts: the links from
a given nic_facts reading (no execution), one plan for the play that leaves
out a node whose lower layers failed under the doctor, and a round's gate
that reads its servers' results from the other hosts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import test_rdma_pairs as R9
from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs as RP

pytestmark = pytest.mark.layers(9)

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
           ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
NODES = ["node01", "node02", "node03"]

# every play below starts with the links phase on each host
LINKS = """
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Links
      gpufabric.stack.rdma_check:
        phase: links
        reading: reading
        nics: "{{ nics }}"
        cabling: "{{ cabling }}"
        perftest: "{{ settings | default({}) }}"
        share: "{{ share | default(0.9) }}"
      register: rdma_check_linked
"""

PLAY = LINKS + """
    - name: Plan
      gpufabric.stack.rdma_check:
        phase: plan
        pairs: "{{ pairs_mode }}"
        below: [{layer: 5, role: rdma_drivers}]
        perftest: {size: 65536, duration: 5}
      register: rdma_check_planned
      run_once: true

    - name: What the round's perftest_round call answered on this node
      ansible.builtin.set_fact:
        rdma_check_round: "{{ answered }}"
      when: answered is defined

    - name: Gate
      gpufabric.stack.rdma_check:
        phase: gate
        round: 0
        share: 0.9
      register: rdma_check_gated
      run_once: true
      when: answered is defined

    - name: Keep what each phase returned
      ansible.builtin.copy:
        content: "{{ {'linked': rdma_check_linked, 'planned': rdma_check_planned,
                      'gated': rdma_check_gated | default({})} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def inventory(tmp_path, answered, mode="ring", node03_failed=True, extra=None):
    cab = R9.cabling(NODES)
    hosts = {}
    for n, node in enumerate(NODES, start=1):
        hv = {"reading": {"sysfs_root": "/sys", "nics": [R9.pf(0, n), R9.pf(1, n)]}, "nics": R9.NICS,
              "cabling": cab, "out": str(tmp_path), "pairs_mode": mode}
        if node == "node03" and node03_failed:
            # under the doctor, layer 5 failed on node03 in this run
            hv["doctor_checked"] = [{"layer": 5, "name": "rdma_drivers", "status": "fail", "reason": "unbound",
                                     "evidence": [], "remediation": ""}]
        if node in answered:
            hv["answered"] = answered[node]
        hv.update((extra or {}).get(node) or {})
        hosts[node] = hv
    path = tmp_path / "hosts.json"
    path.write_text(json.dumps({"all": {"hosts": hosts}}))
    return path


def run(tmp_path, answered, mode="ring", text=PLAY, **hosts):
    play = tmp_path / "play.yml"
    play.write_text(text)
    return subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i",
                           str(inventory(tmp_path, answered, mode, **hosts)), str(play)],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)


def test_links_plan_and_gate_across_hosts(tmp_path):
    # the plan over node01 and node02 (node03's layer 5 failed): both directions on each rail
    plan = RP.plan_pairs(R9.links(["node01", "node02"]))
    out = R9.perftest_output

    def answer(node, bw):
        serving, sending = RP.round_pairs(plan, 0, node)
        return {"clients": [dict(R9.job(out(bw)), id=p["id"]) for p in sending],
                "servers": [dict(R9.job(""), port=p["port"]) for p in serving], "not_listening": []}

    proc = run(tmp_path, {"node01": answer("node01", 392.0), "node02": answer("node02", 150.0)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    got = dict((n, json.loads((tmp_path / ("%s.json" % n)).read_text())) for n in NODES)

    linked = got["node01"]["linked"]
    assert linked["links"]["node"] == "node01" and linked["links"]["errors"] == []
    assert [p["ok"] for p in linked["links"]["pfs"]] == [True, True]
    assert linked["module_executions"] == 0          # the reading was given
    planned = got["node03"]["planned"]              # run once, registered on every host
    assert planned == got["node01"]["planned"]
    assert planned["nodes"] == ["node01", "node02"] and planned["left_out"] == ["node03"]
    assert planned["plan"]["rounds"] == plan["rounds"] and planned["in_one"] is True
    assert planned["client_timeout"] == 65 and planned["server_timeout"] == 30 + 5 + 60 + 120

    # run once, registered on every host: node01's pairs (its clients at 392 Gb/s) pass, node02's (at 150)
    # fail; node03 is not in the plan
    gated = got["node01"]["gated"]
    assert got["node02"]["gated"] == gated and got["node03"]["gated"] == gated
    assert sorted(gated["by_node"]) == ["node01", "node02"]
    assert [p["status"] for p in gated["by_node"]["node01"]] == ["pass", "pass"]
    assert [p["status"] for p in gated["by_node"]["node02"]] == ["fail", "fail"]
    assert all(p["client"]["node"] == node for node in ("node01", "node02") for p in gated["by_node"][node])
    assert gated["by_node"]["node02"][0]["message"].startswith("node02 enp59s0f0np0 -> node01 enp59s0f0np0")
    assert gated["module_executions"] == 0


def test_the_gate_leaves_out_a_node_that_left_the_play_and_runs_once_only(tmp_path):
    plan = RP.plan_pairs(R9.links(["node01", "node02"]))

    def answer(node):
        serving, sending = RP.round_pairs(plan, 0, node)
        return {"clients": [dict(R9.job(R9.perftest_output(392.0)), id=p["id"]) for p in sending],
                "servers": [dict(R9.job(""), port=p["port"]) for p in serving], "not_listening": []}

    answered = {"node01": answer("node01"), "node02": answer("node02")}
    # node02 fails after the round: it takes no further part and is not gated; node01's pairs, whose
    # servers on node02 answered in the round, are
    gone = PLAY.replace("    - name: Gate\n", "    - name: node02 fails\n      ansible.builtin.fail:\n"
                        "      when: inventory_hostname == 'node02'\n\n    - name: Gate\n")
    proc = run(tmp_path, answered, text=gone)
    assert proc.returncode != 0 and "fatal: [node02]" in proc.stdout, proc.stdout[-3000:]
    gated = json.loads((tmp_path / "node01.json").read_text())["gated"]
    assert sorted(gated["by_node"]) == ["node01"]
    assert [p["status"] for p in gated["by_node"]["node01"]] == ["pass", "pass"]

    # on every host for itself, it would gate every node once per host: an error naming the host
    proc = run(tmp_path, answered, text=PLAY.replace("      run_once: true\n      when: answered", "      when: answered"))
    assert proc.returncode != 0
    assert ("node01: layer 9 gate: it gates every node of the plan at once: run the task with run_once: true"
            in proc.stdout), proc.stdout[-3000:]


def test_a_reading_given_as_a_value_not_a_path_fails_naming_the_host(tmp_path):
    # the answer itself where its variable's path belongs: an error, not a second read of the node
    proc = run(tmp_path, {}, text=LINKS.replace("reading: reading", 'reading: "{{ reading }}"'))
    assert proc.returncode != 0
    assert ("node01: layer 9 links: reading names the variable of the node's nic_facts answer by its dotted path "
            "(e.g. rdma_check_read), got \"{'sysfs_root'") in proc.stdout, proc.stdout[-3000:]


def test_a_bad_pairs_mode_fails_naming_the_host_and_value(tmp_path):
    proc = run(tmp_path, {}, mode="mesh")
    assert proc.returncode != 0
    assert "node01: layer 9 plan: rdma_check_pairs must be one of ring, all, got 'mesh'" in proc.stdout


ROUNDS = LINKS + """
    - name: Plan
      gpufabric.stack.rdma_check:
        phase: plan
        pairs: all
        perftest: {size: 65536, duration: 5}
      register: rdma_check_planned
      run_once: true

    - name: Round 1 answered
      ansible.builtin.set_fact:
        rdma_check_round: "{{ answered[0] }}"

    - name: Gate round 1
      gpufabric.stack.rdma_check:
        phase: gate
        round: 0
      register: rdma_check_gated
      run_once: true

    - name: Round 2 answered
      ansible.builtin.set_fact:
        rdma_check_round: "{{ answered[1] }}"

    - name: Gate round 2
      gpufabric.stack.rdma_check:
        phase: gate
        round: 1
      register: rdma_check_gated
      run_once: true

    - name: Keep the pairs
      ansible.builtin.copy:
        content: "{{ {'planned': rdma_check_planned, 'gated': rdma_check_gated} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def test_the_gate_of_a_later_round_keeps_the_pairs_of_the_earlier_ones(tmp_path):
    # every ordered pair of three nodes: two rounds; node02's clients are slow in round 2 only
    plan = RP.plan_pairs(R9.links(NODES), "all")
    assert len(plan["rounds"]) == 2

    def answer(node, r, bw):
        serving, sending = RP.round_pairs(plan, r, node)
        return {"clients": [dict(R9.job(R9.perftest_output(bw)), id=p["id"]) for p in sending],
                "servers": [dict(R9.job(""), port=p["port"]) for p in serving], "not_listening": []}

    answered = dict((n, [answer(n, 0, 392.0), answer(n, 1, 150.0 if n == "node02" else 392.0)]) for n in NODES)
    proc = run(tmp_path, answered, "all", text=ROUNDS, node03_failed=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    got = dict((n, json.loads((tmp_path / ("%s.json" % n)).read_text())) for n in NODES)
    assert got["node01"]["planned"]["nodes"] == NODES
    for node in NODES:
        pairs = got["node01"]["gated"]["by_node"][node]
        # both rounds' pairs, in round order, each on both rails
        assert [p["round"] for p in pairs] == [1, 1, 2, 2], pairs
        assert all(p["client"]["node"] == node for p in pairs)
        want = ["pass", "pass", "fail", "fail"] if node == "node02" else ["pass"] * 4
        assert [p["status"] for p in pairs] == want


def test_the_test_settings_are_named_on_each_node_before_any_pair_runs(tmp_path):
    keep = LINKS + """
    - name: Keep what the links phase returned
      ansible.builtin.copy:
        content: "{{ rdma_check_linked | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""
    bad = {"node02": {"settings": {"size": 65536, "qps": 0, "traffic_class": "af41"}, "share": "1.5"}}
    play = tmp_path / "play.yml"
    play.write_text(keep)
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i",
                           str(inventory(tmp_path, {}, extra=bad)), str(play)],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    got = dict((n, json.loads((tmp_path / ("%s.json" % n)).read_text())["links"]) for n in NODES)
    assert got["node01"]["errors"] == [] and got["node03"]["errors"] == []
    assert got["node02"]["errors"] == ["rdma_check_gate_share is '1.5', not a number in (0, 1]",
                                       "rdma_check_qps is 0, not a whole number >= 1",
                                       "rdma_check_traffic_class is 'af41', not null or 0-255"]


CABLING_PLAY = """
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Cabling, once for the play
      gpufabric.stack.rdma_check:
        phase: cabling
        cabling: "{{ cabling }}"
        lldp: true
        lldp_readings: reading
      register: rdma_check_cabled
      run_once: true

    - name: Links on the play's cabling verdicts
      gpufabric.stack.rdma_check:
        phase: links
        reading: reading
        nics: "{{ nics }}"
        cabling: "{{ cabling }}"
        lldp: true
        lldp_readings: reading
        cabled: "{{ rdma_check_cabled.by_node[inventory_hostname] }}"
      register: rdma_check_linked

    - name: Links judging the node's cabling itself
      gpufabric.stack.rdma_check:
        phase: links
        reading: reading
        nics: "{{ nics }}"
        cabling: "{{ cabling }}"
        lldp: true
        lldp_readings: reading
      register: alone

    - name: Links on another node's verdicts (the links phase takes what it is given)
      gpufabric.stack.rdma_check:
        phase: links
        reading: reading
        nics: "{{ nics }}"
        cabling: "{{ cabling }}"
        lldp: true
        cabled: "{{ rdma_check_cabled.by_node['node01'] }}"
      register: given

    - name: Keep what each returned
      ansible.builtin.copy:
        content: "{{ {'cabled': rdma_check_cabled, 'linked': rdma_check_linked, 'alone': alone,
                      'given': given} | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def test_the_cabling_is_judged_once_for_the_play_as_each_node_would_judge_its_own(tmp_path):
    """The cabling phase (run once) reads every node's LLDP once and gives each
    node the verdicts the links phase would reach on its own by reading every
    other node's: a cable moved on node02 is named the same either way."""
    cab = R9.cabling(NODES)
    seen = dict((c["node"], []) for c in cab)
    for c in cab:
        port = "swp9" if (c["node"], c["switch"]) == ("node02", "leaf1") else c["port"]
        seen[c["node"]].append({"local": c["pf"], "sysname": c["switch"], "chassis_id": "aa:bb:cc:00:00:01",
                                "port_id": port, "port_id_type": "ifname", "port_descr": ""})
    extra = dict((node, {"reading": {"sysfs_root": "/sys", "nics": [R9.pf(0, n), R9.pf(1, n)],
                                     "lldp": {"neighbors": seen[node], "error": ""}}})
                 for n, node in enumerate(NODES, start=1))
    proc = run(tmp_path, {}, text=CABLING_PLAY, node03_failed=False, extra=extra)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    got = dict((n, json.loads((tmp_path / ("%s.json" % n)).read_text())) for n in NODES)
    assert got["node01"]["cabled"] == got["node03"]["cabled"]       # run once, registered on every host
    assert sorted(got["node01"]["cabled"]["by_node"]) == NODES
    for node in NODES:
        assert got[node]["linked"]["links"] == got[node]["alone"]["links"], node
    status = dict((n, [p["cabling"]["status"] for p in got[n]["linked"]["links"]["pfs"]]) for n in NODES)
    assert status == {"node01": ["ok", "ok"], "node02": ["moved", "ok"], "node03": ["ok", "ok"]}, status
    moved = got["node02"]["linked"]["links"]["pfs"][0]["cabling"]
    assert "leaf1 swp9" in moved["message"], moved
    assert [p["cabling"]["status"] for p in got["node02"]["given"]["links"]["pfs"]] == ["ok", "ok"]


FAIL_PLAY = """
- hosts: all
  connection: local
  gather_facts: false
  tasks:
    - name: Links, failing the node on inventory problems
      gpufabric.stack.rdma_check:
        phase: links
        reading: reading
        nics: "{{ nics }}"
        cabling: "{{ cabling }}"
        share: "{{ share | default(0.9) }}"
        fail_on_errors: true
      register: rdma_check_linked
      ignore_errors: true

    - name: Keep what it returned
      ansible.builtin.copy:
        content: "{{ rdma_check_linked | to_json }}"
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        mode: "0644"
"""


def test_links_fail_the_node_on_inventory_problems_and_keep_the_answer(tmp_path):
    """fail_on_errors: a node whose inventory has problems fails in the links
    phase, every problem named, its answer registered for the plan all the
    same; the other nodes pass."""
    proc = run(tmp_path, {}, text=FAIL_PLAY, node03_failed=False, extra={"node02": {"share": 1.5}})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    got = dict((n, json.loads((tmp_path / ("%s.json" % n)).read_text())) for n in NODES)
    assert got["node02"]["failed"] is True
    assert got["node02"]["msg"] == "layer 9 rdma_check: rdma_check_gate_share is 1.5, not a number in (0, 1]"
    assert got["node02"]["links"]["errors"] == ["rdma_check_gate_share is 1.5, not a number in (0, 1]"]
    for node in ("node01", "node03"):
        assert not got[node].get("failed") and got[node]["links"]["errors"] == [], got[node]
