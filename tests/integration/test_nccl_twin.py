"""Layer 15 on a live 2-node, 2-switch twin rack configured lossless (as
test_fabric_twin.py does): nccl_validate in hosts mode (the default where
no Kubernetes runs) starts the twin's mpirun/all_reduce_perf and passes the
gate; with the nccl-socket-fallback fault on one node only that node's
ranks fall back to sockets and the job fails: the role and the doctor's
layer 15 check fail that node with the socket reason, the other node (its
ranks used NET/IB) warns naming it, and the doctor writes report.json,
report.xml and report.html."""

import json
import xml.etree.ElementTree as ET

import pytest

from tests.integration.twinlab import recap, require_twin, roce_rack, task_lines
from tests.integration.report_clicks import CHROMIUM, click_every_cell, junit_lines

pytestmark = [pytest.mark.twin, pytest.mark.layers("all")]

SITE = """
- name: Layer 15
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.nccl_validate
"""

# What validate.yml does for a layer, for layer 15 alone.
DOCTOR = """
- name: Check every GPU node, layer 15
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Read the node once, as validate.yml does (its NICs come with layer 5)
      gpufabric.stack.doctor:
        layers: [5]
      register: doctor_node

    - name: Layer 15
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        tasks_from: layers
      vars:
        doctor_layers:
          - {layer: 15, role: nccl_validate}

    - name: Report on every host of the play
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        apply:
          delegate_to: localhost
          run_once: true
      vars:
        doctor_hosts: "{{ ansible_play_hosts_all }}"
"""
# Layer 10 as test_container_runtime_twin.py converges it on the GPU nodes.
RUNTIME = """
- name: Layer 10 on the GPU nodes
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.container_runtime
"""
SOCKET = "NCCL used NET/Socket instead of NET/IB"
PEER = "all_reduce_perf with node02 failed: node02 used NET/Socket"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_twin()
    t = roce_rack(tmp_path_factory, "nc")
    work = tmp_path_factory.mktemp("nccl")
    (work / "site.yml").write_text(SITE)
    (work / "doctor.yml").write_text(DOCTOR)
    (work / "runtime.yml").write_text(RUNTIME)
    t.work = work
    yield t
    t.down()


def play(t, name, out):
    return t.playbook(str(t.work / name), "-e", "doctor_report_dir=%s" % out,
                      "-e", "nccl_validate_result_file=%s/nccl_validate-last.json" % out)


