"""gpufabric.stack.roce_switch through ansible-playbook against a fleet of twin
switches (one per NOS) served on 127.0.0.1: converge, idempotent re-run,
rollback on a rejected command and on a dropped connection, drift, check mode."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("netmiko")
from simlab.switches import SwitchFleet, inject_fault, load_switch  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
SPECS = [
    {"name": "onyx1", "nos": "onyx", "ports": ["1/1", "1/2", "1/3"], "gpu": ["ethernet 1/1", "ethernet 1/2"]},
    {"name": "nvue1", "nos": "nvue", "ports": ["swp1", "swp2", "swp3"], "gpu": ["swp1", "swp2"],
     "username": "cumulus", "password": "CumulusLinux!"},
    {"name": "eos1", "nos": "eos", "ports": ["Ethernet1", "Ethernet2", "Ethernet3"], "gpu": ["Ethernet1", "Ethernet2"]},
    {"name": "nxos1", "nos": "nxos", "ports": ["Ethernet1/1", "Ethernet1/2", "Ethernet1/3"],
     "gpu": ["Ethernet1/1", "Ethernet1/2"]},
    {"name": "sonic1", "nos": "sonic-dell", "ports": ["Eth1/1", "Eth1/2", "Eth1/3"], "gpu": ["Eth1/1", "Eth1/2"]},
    {"name": "sonicc1", "nos": "sonic-community", "ports": ["Ethernet0", "Ethernet4", "Ethernet8"],
     "gpu": ["Ethernet0", "Ethernet4"]},
]
INTENT = {"pfc_priority": 3, "trust": "dscp", "dscp_map": {26: 3, 48: 6},
          "ecn": {"tc": 3, "min_kbytes": 150, "max_kbytes": 1500, "probability": 100},
          "cnp": {"priority": 6, "strict": True}, "mtu": 9216, "mtu_per_nos": {"eos": 9214}}

PLAY = """
- name: roce_switch against the twin
  hosts: leaf_switches
  gather_facts: false
  tasks:
    - name: Run the module
      gpufabric.stack.roce_switch:
        name: "{{ inventory_hostname }}"
        host: 127.0.0.1
        port: "{{ switch_ssh_port }}"
        nos: "{{ switch_nos }}"
        username: "{{ switch_username }}"
        password: "{{ switch_password }}"
        known_hosts: "{{ switch_known_hosts }}"
        ports: "{{ switch_gpu_ports }}"
        config: "{{ intent }}"
        state: "{{ roce_state | default('merged') }}"
      register: r
      ignore_errors: true
    - name: Record
      ansible.builtin.copy:
        content: "{{ r | to_json }}"
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      check_mode: false
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    d = tmp_path_factory.mktemp("roce")
    fleet = SwitchFleet(d / "state", [{k: v for k, v in s.items() if k != "gpu"} for s in SPECS]).start()
    fleet.write_known_hosts(d / "known_hosts")
    hosts = {}
    for s in SPECS:
        srv = fleet.servers[s["name"]]
        hosts[s["name"]] = {"switch_ssh_port": srv.port, "switch_nos": s["nos"], "switch_username": srv.username,
                            "switch_password": srv.password, "switch_gpu_ports": s["gpu"]}
    inv = {"all": {"children": {"leaf_switches": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "switch_known_hosts": str(d / "known_hosts"), "intent": INTENT}}}}}
    (d / "hosts.yml").write_text(json.dumps(inv))
    (d / "play.yml").write_text(PLAY)
    yield fleet, d
    fleet.stop()


def run(lab, *extra, limit=None, **extravars):
    fleet, d = lab
    out = d / "out"
    out.mkdir(exist_ok=True)
    for f in out.glob("*.json"):
        f.unlink()
    ev = dict(extravars, out_dir=str(out))
    cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(d / "hosts.yml"), str(d / "play.yml"), "-e", json.dumps(ev), *extra]
    if limit:
        cmd += ["--limit", limit]
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"), ANSIBLE_FORKS="5")
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    res = {f.stem: json.loads(f.read_text()) for f in out.glob("*.json")}
    assert res, p.stdout + p.stderr
    return res


