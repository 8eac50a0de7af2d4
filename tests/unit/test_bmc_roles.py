"""Roles bmc (layer 1) and bios (layer 2) against the twin's BMCs, with the
in-memory power driver; the managed hosts use the local connection."""

import json
import os
import re
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.bmc import faults, state
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab

pytestmark = pytest.mark.layers(1, 2)

REPO = Path(__file__).resolve().parents[2]
PLAYBOOK_BIN = Path(sys.executable).with_name("ansible-playbook")

SPEC = [
    {"name": "dell1", "port": 0, "vendor": "dell", "username": "root", "password": "calvin",
     "container": "c-dell1"},
    {"name": "smc1", "port": 0, "vendor": "supermicro", "username": "ADMIN",
     "password": "smc-pw", "container": "c-smc1"},
]

PLAYBOOK = """
- name: Doctor before
  hosts: nodes
  gather_facts: false
  tasks:
    - gpufabric.stack.doctor: {layers: [1]}
      register: d1
    - gpufabric.stack.doctor: {layers: [2]}
      register: d2
    - ansible.builtin.set_fact: {r1: "{{ d1.results[0] }}", r2: "{{ d2.results[0] }}"}
- name: Converge
  hosts: nodes
  gather_facts: false
  roles: [gpufabric.stack.bmc, gpufabric.stack.bios]
- name: Doctor after
  hosts: nodes
  gather_facts: false
  tasks:
    - gpufabric.stack.doctor: {layers: [1, 2]}
      register: d
    - ansible.builtin.set_fact: {a1: "{{ d.results[0] }}", a2: "{{ d.results[1] }}"}
    - ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.json"
        content: "{{ {'before': [r1, r2], 'after': [a1, a2], 'system': bmc_system} | to_json }}"
      delegate_to: localhost
      changed_when: false
"""


def _inventory(lab, overrides=None):
    hosts = {}
    for e in SPEC:
        h = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
             "bmc_address": f"127.0.0.1:{lab.bmcs[e['name']].port}",
             "bmc_username": e["username"], "bmc_password": e["password"],
             "bmc_vendor": "auto", "bios_cpu_vendor": e.get("cpu_vendor", "intel"),
             "bmc_reset_delay": 0, "bmc_reset_timeout": 30,
             # the reset path waits for a new boot marker; the power driver writes it
             "gpufabric_boot_time_command": f"cat {lab.state_dir}/boot-{e['container']}"}
        h.update((overrides or {}).get(e["name"], {}))
        hosts[e["name"]] = h
    return {"all": {"children": {"nodes": {"hosts": hosts}}}}


def _run(tmp_path, lab, playbook, *extra, overrides=None):
    inv = tmp_path / "inv.json"
    inv.write_text(json.dumps(_inventory(lab, overrides)))
    pb = tmp_path / "pb.yml"
    pb.write_text(playbook)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_FORKS="2", ANSIBLE_PIPELINING="1",
               ANSIBLE_HOST_KEY_CHECKING="0")
    return subprocess.run([str(PLAYBOOK_BIN), "-i", str(inv), str(pb), "-e", f"out={out}", *extra],
                          env=env, capture_output=True, text=True, timeout=180)


def _task_hosts(stdout, task):
    """{host: status} of one task in a run's output (ok, changed, skipping, ...)."""
    part = stdout.split(f"TASK [{task}]", 1)[1].split("TASK [", 1)[0]
    return {m.group(2): m.group(1) for m in re.finditer(r"^(\w+): \[([^\]\s]+)", part, re.M)}


def _recap(stdout):
    return {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
            for m in re.finditer(r"^(\S+)\s+:\s+(ok=.*)$", stdout, re.M)}


def boot_lab(tmp_path, **driver_kw):
    """A BmcLab of SPEC under tmp_path/lab whose power driver writes each
    node's boot marker (the reset path waits for it to change)."""
    boots = {}

    def on_boot(container):
        boots[container] = boots.get(container, 0) + 1
        (tmp_path / "lab" / f"boot-{container}").write_text("%d\n" % boots[container])

    driver = FakePowerDriver(on_boot=on_boot, **driver_kw)
    (tmp_path / "lab").mkdir(exist_ok=True)
    for e in SPEC:
        (tmp_path / "lab" / f"boot-{e['container']}").write_text("0\n")
    return BmcLab(tmp_path / "lab", SPEC, driver), driver


