"""Layer 7 on a mixed rack: one twin switch of each of the six NOS kinds
(Onyx, Cumulus NVUE, Arista EOS, Cisco NX-OS, Dell Enterprise SONiC and
community SONiC) behind two nodes.

playbooks/site.yml --tags layer07 in check mode computes the push for all six
and sends nothing, then converges all six from factory state (the twin's own
view of each GPU port shows the intent), a re-run changes nothing (no
configuration command, at most two show commands a switch), and playbooks/validate.yml
names, on every kind, the four switch faults of simlab/faults.py: PFC off and
MTU low as the differences the doctor reads, a rejected command and an SSH
session cut mid-push as a failed push whose running config is put back, so the
doctor still names the difference the push was to repair. Global PFC switched
off (where the NOS has it) and the PFC watchdog taken off a port are named
too, with the NOS and the fix.

One lab for the module (2 nodes with 3 PFs each, so that every switch has a GPU
port); faults go on every switch at once and validate.yml runs once per round,
limited to the switches and node01 (the report is written by the GPU nodes'
play; node01 is not converged and stops below layer 7, which is not read here)."""

import json
import re
import time

import pytest
import yaml

from tests.integration.twinlab import Twin, recap, require_twin

pytestmark = [pytest.mark.twin, pytest.mark.slow, pytest.mark.layers(7)]

KINDS = ["onyx", "nvue", "eos", "nxos", "sonic-dell", "sonic-community"]
LABEL = {"onyx": "Onyx", "nvue": "Cumulus NVUE", "eos": "Arista EOS", "nxos": "Cisco NX-OS",
         "sonic-dell": "Dell SONiC", "sonic-community": "community SONiC"}
MTU = {nos: 9214 if nos == "eos" else 9216 for nos in KINDS}
WATCHDOG_FIX = {"nvue": "nv set interface {port} qos pfc-watchdog",
                "eos": "priority-flow-control pause watchdog under interface {port}",
                "nxos": "priority-flow-control watch-dog-interval on under interface {port}",
                "sonic-dell": "priority-flow-control watchdog on detect-time 200 under interface {port}",
                "sonic-community": "config pfcwd start --action drop {port} 200 --restoration-time 200"}
GLOBAL_OFF = {"onyx": "global PFC off on Onyx: 'dcb priority-flow-control enable' is not in the running config "
                      "(intent PFC on priority 3; fix: dcb priority-flow-control enable force)",
              # the doctor reads EOS's show priority-flow-control, which says it
              "eos": "global PFC off on Arista EOS: show priority-flow-control says 'Global PFC : Disabled' "
                     "(intent PFC on priority 3; fix: no priority-flow-control all off)"}
# the MTU line is the push's first configuration line on Onyx, NVUE and
# community SONiC; on the others the interface line comes before it
DROP_AFTER = {"onyx": 0, "nvue": 0, "eos": 1, "nxos": 1, "sonic-dell": 1, "sonic-community": 0}
TIMES = {}


class Rack(Twin):
    def site(self, *args, env=None):
        proc = self.playbook("playbooks/site.yml", "--tags", "layer07", *args, env=env)
        return proc, recap(proc.stdout)

    def validate(self):
        (self.reports / "report.json").unlink(missing_ok=True)
        proc = self.playbook("playbooks/validate.yml", "--limit", "leaf_switches,node01")
        path = self.reports / "report.json"
        assert path.exists(), f"no report (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
        return self.report()

    @property
    def state_dir(self):
        from simlab.lab import lab_dir
        return lab_dir(self.name) / "switches"

    def switch_fault(self, switch, kind, **params):
        from simlab.switches.server import inject_fault
        return inject_fault(self.state_dir, switch, kind, **params)

    def running(self, switch):
        from simlab.switches.server import load_switch
        m = load_switch(self.state_dir, switch)
        return m.running