def running(lab, name):
    fleet, d = lab
    m = load_switch(d / "state", name)
    if m.nos == "nvue":
        return "\n".join(m.render_commands(m.running))
    return m.render_running(m.running)


def test_converge_rerun_faults_drift(lab):
    fleet, d = lab
    names = [s["name"] for s in SPECS]
    # check mode on the factory switches: commands computed, nothing sent
    factory = {n: running(lab, n) for n in names}
    res = run(lab, "--check")
    for n in names:
        assert res[n]["changed"] and res[n]["commands"], (n, res[n])
        assert running(lab, n) == factory[n], n
    # converge every NOS from factory state
    res = run(lab)
    for n in names:
        assert not res[n].get("failed"), (n, res[n].get("msg"))
        assert res[n]["changed"] and res[n]["after"]["ports"], n
        m = load_switch(d / "state", n)
        assert m.startup == m.running, n
        for s in SPECS:
            if s["name"] == n:
                v = m.port_view(s["ports"][0])
                assert v["pfc_priorities"] == [3] and v["trust"] == "dscp", (n, v)
                assert v["mtu"] == (9214 if s["nos"] == "eos" else 9216), (n, v)
                assert v["ecn"] == {"tc": 3, "min_bytes": 150000, "max_bytes": 1500000}, (n, v)
                assert v["cnp_strict_tc"] == 6 and v["dscp_map"][26] == 3 and v["dscp_map"][48] == 6, (n, v)
    # a re-run sends nothing and uses at most two show commands
    res = run(lab)
    for n in names:
        assert res[n]["changed"] is False and res[n]["commands"] == [], (n, res[n])
        assert res[n]["show_commands"] <= 2, (n, res[n]["show_commands"])
    # drift: PFC off and MTU low show up in gathered
    for s in SPECS:
        inject_fault(d / "state", s["name"], "switch-pfc-off", ports=[s["gpu"][1]])
        inject_fault(d / "state", s["name"], "switch-mtu-low", ports=[s["gpu"][0]], mtu=1500)
    res = run(lab, roce_state="gathered")
    for s in SPECS:
        n = s["name"]
        drift = "\n".join(res[n]["drift"])
        assert "PFC off (intent priority 3)" in drift, (n, drift)
        assert "MTU 1500 below" in drift, (n, drift)
        canon = list(res[n]["gathered"]["ports"])
        assert any(line.startswith(canon[0] + ":") and "MTU 1500" in line for line in res[n]["drift"]), (n, drift)
    # a rejected command: the module fails naming switch, command and error; running config unchanged
    for s in SPECS:
        inject_fault(d / "state", s["name"], "clear")
    before = {n: running(lab, n) for n in names}
    for s in SPECS:
        pattern = r"mtu" if s["nos"] != "nvue" else r"mtu"
        inject_fault(d / "state", s["name"], "switch-rejects-command", pattern=pattern)
    res = run(lab)
    for n in names:
        assert res[n].get("failed"), (n, res[n])
        msg = res[n]["msg"]
        assert msg.startswith(n + ":") and "rejected" in msg and "mtu" in msg, (n, msg)
        assert running(lab, n) == before[n], n
    # a dropped connection mid-push: same guarantees
    for s in SPECS:
        inject_fault(d / "state", s["name"], "clear")
        # community SONiC's push here is two lines (mtu, pfc priority): cut it after the first
        inject_fault(d / "state", s["name"], "switch-ssh-drops-mid-push",
                     after=1 if s["nos"] == "sonic-community" else 2)
    res = run(lab)
    for n in names:
        assert res[n].get("failed"), (n, res[n])
        msg = res[n]["msg"]
        assert msg.startswith(n + ":") and "connection dropped while sending '" in msg, (n, msg)
        assert running(lab, n) == before[n], (n, running(lab, n))
    for s in SPECS:
        inject_fault(d / "state", s["name"], "clear")
    res = run(lab)
    for n in names:
        assert not res[n].get("failed") and res[n]["changed"], (n, res[n].get("msg"))