def test_healthy_rack_passes_the_gate(lab, tmp_path):
    proc = play(lab, "site.yml", tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert all(r["failed"] == 0 for r in recap(proc.stdout).values())
    last = json.loads((tmp_path / "nccl_validate-last.json").read_text())
    plan, gate = last["plan"], last["gate"]
    assert plan["mode"] == "hosts" and plan["hosts"] == ["node01", "node02"]
    env = plan["env"]
    assert env["NCCL_IB_TC"] == "106" and env["NCCL_DEBUG"] == "INFO"
    assert env["NCCL_IB_HCA"] == "=rocep59s0f0:1,rocep134s0f0:1"
    assert env["NCCL_SOCKET_IFNAME"] == "=enp59s0f0np0" and env["NCCL_IB_GID_INDEX"].isdigit()
    # 2 x 400 Gb/s ConnectX-7 per node, from nic_facts
    assert plan["link_speed_gbps"] == 400 and plan["nics_per_node"] == 2 and plan["expected_busbw_gbs"] == 100.0
    assert gate["passed"] and gate["transport"] == "IB", gate["reason"]
    assert gate["largest_size"] == 8 << 30 and gate["busbw"] >= gate["threshold"] == 85.0
    assert gate["parsed"]["nranks"] == 16
    assert gate["parsed"]["transports_by_host"] == {"node01": ["IB"], "node02": ["IB"]}
    assert "NET/IB : Using [0]rocep59s0f0:1/RoCE [1]rocep134s0f0:1/RoCE" in last["output"]


def test_doctor_layer15_passes_on_a_healthy_rack(lab, tmp_path):
    proc = play(lab, "doctor.yml", tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    for node in ("node01", "node02"):
        (r,) = report[node]["layers"]
        assert (r["layer"], r["name"], r["status"]) == (15, "nccl_validate", "pass"), r
        assert r["reason"].startswith("busbw ") and "node01, node02 (16 ranks)" in r["evidence"][0]
        assert report[node]["verdict"]["status"] == "pass"
    # the run's PFs come from the doctor's one read of each node
    assert task_lines(proc.stdout, "Read the NICs of the node, unless the doctor's reading of it is given") == [
        "skipping: [node01]", "skipping: [node02]"]


def test_socket_fallback_fails_layer15(lab, tmp_path):
    lab.fault("node02", "nccl-socket-fallback")
    try:
        proc = play(lab, "site.yml", tmp_path / "site")
        assert proc.returncode != 0
        rc = recap(proc.stdout)
        # the role fails the node that fell back, not its peer
        assert rc["node02"]["failed"] == 1 and rc["node01"]["failed"] == 0, rc
        said = " ".join(proc.stdout.split())
        assert "layer 15 on node02 (run over node01, node02): " + SOCKET in said
        assert "layer 15 on node01" not in said
        doc = play(lab, "doctor.yml", tmp_path / "doctor")
        assert doc.returncode == 0, doc.stdout[-4000:] + doc.stderr[-2000:]
    finally:
        lab.fault("node02", "clear")
    # the job: each node printed the network its own ranks picked, and the
    # job failed while connecting, before any row
    last = json.loads((tmp_path / "site" / "nccl_validate-last.json").read_text())
    gate, out = last["gate"], last["output"]
    assert gate["kind"] == "socket" and gate["parsed"]["rows"] == [] and gate["transport"] == "mixed"
    assert gate["parsed"]["transports_by_host"] == {"node01": ["IB"], "node02": ["Socket"]}
    node01 = [ln for ln in out.splitlines() if ln.startswith("node01:")]
    node02 = [ln for ln in out.splitlines() if ln.startswith("node02:")]
    assert any("NET/IB : Using [0]rocep59s0f0:1/RoCE [1]rocep134s0f0:1/RoCE" in ln for ln in node01)
    assert not any("NET/Socket" in ln or "No device found" in ln for ln in node01)
    assert any("NET/IB : No device found." in ln for ln in node02)
    assert any("NET/Socket : Using" in ln for ln in node02) and not any("NET/IB : Using" in ln for ln in node02)

    report = json.loads((tmp_path / "doctor" / "report.json").read_text())
    v = report["node02"]["verdict"]
    assert (v["status"], v["layer"], v["reason"]) == ("fail", 15, SOCKET)
    (r,) = report["node02"]["layers"]
    assert r["status"] == "fail" and r["reason"] == SOCKET and "NCCL_IB_HCA" in r["remediation"]
    assert "node02: NCCL transport NET/Socket" in r["evidence"]
    assert any(e.startswith("node02:") and "NET/Socket : Using" in e for e in r["evidence"])
    # the evidence is node02's own: no NET line of node01
    assert not [e for e in r["evidence"] if e.startswith("node01:")]
    # node01's ranks used NET/IB: it warns, naming the node that broke the job
    (w,) = report["node01"]["layers"]
    assert (w["layer"], w["status"], w["reason"]) == (15, "warn", PEER)
    assert "node02" in w["remediation"] and "node01: NCCL transport NET/IB" in w["evidence"]
    assert any(e.startswith("node01:") and "NET/IB : Using" in e for e in w["evidence"])
    assert report["node01"]["verdict"]["status"] == "warn"
    suites = {s.get("name"): s for s in ET.parse(tmp_path / "doctor" / "report.xml").getroot()}
    failure = suites["node02"].find("testcase/failure")
    assert failure.get("message") == SOCKET and failure.get("type") == "layer15"
    assert suites["node01"].find("testcase/failure") is None
    page = (tmp_path / "doctor" / "report.html").read_text()
    assert '<td class="cell fail" id="cell-node02-15"' in page
    assert '<td class="cell warn" id="cell-node01-15"' in page


def test_every_layer_reports_through_its_real_check_and_reads_back(lab, tmp_path):
    """validate.yml on the rack converged through layer 10, with node02's
    NCCL ranks falling back to sockets: every layer of both nodes has the
    result of its own check (none blocked; 11-14 skipped by their checks, no
    cluster), report.xml carries one line per evidence item, and in headless
    Chromium a click on every cell of report.html shows that cell's reason,
    evidence and fix."""
    tags = ",".join("layer%02d" % n for n in range(1, 10))
    converge = lab.playbook("playbooks/site.yml", "--tags", tags)
    assert converge.returncode == 0, converge.stdout[-4000:] + converge.stderr[-2000:]
    runtime = play(lab, "runtime.yml", tmp_path / "converge")
    assert runtime.returncode == 0, runtime.stdout[-4000:] + runtime.stderr[-2000:]
    lab.fault("node02", "nccl-socket-fallback")
    try:
        proc = lab.playbook("playbooks/validate.yml", "-e", "doctor_report_dir=%s" % tmp_path,
                            "-e", "nccl_validate_result_file=%s/nccl_validate-last.json" % tmp_path)
    finally:
        lab.fault("node02", "clear")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    # a read-only run: changed=0 on every host, the report files written all the same
    changed = dict((h, r["changed"]) for h, r in recap(proc.stdout).items())
    assert set(changed) == {"node01", "node02", "leaf1", "leaf2"} and set(changed.values()) == {0}, \
        "\n".join(line for line in proc.stdout.splitlines() if line.startswith(("TASK", "changed:")))
    report = json.loads((tmp_path / "report.json").read_text())
    for node in ("node01", "node02"):
        rows = report[node]["layers"]
        # every layer but the switches' own (7, in the leaf rows)
        assert [r["layer"] for r in rows] == [n for n in range(1, 16) if n != 7], node
        assert not [r for r in rows if r["status"] == "blocked"], rows
        by = dict((r["layer"], r) for r in rows)
        assert all(by[n]["status"] == "pass" for n in (1, 2, 3, 4, 5, 6, 8, 9, 10)), rows
        assert all(by[n]["status"] == "skipped" and by[n]["reason"].startswith("no cluster") for n in (11, 12, 13, 14))
        for r in rows:
            assert isinstance(r["evidence"], list) and all(isinstance(e, str) for e in r["evidence"]), r
    assert report["node02"]["layers"][-1]["status"] == "fail" and report["node02"]["layers"][-1]["reason"] == SOCKET
    assert report["node01"]["layers"][-1]["status"] == "warn"
    assert [r["status"] for r in report["leaf1"]["layers"]] == ["pass"]

    # report.xml: one line per evidence item, then the fix
    lines = junit_lines(tmp_path / "report.xml")
    for host, entry in report.items():
        for r in entry["layers"]:
            kind, got = lines[(host, r["layer"])]
            fix = ["remediation: " + r["remediation"]] if r["remediation"] else []
            if r["status"] == "fail":
                assert (kind, got) == ("failure", r["evidence"] + fix), (host, r)
            elif r["status"] == "warn":
                assert (kind, got) == ("system-out", ["warn: " + r["reason"]] + r["evidence"] + fix), (host, r)
            elif r["status"] == "pass" and (r["evidence"] or fix):
                assert (kind, got) == ("system-out", r["evidence"] + fix), (host, r)
    # layer 1's evidence is the BMC's one line, not one character per line
    kind, got = lines[("node01", 1)]
    assert len(got) == 1 and got[0].startswith("Dell Inc. PowerEdge") and len(got[0]) > 20, got

    if CHROMIUM is None:
        pytest.skip("chromium is not installed (scripts/setup-host.sh installs Debian's chromium package)")
    clicks = click_every_cell(tmp_path / "report.html", tmp_path)
    assert len(clicks) == sum(len(e["layers"]) for e in report.values())
    for host, entry in report.items():
        for r in entry["layers"]:
            cell = "cell-%s-%d" % (host, r["layer"])
            seen = clicks[cell]
            assert seen["selected"] == cell and seen["hash"] == "#" + cell, seen
            assert r["reason"] in seen["text"] and r["status"] in seen["text"], (cell, seen)
            assert seen["evidence"] == r["evidence"], (cell, seen)
            assert ("fix: " + r["remediation"]) in seen["text"] if r["remediation"] else "fix: " not in seen["text"]