@pytest.mark.slow
@pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv")
def test_roles_converge_idempotent_and_doctor(tmp_path):
    lab, driver = boot_lab(tmp_path, initial="On", states={"c-dell1": "Off"})
    lab.start()
    try:
        # bad input fails before any change, naming the variable
        bad = _run(tmp_path, lab,
                   "- hosts: nodes\n  gather_facts: false\n  roles: [gpufabric.stack.bios]\n",
                   overrides={"smc1": {"bmc_vendor": "fujitsu"}, "dell1": {"bmc_password": ""}})
        assert bad.returncode != 0
        assert "bmc_vendor" in bad.stdout and "fujitsu" in bad.stdout
        assert "dell1: bmc_password must not be empty" in bad.stdout
        assert "smc-pw" not in bad.stdout
        assert driver.events == []

        # check mode changes nothing
        chk = _run(tmp_path, lab, PLAYBOOK, "--check")
        assert chk.returncode == 0, chk.stdout[-4000:] + chk.stderr[-2000:]
        assert driver.events == []
        assert state.load_bios(tmp_path / "lab/nodes/dell1")["pending"] == {}

        first = _run(tmp_path, lab, PLAYBOOK)
        assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
        res = {n: json.loads((tmp_path / "out" / f"{n}.json").read_text()) for n in
               ("dell1", "smc1")}
        second = _run(tmp_path, lab, PLAYBOOK)
        assert second.returncode == 0, second.stdout[-4000:]
        res2 = {n: json.loads((tmp_path / "out" / f"{n}.json").read_text()) for n in res}
        events_after_second = list(driver.events)

        # doctor after a fault
        faults.inject(tmp_path / "lab", "smc1", "bios-sriov-off")
        faults.inject(tmp_path / "lab", "dell1", "bmc-unreachable")
        third = _run(tmp_path, lab, PLAYBOOK.split("- name: Converge")[0]
                     + "    - ansible.builtin.copy:\n"
                       "        dest: \"{{ out }}/{{ inventory_hostname }}.f.json\"\n"
                       "        content: \"{{ [r1, r2] | to_json }}\"\n"
                       "      delegate_to: localhost\n")
        assert third.returncode == 0, third.stdout[-4000:]
    finally:
        lab.stop()

    # layer 1 before: dell was off
    assert res["dell1"]["before"][0]["reason"] == "power off"
    assert res["dell1"]["before"][0]["status"] == "fail"
    assert res["smc1"]["before"][0]["status"] == "pass"
    # layer 2 before: factory BIOS has SR-IOV off
    assert {r["before"][1]["reason"] for r in res.values()} == {"SR-IOV disabled in BIOS"}
    # converge: dell powered on, one reset per node, everything passes
    assert ("on", "c-dell1") in driver.events
    for c in ("c-dell1", "c-smc1"):
        assert [e for e in events_after_second if e[1] == c and "restart" in e[0]] == [
            ("force-restart", c)]
    for n, r in res.items():
        assert [x["status"] for x in r["after"]] == ["pass", "pass"], (n, r["after"])
    assert res["smc1"]["system"]["model"] == "SYS-821GE-TNHR"
    assert res["dell1"]["system"]["power_state"] == "On"
    data = state.load_bios(tmp_path / "lab/nodes/dell1")
    assert data["pending"] == {}
    assert {k: data["current"][k] for k in ("SriovGlobalEnable", "ProcVirtualization",
                                           "PcieAcsControl")} == {
        "SriovGlobalEnable": "Enabled", "ProcVirtualization": "Enabled",
        "PcieAcsControl": "Disabled"}
    # the node the role powered on was waited for; the other one (on, its boot
    # order as wanted) did not even include the power tasks, nor did either
    # node in the second run
    wait = "gpufabric.stack.bmc : Wait until the powered-on node answers"
    power = "gpufabric.stack.bmc : Power the node on and set its boot order"
    assert _task_hosts(first.stdout, wait) == {"dell1": "ok"}
    assert _task_hosts(first.stdout, power) == {"smc1": "skipping"}
    assert re.search(r"^included: \S+/power\.yml for dell1$", first.stdout, re.M), first.stdout[-4000:]
    assert f"TASK [{wait}]" not in second.stdout
    assert _task_hosts(second.stdout, power) == {"dell1": "skipping", "smc1": "skipping"}
    # one Redfish read per node for layers 1 and 2: the bios role takes the bmc
    # role's unless layer 1 changed the node (dell1 powered on: read again)
    # (the trust and the read are one include, skipped as one task)
    include = "gpufabric.stack.bios : Trust the BMC and read the current and pending BIOS attributes through Redfish"
    read = "gpufabric.stack.bios : Read the current and pending BIOS attributes through Redfish"
    assert _task_hosts(first.stdout, include) == {"smc1": "skipping"}
    assert _task_hosts(first.stdout, read) == {"dell1": "ok"}
    assert _task_hosts(second.stdout, include) == {"dell1": "skipping", "smc1": "skipping"}
    assert f"TASK [{read}]" not in second.stdout
    # second run: nothing changed
    recap = _recap(second.stdout)
    assert set(recap) == {"dell1", "smc1"}
    assert all(v["changed"] == 0 for v in recap.values()), recap
    assert events_after_second == driver.events[:len(events_after_second)]
    # the doctor after faults
    f_smc = json.loads((tmp_path / "out" / "smc1.f.json").read_text())
    assert f_smc[0]["status"] == "pass" and f_smc[1]["reason"] == "SR-IOV disabled in BIOS"
    assert "SR_IOVSupport_" in f_smc[1]["evidence"][0]
    f_dell = json.loads((tmp_path / "out" / "dell1.f.json").read_text())
    assert f_dell[0]["reason"] == "BMC unreachable" and f_dell[1]["status"] == "fail"