def said(proc):
    return " ".join((proc.stdout + proc.stderr).split()).replace("''", "'")


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    require_twin()
    start = time.monotonic()
    lab = Rack.up(tmp_path_factory, "sw", "--nodes", "2", "--nics", "3", "--switches", "6",
                  "--nos", ",".join(KINDS))
    TIMES["up"] = time.monotonic() - start
    try:
        hosts = yaml.safe_load((lab.inventory / "hosts.yml").read_text())
        sw = hosts["all"]["children"]["leaf_switches"]["hosts"]
        lab.switches = {name: (v["switch_nos"], v["switch_gpu_ports"]) for name, v in sw.items()}
        assert sorted(nos for nos, _ in lab.switches.values()) == sorted(KINDS)
        assert all(len(ports) == 1 for _, ports in lab.switches.values()), lab.switches
        yield lab
    finally:
        lab.down()
        TIMES["total"] = time.monotonic() - start
        print("\nlayer 7 rack times (s): " + ", ".join("%s %.0f" % kv for kv in TIMES.items()))


def intent_on_port(rack, switch, port):
    """The twin's own view of a GPU port (the NOS model's state, not the
    collection's parser) against the rack's RoCE intent."""
    from simlab.switches.server import load_switch
    nos = rack.switches[switch][0]
    roce = yaml.safe_load((rack.inventory / "group_vars" / "all" / "fabric.yml").read_text())["gpufabric_roce"]
    v = load_switch(rack.state_dir, switch).port_view(port)
    assert v["pfc_priorities"] == [roce["priority"]] and v["trust"] == roce["trust"], (nos, v)
    assert v["mtu"] == MTU[nos], (nos, v)
    assert v["ecn"] == {"tc": roce["priority"], "min_bytes": roce["ecn"]["min_kbytes"] * 1000,
                        "max_bytes": roce["ecn"]["max_kbytes"] * 1000}, (nos, v)
    assert v["cnp_strict_tc"] == roce["cnp_priority"], (nos, v)
    assert (v["dscp_map"][roce["dscp"]], v["dscp_map"][roce["cnp_dscp"]]) == (roce["priority"], roce["cnp_priority"]), \
        (nos, v)


def layer7(report, switch):
    (row,) = [r for r in report[switch]["layers"] if r["layer"] == 7]
    return row


