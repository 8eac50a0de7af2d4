"""The doctor's report outputs: JUnit XML (one testsuite per host, one
testcase per layer), the HTML rack view, the coloured and plain tables; and
roles/doctor writing report.json, report.xml and report.html."""

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.filter import doctor as doctor_filters
from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, doctor_report

pytestmark = pytest.mark.layers("all")

REPO = Path(__file__).resolve().parents[2]


def rack():
    """Three nodes (healthy, failing at 6, warning at 4), one switch failing
    at 7, and evidence with characters XML and HTML must escape."""
    out = {}
    plans = {
        "gpu-a01": {},
        "gpu-a02": {6: ("fail", "pf enp59s0f0np0: 4 VFs, inventory wants 8")},
        "gpu-a03": {4: ("warn", "firmware change pending a reboot: NUM_OF_VFS current 16 next 8")},
    }
    for host, special in plans.items():
        res = []
        for n in (1, 2, 3, 4, 5, 6, 8, 9, 15):
            st, why = special.get(n, ("pass", "layer %d healthy" % n))
            res.append(doctor.result(n, st, why, ["<tag> & \"quote\" %d" % n, "\x1b[31mcolour\x1b[0m"],
                                     "fix %d" % n if st != "pass" else ""))
        res.append(doctor.result(12, "skipped", "no Kubernetes"))
        v, rows = doctor.verdict(res)
        out[host] = {"verdict": v, "layers": rows}
    v, rows = doctor.verdict([doctor.result(7, "fail", "leaf-r0 swp2: PFC priority None (intent 3)", ["swp2"],
                                            "site.yml --tags layer07")])
    out["leaf-r0"] = {"verdict": v, "layers": rows}
    return out


def count(report, host, *statuses):
    return sum(1 for r in report[host]["layers"] if r["status"] in statuses)


def test_junit_counts_and_content():
    report = rack()
    root = ET.fromstring(doctor_report.junit_xml(report, "rack A", "2026-01-01T00:00:00"))
    assert root.tag == "testsuites" and root.get("name") == "rack A"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == set(report)
    total = 0
    for host, suite in suites.items():
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases) == len(report[host]["layers"])
        assert int(suite.get("failures")) == len(suite.findall("testcase/failure")) == count(report, host, "fail")
        assert int(suite.get("skipped")) == len(suite.findall("testcase/skipped")) == count(
            report, host, "blocked", "skipped")
        assert suite.get("errors") == "0" and suite.get("timestamp") == "2026-01-01T00:00:00"
        assert {c.get("classname") for c in cases} == {"gpufabric.doctor.%s" % host}
        for c, r in zip(cases, report[host]["layers"]):
            assert c.get("name") == "layer %02d %s" % (r["layer"], r["name"])
            f = c.find("failure")
            if r["status"] == "fail":
                assert f.get("message") == r["reason"] and f.get("type") == "layer%02d" % r["layer"]
                assert r["evidence"][0] in f.text and "remediation: " + r["remediation"] in f.text
                assert "\x1b" not in f.text          # control characters are not XML 1.0
            else:
                assert f is None
            s = c.find("skipped")
            assert (s is not None) == (r["status"] in ("blocked", "skipped"))
            if r["status"] == "blocked":
                assert "blocked by layer" in s.get("message")
            if r["status"] == "warn":
                assert c.find("system-out").text.startswith("warn: " + r["reason"])
        total += len(cases)
        prop = suite.find("properties/property[@name='verdict']")
        v = report[host]["verdict"]
        assert (v["reason"] in prop.get("value")) == (v["status"] == "fail")
    assert int(root.get("tests")) == total
    assert int(root.get("failures")) == sum(count(report, h, "fail") for h in report) == 2
    assert int(root.get("skipped")) == sum(count(report, h, "blocked", "skipped") for h in report)


def test_junit_empty_report():
    root = ET.fromstring(doctor_report.junit_xml({}))
    assert root.get("tests") == "0" and root.findall("testsuite") == []


