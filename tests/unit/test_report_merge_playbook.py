"""playbooks/report-merge.yml on the report directories of two job slices:
doctor reports and rollout records merge into one report.json and
rollout.json; a host in two fragments keeps its newer record."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.layers("all")

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
           ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", PYTHONPATH=str(REPO))


def layer(n, name, status, reason="ok"):
    return {"layer": n, "name": name, "status": status, "reason": reason, "evidence": [], "remediation": ""}


def doctor_entry(status):
    layers = [layer(1, "bmc", "pass"), layer(6, "sriov_vfs", status, "pf x: 8 VFs, inventory wants 4")]
    verdict = ({"status": "pass", "layer": None, "reason": "all checked layers healthy"} if status == "pass"
               else {"status": "fail", "layer": 6, "reason": "pf x: 8 VFs, inventory wants 4", "remediation": ""})
    return {"verdict": verdict, "layers": layers}


def rollout_record(host, outcome, generated):
    return {"host": host, "outcome": outcome, "batch": 1, "batches": 1, "rollout": "41", "generated": generated,
            "gate": {"status": "pass"}, "failure": "" if outcome != "failed" else "Drain the node: refused"}


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_two_slices_merge_into_one_report(tmp_path):
    write(tmp_path / "41" / "report.json", {"node01": doctor_entry("pass"), "node02": doctor_entry("fail")})
    write(tmp_path / "42" / "report.json", {"node03": doctor_entry("pass")})
    write(tmp_path / "41" / "rollout" / "node01.json", rollout_record("node01", "changed", "2026-08-30T07:00:00"))
    write(tmp_path / "41" / "rollout" / "node03.json", rollout_record("node03", "failed", "2026-08-30T07:00:00"))
    write(tmp_path / "42" / "rollout" / "node03.json", rollout_record("node03", "changed", "2026-08-30T09:00:00"))
    write(tmp_path / "report.json", {"stale": doctor_entry("fail")})     # an earlier merge: an output, not a slice
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", "localhost,",
                           "-c", "local", str(REPO / "playbooks/report-merge.yml"),
                           "-e", f"report_merge_root={tmp_path}", "-e", "report_merge_fail_on_error=true"],
                          cwd=REPO, env=ENV, capture_output=True, text=True)
    assert proc.returncode != 0, "node02 fails layer 6: the merge gate must fail"
    report = json.loads((tmp_path / "report.json").read_text())
    assert sorted(report) == ["node01", "node02", "node03"]
    assert report["node02"]["verdict"]["layer"] == 6
    merged = json.loads((tmp_path / "rollout.json").read_text())
    assert sorted(merged) == ["node01", "node03"] and merged["node03"]["outcome"] == "changed"
    out = json.loads(proc.stdout)
    msgs = [h.get("msg") for p in out["plays"] for t in p["tasks"] for h in t["hosts"].values()]
    assert any(isinstance(m, str) and "rollout node03" in m for m in msgs), msgs
    table = next(m for m in msgs if isinstance(m, list) and m and m[0].startswith("host"))
    assert any(line.startswith("node02") and "layer 6" in line for line in table)
    fail = [m for m in msgs if isinstance(m, str) and m.startswith("node02")]
    assert fail and "report.json" in fail[0]