def test_converge_rerun_and_faults_on_every_nos(rack):
    names = sorted(rack.switches)
    t = time.monotonic()
    # check mode on the factory switches: the push is computed, nothing is sent
    factory = {n: rack.running(n) for n in names}
    proc, rc = rack.site("--check", "--diff")
    assert {n: (rc[n]["failed"], rc[n]["changed"]) for n in names} == {n: (0, 1) for n in names}, proc.stdout[-4000:]
    assert {n: rack.running(n) for n in names} == factory
    # converge all six from factory state, then a re-run sends nothing and
    # reads each switch with at most two show commands (the task_counter
    # callback records the module's own counts)
    proc, rc = rack.site()
    assert {n: (rc[n]["failed"], rc[n]["changed"]) for n in names} == {n: (0, 1) for n in names}, proc.stdout[-4000:]
    for n, (nos, (port,)) in rack.switches.items():
        intent_on_port(rack, n, port)
    counts = rack.reports / "rerun-counts.json"
    counts.parent.mkdir(parents=True, exist_ok=True)
    proc, rc = rack.site(env={"ANSIBLE_CALLBACKS_ENABLED": "gpufabric.stack.task_counter",
                              "GPUFABRIC_TASK_COUNTER_FILE": str(counts)})
    assert {n: (rc[n]["failed"], rc[n]["changed"]) for n in names} == {n: (0, 0) for n in names}, proc.stdout[-4000:]
    pushes = json.loads(counts.read_text())["roce_switch"]
    assert {n: [(r["commands"], r["show_commands"] <= 2) for r in pushes[n]] for n in names} == \
        {n: [(0, True)] for n in names}, pushes
    report = rack.validate()
    assert {n: (layer7(report, n)["status"], layer7(report, n)["reason"]) for n in names} == {
        n: ("pass", "switch matches the RoCE intent on 1 GPU-facing ports") for n in names}
    TIMES["converge"] = time.monotonic() - t

    # round 1, on every switch at once: PFC off and MTU low on its GPU port,
    # the watchdog off there (where the driver manages it), global PFC off
    # (where the NOS has it)
    t = time.monotonic()
    for n, (nos, (port,)) in rack.switches.items():
        rack.switch_fault(n, "switch-pfc-off", ports=[port])
        rack.switch_fault(n, "switch-mtu-low", ports=[port], mtu=1500)
        if nos in WATCHDOG_FIX:
            rack.switch_fault(n, "switch-watchdog-off", ports=[port])
        if nos in GLOBAL_OFF:
            rack.switch_fault(n, "switch-global-pfc-off")
    report = rack.validate()
    for n, (nos, (port,)) in rack.switches.items():
        row = layer7(report, n)
        assert row["status"] == "fail" and report[n]["verdict"]["layer"] == 7, (n, row)
        ev = row["evidence"]
        assert f"{n} {port}: PFC off (intent priority 3), MTU 1500 below {MTU[nos]}" in ev, (nos, ev)
        if nos in GLOBAL_OFF:
            # global PFC off is the verdict
            assert row["reason"] == f"{n} {GLOBAL_OFF[nos]}" and ev[0] == row["reason"], (nos, row)
        if nos in WATCHDOG_FIX:
            line = (f"{n} {port}: PFC watchdog off on {LABEL[nos]} (intent on with PFC on priority 3; "
                    f"fix: {WATCHDOG_FIX[nos].format(port=port)})")
            assert line in ev, (nos, ev)
        assert row["remediation"].startswith(f"run the roce_switch role (tag layer07) on {n}"), row
    for n in names:
        rack.switch_fault(n, "clear")
    proc, rc = rack.site()
    assert {n: (rc[n]["failed"], rc[n]["changed"]) for n in names} == {n: (0, 1) for n in names}, proc.stdout[-4000:]
    TIMES["round 1"] = time.monotonic() - t

    # round 2: faults that act on a push. MTU low on every switch, then the
    # push that would repair it meets a rejected command, then an SSH session
    # cut at the MTU line: each fails naming switch and command, the running
    # config is put back, and the doctor still names the low MTU.
    t = time.monotonic()
    for n, (nos, (port,)) in rack.switches.items():
        rack.switch_fault(n, "switch-mtu-low", ports=[port], mtu=1500)
    before = {n: rack.running(n) for n in names}
    for n in names:
        rack.switch_fault(n, "switch-rejects-command", pattern=r"\bmtu\b")
    proc, rc = rack.site()
    text = said(proc)
    for n, (nos, _) in rack.switches.items():
        assert rc[n]["failed"] == 1, (n, proc.stdout[-4000:])
        assert re.search(rf"{n}: command '[^']*mtu[^']*' rejected: .*?; running config restored", text), (nos, text[-3000:])
        assert rack.running(n) == before[n], nos
        rack.switch_fault(n, "clear")
        rack.switch_fault(n, "switch-ssh-drops-mid-push", after=DROP_AFTER[nos])
    proc, rc = rack.site()
    text = said(proc)
    for n, (nos, _) in rack.switches.items():
        assert rc[n]["failed"] == 1, (n, proc.stdout[-4000:])
        assert re.search(rf"{n}: connection dropped while sending '[^']*mtu[^']*' \(.*?\); running config restored",
                         text), (nos, text[-3000:])
        assert rack.running(n) == before[n], nos
        rack.switch_fault(n, "clear")
    report = rack.validate()
    for n, (nos, (port,)) in rack.switches.items():
        row = layer7(report, n)
        assert (row["status"], row["reason"]) == ("fail", f"{n} {port}: MTU 1500 below {MTU[nos]}"), (nos, row)
    TIMES["round 2"] = time.monotonic() - t