def test_html_contains_every_host_and_layer():
    report = rack()
    cabling = [{"node": "gpu-a01", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "switch": "leaf-r0",
                "port": "swp1"},
               {"node": "gpu-a02", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "switch": "leaf-r0",
                "port": "swp2"}]
    page = doctor_report.html_report(report, ["leaf-r0", "leaf-r1"], cabling, "rack <A>")
    assert page.startswith("<!DOCTYPE html>") and "<title>rack &lt;A&gt;</title>" in page
    for host, entry in report.items():
        assert 'data-host="%s"' % host in page
        for r in entry["layers"]:
            m = re.search(r'<td class="cell ([a-z]+)" id="cell-%s-%d"[^>]*title="([^"]*)"' % (
                re.escape(host), r["layer"]), page)
            assert m, (host, r["layer"])
            assert m.group(1) == r["status"]
            assert escape_attr(r["reason"]) in m.group(2)
    # a column per layer of the stack, checked or not
    for n in range(1, 16):
        assert ">L%d<small>" % n in page
    # switches: a grid row, a card with its ports, a box and cables in the drawing
    assert 'class="rows-switches"' in page and 'data-switch="leaf-r0"' in page and 'data-switch="leaf-r1"' in page
    assert page.count("<line ") == len(cabling)
    assert re.search(r'<line class="fail"[^>]*><title>gpu-a02 enp59s0f0np0 \u2194 leaf-r0 swp2', page)
    # nothing raw: the evidence is escaped in the attributes and inside the JSON block
    assert "<tag>" not in page
    data = json.loads(re.search(r'<script type="application/json" id="doctor-data">(.*?)</script>', page,
                                re.S).group(1))
    assert data["report"] == json.loads(json.dumps(report))
    # the verdict column says what is wrong first
    assert "layer 6: pf enp59s0f0np0: 4 VFs, inventory wants 8" in page
    assert "warn at layer 4: firmware change pending a reboot" in page


def escape_attr(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def test_table_plain_and_coloured():
    report = rack()
    plain = doctor_report.table(report)
    assert not any("\x1b[" in line for line in plain)
    assert plain == doctor_filters.doctor_table(report)
    coloured = doctor_report.table(report, color=True)
    strip = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in coloured]
    assert strip == plain                     # same table, same alignment
    row = [line for line in coloured if line.startswith("gpu-a02")][0]
    assert "\x1b[1;31mFAIL   \x1b[0m" in row and "\x1b[1;31mlayer 6: " in row
    assert "\x1b[90mblocked\x1b[0m" in row
    assert "\x1b[32mok     \x1b[0m" in [line for line in coloured if line.startswith("gpu-a01")][0]
    assert "\x1b[33mwarn   \x1b[0m" in [line for line in coloured if line.startswith("gpu-a03")][0]


def test_use_color():
    assert doctor_filters.doctor_use_color(True) is True
    assert doctor_filters.doctor_use_color(False) is False
    assert doctor_filters.doctor_use_color("yes") is True and doctor_filters.doctor_use_color("0") is False
    from ansible.utils.color import ANSIBLE_COLOR
    assert doctor_filters.doctor_use_color(None) is bool(ANSIBLE_COLOR)


PLAY = """
- name: Fake layer results
  hosts: nodes
  gather_facts: false
  tasks:
    - name: Results
      ansible.builtin.set_fact:
        doctor_results: "{{ results[inventory_hostname] }}"

- name: Report
  hosts: nodes
  gather_facts: false
  tasks:
    - name: Report on every host of the play
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        apply:
          delegate_to: localhost
          run_once: true
      vars:
        doctor_hosts: "{{ ansible_play_hosts_all + ['gone'] }}"
"""