@pytest.mark.slow
@pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv")
def test_reset_path_fails_when_the_node_never_boots_again(tmp_path):
    """A reset the BMC accepts but the node never goes through (the boot
    marker stays) fails naming the host, where waiting for the connection
    alone passed."""
    driver = FakePowerDriver(initial="On")  # no on_boot: the marker never changes
    lab = BmcLab(tmp_path / "lab", SPEC, driver)
    (tmp_path / "lab").mkdir(exist_ok=True)
    for e in SPEC:
        (tmp_path / "lab" / f"boot-{e['container']}").write_text("7\n")
    lab.start()
    try:
        proc = _run(tmp_path, lab, "- hosts: dell1\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.include_role: {name: gpufabric.stack.bmc, tasks_from: reset}\n",
                    overrides={"dell1": {"bmc_reset_timeout": 3}})
    finally:
        lab.stop()
    assert proc.returncode != 0
    assert driver.events == [("force-restart", "c-dell1")]
    assert "dell1: no new boot within 3 s" in proc.stdout
    assert "boot marker it had before the reset (7)" in proc.stdout
    assert "calvin" not in proc.stdout


# The doctor action reads each BMC once, on the controller, for layers 1 and
# 2 together; each layer alone judges the same.
READ_ONCE = """
- name: Each layer alone
  hosts: nodes
  gather_facts: false
  tasks:
    - gpufabric.stack.doctor: {layers: [1]}
      register: d1
    - gpufabric.stack.doctor: {layers: [2]}
      register: d2
- name: The doctor's one read
  hosts: nodes
  gather_facts: false
  tasks:
    - gpufabric.stack.doctor: {layers: [1, 2]}
      register: once
    - ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.once.json"
        content: "{{ {'own': [d1.results[0], d2.results[0]], 'once': once.results, 'calls': once.nic_facts_calls} | to_json }}"
      delegate_to: localhost
      changed_when: false
"""


@pytest.mark.slow
@pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv")
def test_the_doctors_one_bmc_read_judges_as_each_layer_alone(tmp_path):
    driver = FakePowerDriver(initial="On", states={"c-dell1": "Off"})
    lab = BmcLab(tmp_path / "lab", SPEC, driver)
    lab.start()
    try:
        faults.inject(tmp_path / "lab", "smc1", "bios-sriov-off")
        run = _run(tmp_path, lab, READ_ONCE)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        # wrong credentials, through the doctor's read, at -vvv
        bad = _run(tmp_path, lab, READ_ONCE.replace("dest: \"{{ out }}/{{ inventory_hostname }}.once.json\"",
                                                    "dest: \"{{ out }}/{{ inventory_hostname }}.bad.json\""),
                   "-vvv", overrides={"smc1": {"bmc_password": "not-the-password"}})
        assert bad.returncode == 0, bad.stdout[-4000:] + bad.stderr[-2000:]
    finally:
        lab.stop()
    res = {n: json.loads((tmp_path / "out" / f"{n}.once.json").read_text()) for n in ("dell1", "smc1")}
    # layers 1 and 2 need no read of the node: no nic_facts execution
    assert {r["calls"] for r in res.values()} == {0}
    assert res["dell1"]["once"][0]["reason"] == "power off"
    # layer 2 above a failing layer 1 is blocked in one call, judged alone
    assert res["dell1"]["once"][1]["status"] == "blocked" and res["dell1"]["own"][1]["status"] == "fail"
    assert res["smc1"]["once"] == res["smc1"]["own"]
    assert res["smc1"]["once"][0]["status"] == "pass" and "Supermicro" in res["smc1"]["once"][0]["evidence"][0]
    assert res["smc1"]["once"][1]["reason"] == "SR-IOV disabled in BIOS"
    wrong = json.loads((tmp_path / "out" / "smc1.bad.json").read_text())
    assert wrong["once"][0] == wrong["own"][0]
    assert wrong["once"][0]["reason"] == "wrong credentials"
    assert wrong["once"][0]["evidence"] and all(isinstance(e, str) for e in wrong["once"][0]["evidence"])
    assert "not-the-password" not in bad.stdout + bad.stderr


TRUST = """
- name: Converge layers 1 and 2
  hosts: nodes
  gather_facts: false
  roles: [gpufabric.stack.bmc, gpufabric.stack.bios]
- name: The doctor's layer 1
  hosts: nodes
  gather_facts: false
  tasks:
    - gpufabric.stack.doctor: {layers: [1]}
      register: d
    - ansible.builtin.copy:
        dest: "{{ out }}/{{ inventory_hostname }}.trust.json"
        content: "{{ d.results[0] | to_json }}"
      delegate_to: localhost
      changed_when: false
"""


@pytest.mark.slow
@pytest.mark.skipif(not PLAYBOOK_BIN.exists(), reason="ansible-playbook not in this virtualenv")
def test_a_bmc_is_pinned_on_first_contact_and_a_changed_certificate_gets_no_credential(tmp_path):
    """bmc_known_certs beside the inventory: the first run pins both BMCs'
    certificates (as openssl fingerprints them); a BMC that then presents
    another certificate is refused by the bmc and bios roles and by the
    doctor, naming the BMC and both fingerprints, and receives no request
    carrying a credential, while the other BMC converges; removing its line
    pins the new certificate."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.bios import bmc_trust
    from simlab.bmc.server import ensure_certificate
    lab, driver = boot_lab(tmp_path, initial="On")
    lab.start()
    known = tmp_path / "bmc_known_certs.txt"       # beside inv.json, the inventory
    try:
        first = _run(tmp_path, lab, TRUST)
        assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
        pem = (tmp_path / "lab" / "bmc" / "tls" / "cert.pem").read_text()
        pinned = bmc_trust.fingerprint(ssl.PEM_cert_to_DER_cert(pem))
        assert sorted(known.read_text().splitlines()) == sorted(
            "127.0.0.1:%d %s" % (lab.bmcs[n].port, pinned) for n in ("dell1", "smc1"))
        assert "pinned on first contact" in first.stdout + first.stderr
        faults.inject(tmp_path / "lab", "dell1", "bmc-cert-changed")
        other = bmc_trust.fingerprint(ssl.PEM_cert_to_DER_cert(
            ensure_certificate(tmp_path / "lab", replaced_for="dell1")[0].read_text()))
        sent = faults.credentials_received(tmp_path / "lab", "dell1")
        # the doctor first, then the roles, in one run
        doctor_play, converge_play = TRUST.split("- name: The doctor's layer 1\n")[1], TRUST.split("- name: The doctor's")[0]
        refused = _run(tmp_path, lab, "- name: The doctor's layer 1\n" + doctor_play + converge_play, "-vvv")
        assert faults.credentials_received(tmp_path / "lab", "dell1") == sent
        assert refused.returncode != 0
        where = "127.0.0.1:%d" % lab.bmcs["dell1"].port
        assert ("dell1: %s presents certificate %s, but %s is pinned for it: refused before any credential is sent"
                % (where, other, pinned)) in refused.stdout
        recap = _recap(refused.stdout)
        assert recap["dell1"]["failed"] == 1 and recap["smc1"]["failed"] == 0, recap
        assert "calvin" not in refused.stdout + refused.stderr
        # the bios role alone refuses it too (its read is the first thing it sends)
        bios = _run(tmp_path, lab, "- hosts: dell1\n  gather_facts: false\n  roles: [gpufabric.stack.bios]\n")
        assert bios.returncode != 0 and "refused before any credential is sent" in bios.stdout, bios.stdout[-3000:]
        assert faults.credentials_received(tmp_path / "lab", "dell1") == sent
        layer1 = json.loads((tmp_path / "out" / "dell1.trust.json").read_text())
        assert layer1["status"] == "fail", layer1
        assert layer1["reason"] == "BMC certificate not trusted"
        assert other in layer1["evidence"][0] and pinned in layer1["evidence"][0]
        assert "remove its line from bmc_known_certs" in layer1["remediation"]
        # accepted on purpose: its line removed, the next run pins the new one
        known.write_text("".join(line + "\n" for line in known.read_text().splitlines() if not line.startswith(where)))
        again = _run(tmp_path, lab, TRUST)
        assert again.returncode == 0, again.stdout[-4000:]
        assert "%s %s" % (where, other) in known.read_text().splitlines()
    finally:
        lab.stop()