@pytest.mark.parametrize("color", [False, True])
def test_doctor_role_writes_three_reports(tmp_path, color):
    """roles/doctor on the controller: report.json in its existing format,
    report.xml and report.html; the table in colour only when asked."""
    report = rack()
    results = {h: [r for r in report[h]["layers"] if r["status"] != "blocked"] for h in ("gpu-a01", "gpu-a02")}
    (tmp_path / "hosts.yml").write_text(textwrap.dedent("""
        all:
          children:
            nodes:
              hosts:
                gpu-a01: {ansible_connection: local}
                gpu-a02: {ansible_connection: local}
            leaf_switches:
              hosts:
                leaf-r0: {ansible_connection: local}
        """))
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "vars.json").write_text(json.dumps({
        "results": results, "doctor_report_dir": str(tmp_path / "reports"), "doctor_color": color,
        "ansible_python_interpreter": sys.executable,
        "gpufabric_cabling": [{"node": "gpu-a01", "pf": "enp59s0f0np0", "switch": "leaf-r0", "port": "swp1"}]}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONPATH=str(REPO))
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml"), "-e", "@%s" % (tmp_path / "vars.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    out = tmp_path / "reports"
    data = json.loads((out / "report.json").read_text())
    assert set(data) == {"gpu-a01", "gpu-a02", "gone"}
    assert data["gpu-a02"]["verdict"]["layer"] == 6 and data["gpu-a01"]["verdict"]["status"] == "pass"
    assert data["gone"]["verdict"] == {"status": "fail", "layer": 1,
                                       "reason": "host unreachable: no layer could be checked"}
    root = ET.fromstring((out / "report.xml").read_text())
    assert sorted(s.get("name") for s in root.findall("testsuite")) == ["gone", "gpu-a01", "gpu-a02"]
    assert int(root.get("failures")) == 2               # gpu-a02 layer 6, gone layer 1
    page = (out / "report.html").read_text()
    assert 'id="cell-gpu-a02-6"' in page and 'id="cell-gone-1"' in page and "<line " in page
    ansi = "\x1b[1;31mFAIL" in proc.stdout
    assert ansi is color
    # the table is printed either way (the plain one through debug, which may fold long lines)
    assert re.search(r"layer\s+6: pf enp59s0f0np0: 4 VFs, inventory wants 8", proc.stdout)


def test_the_report_action_writes_through_host_files_only_what_differs(tmp_path):
    from ansible_collections.gpufabric.stack.plugins.action import doctor_report as action
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files
    texts = action.contents(rack(), "rack r0", ["leaf-r0"], [], "generated 2026-11-27 10:00 UTC")
    assert sorted(texts) == ["report.html", "report.json", "report.xml"]
    assert json.loads(texts["report.json"]) == json.loads(doctor_report.json_report(rack()))
    # a report directory as the role's default gives it (playbook_dir/../reports), not there yet
    dest = str(tmp_path / "playbooks" / ".." / "reports")
    files, plan = action.planned(dest, texts)
    assert [f["path"] for f in files] == [str(tmp_path / "reports" / n) for n in sorted(texts)]
    assert [p["state"] for p in plan] == ["created"] * 3
    host_files.apply(files, plan)
    assert oct((tmp_path / "reports" / "report.json").stat().st_mode & 0o777) == "0o644"
    files, plan = action.planned(dest, texts)
    assert [p["state"] for p in plan] == ["unchanged"] * 3
    files, plan = action.planned(dest, dict(texts, **{"report.html": texts["report.html"] + " "}))
    assert [p["path"] for p in plan if p["state"] != "unchanged"] == [str(tmp_path / "reports" / "report.html")]
    # a record the writers refuse: nothing to write
    bad = rack()
    bad["gpu-a01"]["layers"][0]["evidence"] = "one string"
    with pytest.raises(ValueError):
        action.contents(bad, "rack r0", [], [], "")


def test_html_draws_a_cable_where_lldp_found_it_marked_against_the_plan():
    report = rack()
    cabling = [{"node": "gpu-a01", "pf": "enp59s0f0np0", "switch": "leaf-r0", "port": "swp1"},
               {"node": "gpu-a02", "pf": "enp59s0f0np0", "switch": "leaf-r0", "port": "swp7",
                "planned_switch": "leaf-r0", "planned_port": "swp2"}]
    page = doctor_report.html_report(report, ["leaf-r0", "leaf-r1"], cabling, "rack")
    assert re.search(r"<line class=\"fail\"[^>]*><title>gpu-a01 enp59s0f0np0 \u2194 leaf-r0 swp1: fail</title>", page)
    assert re.search(r'<line class="fail moved"[^>]*><title>gpu-a02 enp59s0f0np0 \u2194 leaf-r0 swp7: fail '
                     r'\(as LLDP found it; the plan says leaf-r0 swp2\)</title>', page)
