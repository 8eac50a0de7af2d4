"""The doctor (playbooks/validate.yml) names where a host breaks, for the twin
faults whose verdict no other test reads from validate.yml's report: one
fault at a time on one node, or on the switch port of one node, and the
report names that host's layer and cause while every other node and switch
is green. Also: a node Ansible cannot reach is reported as failing at layer 1
and the run does not crash, and ``--limit node01`` reports node01 alone
without touching the hosts outside the limit.

The faults of layers 1-6 other than networkmanager-grabs-vfs are checked
through validate.yml in test_host_faults_twin.py and test_layer06_twin.py,
whose labs converge layers 1-6 only (the other node is green up to layer 6).

One lab for the module (2 nodes, 2 switches, the ready preset), converged
once by site.yml; each test clears its fault and repairs what the fault
changed, so the next one starts green. Reports and the NCCL record go to the
lab's own directories, not the repository's reports/.

Green, on a lab of two nodes: every layer passes, except that the cluster
layers 11-14 are skipped (the twin runs no Kubernetes) and, when the other
node is out of the run, layer 9 warns that a pair was not tested and layer
15 is skipped (an all-reduce on one node does not cross the fabric); when
the other node broke the all-reduce by falling back to sockets, layer 15
warns naming it."""

import json
import re

import pytest

from tests.integration.twinlab import Twin, recap, require_twin, task_lines

pytestmark = [pytest.mark.twin, pytest.mark.slow, pytest.mark.layers("all")]

NODES = ("node01", "node02")
SWITCHES = ("leaf1", "leaf2")
NODE_LAYERS = [n for n in range(1, 16) if n != 7]
SOCKET = "NCCL used NET/Socket instead of NET/IB"
NM_RULE = "/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules"
# layer 9 when the other end of a pair is out of the run or broken
PAIR_NOT_TESTED = re.compile(r": no other node on \S+ in this run: bandwidth not tested$|: not tested, server ")
ONE_NODE_NCCL = re.compile(r"^an all-reduce on node0\d measures NVLink, not the fabric: layer 15 needs at least 2 nodes$")
# layer 15 when this node's ranks used NET/IB and the other node's NET/Socket broke the job
PEER_BROKE_NCCL = re.compile(r"^all_reduce_perf with (node0\d) failed: \1 used NET/Socket$")


class Rack(Twin):
    healthy = False

    def site(self, *args):
        proc = self.playbook("playbooks/site.yml", *args)
        return proc, recap(proc.stdout)

    def validate(self, *args):
        """validate.yml -> (proc, report.json); the report is removed first so
        a run that writes none cannot pass on an old one."""
        (self.reports / "report.json").unlink(missing_ok=True)
        proc = self.playbook("playbooks/validate.yml", *args)
        path = self.reports / "report.json"
        assert path.exists(), f"validate.yml wrote no report (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}"
        # read-only: whatever it found, no host changed (its report files are the controller's)
        assert {h: r["changed"] for h, r in recap(proc.stdout).items() if r["changed"]} == {}, proc.stdout[-4000:]
        return proc, json.loads(path.read_text())

    def switch_fault(self, switch, kind, **params):
        """A switch fault through the twin's API, which takes the ports and
        parameters the CLI leaves at their defaults."""
        from simlab.lab import lab_dir
        from simlab.switches.server import inject_fault
        return inject_fault(lab_dir(self.name) / "switches", switch, kind, **params)


def green_row(row):
    n, status, reason = row["layer"], row["status"], row["reason"]
    return status == "pass" or (status == "skipped" and 11 <= n <= 14) \
        or (n == 9 and status == "warn" and PAIR_NOT_TESTED.search(reason) is not None) \
        or (n == 15 and status == "skipped" and ONE_NODE_NCCL.match(reason) is not None) \
        or (n == 15 and status == "warn" and PEER_BROKE_NCCL.match(reason) is not None)


def not_green(report, host):
    """Rows of `host` that are not green, as {layer: (status, reason)}, plus
    'verdict' when its verdict fails; {} for a green host."""
    bad = {row["layer"]: (row["status"], row["reason"]) for row in report[host]["layers"] if not green_row(row)}
    if report[host]["verdict"]["status"] == "fail":
        bad["verdict"] = report[host]["verdict"]["reason"]
    return bad


def layers_of(report, host):
    return [row["layer"] for row in report[host]["layers"]]


def names(report, host, layer, reason, others=None):
    """`host`'s verdict is `layer` with `reason`: the layers below are green,
    the layers above are blocked; every other host of the report (or those in
    `others`) is green. Returns the layer row."""
    rows = {row["layer"]: row for row in report[host]["layers"]}
    verdict = report[host]["verdict"]
    assert (verdict["status"], verdict["layer"], verdict["reason"]) == ("fail", layer, reason), verdict
    assert rows[layer]["status"] == "fail", rows[layer]
    assert {n: (r["status"], r["reason"]) for n, r in rows.items() if n < layer and not green_row(r)} == {}
    assert {n: r["status"] for n, r in rows.items() if n > layer} == {n: "blocked" for n in rows if n > layer}
    others = [h for h in report if h != host] if others is None else others
    assert {h: not_green(report, h) for h in others} == {h: {} for h in others}
    return rows[layer]


def said(proc):
    """A playbook's output on one line, as a module's message reads (the
    YAML callback folds long lines and doubles single quotes)."""
    return " ".join((proc.stdout + proc.stderr).split()).replace("''", "'")


def node_row(report, host, layer):
    return next(row for row in report[host]["layers"] if row["layer"] == layer)


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    require_twin()
    lab = Rack.up(tmp_path_factory, "dr", "--nodes", "2", "--switches", "2")
    try:
        proc, rc = lab.site()
        assert set(rc) == set(NODES + SWITCHES), proc.stdout[-3000:]
        assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in rc.values()), proc.stdout[-4000:]
        lab.healthy = True
        yield lab
    finally:
        lab.down()


@pytest.fixture
def fresh(rack, request):
    """The rack, converged; after a test that failed, every fault is cleared
    and site.yml converges the rack again before the next test."""
    if not rack.healthy:
        for host in NODES + SWITCHES:
            rack.fault(host, "clear")
        proc, rc = rack.site()
        assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in rc.values()), proc.stdout[-4000:]
    failed = request.session.testsfailed
    yield rack
    rack.healthy = request.session.testsfailed == failed


# ------------------------------------------------------- the connection, --limit

def test_unreachable_node_is_layer_1_and_the_run_completes(fresh):
    rack = fresh
    rack.fault("node02", "node-unreachable")
    try:
        proc, report = rack.validate()
    finally:
        rack.fault("node02", "clear")
    rc = recap(proc.stdout)
    # the report is written and printed; ansible-playbook exits 4, its code for an unreachable host
    assert proc.returncode == 4, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert rc["node02"]["unreachable"] == 1
    assert all(r["failed"] == 0 for r in rc.values()), proc.stdout[-4000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert set(report) == set(NODES + SWITCHES)
    assert report["node02"]["verdict"] == {"status": "fail", "layer": 1,
                                           "reason": "host unreachable: no layer could be checked"}
    (row,) = report["node02"]["layers"]
    assert (row["layer"], row["status"], row["reason"]) == (1, "fail", "host unreachable")
    assert "the connection settings" in row["remediation"]
    # the evidence is what Ansible said about the connection
    assert len(row["evidence"]) == 1 and row["evidence"][0].startswith(
        f"simlab_podman to simlab-{rack.name}-node02: "), row["evidence"]
    assert {h: not_green(report, h) for h in ("node01", *SWITCHES)} == {h: {} for h in ("node01", *SWITCHES)}
    assert layers_of(report, "node01") == NODE_LAYERS
    assert re.search(r"node02\s+FAIL\s.*layer\s+1: host unreachable", " ".join(proc.stdout.split()))


def test_limit_checks_and_reports_only_that_node(fresh):
    """node02 does not answer during the run: nothing outside the limit is contacted."""
    rack = fresh
    rack.fault("node02", "node-unreachable")
    try:
        proc, report = rack.validate("--limit", "node01")
    finally:
        rack.fault("node02", "clear")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert set(recap(proc.stdout)) == {"node01"}
    assert set(report) == {"node01"}
    assert layers_of(report, "node01") == NODE_LAYERS
    assert not_green(report, "node01") == {}
    # the switches are outside the run: layer 8 compares no switch port
    assert node_row(report, "node01", 8)["reason"] == "2 PF(s) match the RoCE intent"


# ------------------------------------------------------------------ layer 6

def test_networkmanager_grabs_vfs(fresh):
    rack = fresh
    rack.fault("node01", "networkmanager-grabs-vfs")
    _, report = rack.validate()
    row = names(report, "node01", 6, "NetworkManager may manage the VFs: the NM_UNMANAGED udev rule is missing")
    assert row["remediation"] == "run site.yml --tags layer06 (installs the rule)"
    rack.fault("node01", "clear")
    proc, rc = rack.site("--tags", "layer06", "--limit", "node01")
    assert rc["node01"]["failed"] == 0 and rc["node01"]["changed"] > 0, proc.stdout[-4000:]
    assert rack.sh("node01", f"test -f {NM_RULE}", check=False).returncode == 0


# ------------------------------------------------------------------ layer 8

def test_host_pfc_mismatch(fresh):
    rack = fresh
    rack.fault("node02", "host-pfc-mismatch")
    proc, report = rack.validate()
    row = names(report, "node02", 8, "node02 enp59s0f0np0 PFC {4} vs intent {3}")
    # the doctor's one read of each node took the firmware, the QoS and
    # containerd: the checks of layers 4, 8 and 10 make no call of their own
    assert task_lines(proc.stdout, "Read the node once and check its node layers") == [
        f"ok: [{h}]" for h in NODES]
    for task in ("Query the firmware of every selected PF (read-only)", "Read the host RoCE QoS",
                 "Read containerd, its configuration, the kernel settings, swap and the CNI plugins"):
        assert f"TASK [{task}" not in proc.stdout and f": {task}]" not in proc.stdout, task
    assert "node02 enp59s0f0np0 PFC {4} vs leaf1 ethernet 1/2 PFC {3}" in row["evidence"]
    assert row["remediation"].startswith("run roce_host (tag layer08) on node02")
    rack.fault("node02", "clear")
    proc, rc = rack.site("--tags", "layer08", "--limit", "node02")
    assert rc["node02"]["failed"] == 0 and rc["node02"]["changed"] > 0, proc.stdout[-4000:]


def test_qos_boot_unit_disabled(fresh):
    # validate.yml reads every unit's state once (service_facts); layer 8
    # finds its boot unit there.
    rack = fresh
    rack.sh("node01", "systemctl disable gpufabric-roce-qos.service")
    try:
        _, report = rack.validate()
    finally:
        rack.sh("node01", "systemctl enable gpufabric-roce-qos.service")
    names(report, "node01", 8, "node01: host QoS will be lost at the next boot: gpufabric-roce-qos.service is not enabled")


# ------------------------------------------------------------------ layer 9

def test_link_down(fresh):
    rack = fresh
    rack.fault("node02", "link-down")
    try:
        _, report = rack.validate()
    finally:
        rack.fault("node02", "clear")
    row = names(report, "node02", 9, "node02 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, cabled to leaf1 ethernet 1/2): "
                                     "link down (netdev operstate down, RDMA port DOWN, physical state DISABLED)")
    assert "leaf1 ethernet 1/2" in row["remediation"]
    # node01 names the pair it could not measure, and is not failed for it
    assert node_row(report, "node01", 9)["reason"].startswith(
        "node01 enp59s0f0np0 -> node02 enp59s0f0np0 (leaf1 ethernet 1/1 <-> leaf1 ethernet 1/2): not tested, "
        "server node02 enp59s0f0np0: link down")


# ----------------------------------------------------------------- layer 15

def test_nccl_socket_fallback(fresh):
    rack = fresh
    rack.fault("node02", "nccl-socket-fallback")
    try:
        _, report = rack.validate()
    finally:
        rack.fault("node02", "clear")
    # only node02's ranks fell back to sockets: node02 fails at layer 15 with
    # its own lines; node01 (its ranks used NET/IB) is green but for the
    # warning that names node02, and both are green below layer 15
    row = names(report, "node02", 15, SOCKET)
    assert "node02: NCCL transport NET/Socket" in row["evidence"]
    assert not [e for e in row["evidence"] if e.startswith("node01:")]
    warn = node_row(report, "node01", 15)
    assert (warn["status"], warn["reason"]) == ("warn", "all_reduce_perf with node02 failed: node02 used NET/Socket")
    assert "node02" in warn["remediation"] and "node01: NCCL transport NET/IB" in warn["evidence"]
    assert report["node01"]["verdict"]["status"] == "warn"


# ------------------------------------------------------------------ layer 7

def test_switch_pfc_off_on_one_port_and_pushes_that_fail(fresh):
    """switch-pfc-off on node02's port of leaf1; the converge that would
    repair it then meets switch-rejects-command and switch-ssh-drops-mid-push:
    each push fails naming the switch and the command and restores the
    running config, so the doctor still names the switch port."""
    rack = fresh
    port, line = "ethernet 1/2", "interface ethernet 1/2 dcb priority-flow-control mode on force"
    rack.switch_fault("leaf1", "switch-pfc-off", ports=[port])
    rack.switch_fault("leaf1", "switch-rejects-command", pattern="priority-flow-control")
    proc, rc = rack.site("--tags", "layer07", "--limit", "leaf1")
    assert rc["leaf1"]["failed"] == 1, proc.stdout[-4000:]
    assert f"leaf1: command '{line}' rejected: % Unrecognized command found at '^' position.; " \
           "running config restored" in said(proc), proc.stdout[-4000:]
    rack.fault("leaf1", "clear")
    # the connection drops at the push's first configuration line: the PFC line
    rack.switch_fault("leaf1", "switch-ssh-drops-mid-push", after=0)
    proc, rc = rack.site("--tags", "layer07", "--limit", "leaf1")
    assert rc["leaf1"]["failed"] == 1, proc.stdout[-4000:]
    assert re.search(rf"leaf1: connection dropped while sending '{line}' \(.*\); running config restored", said(proc)), \
        proc.stdout[-4000:]
    rack.fault("leaf1", "clear")
    _, report = rack.validate()
    row = names(report, "leaf1", 7, f"leaf1 {port}: PFC off (intent priority 3)", others=("node01", "leaf2"))
    assert row["remediation"].startswith("run the roce_switch role (tag layer07) on leaf1")
    assert layers_of(report, "leaf1") == [7]
    # the node on that port: its PF and the port disagree, and the fix is the switch's
    node = names(report, "node02", 8, f"node02 enp59s0f0np0 PFC {{3}} vs leaf1 {port} PFC {{}}", others=())
    assert node["remediation"] == "run roce_switch (tag layer07) on leaf1"
    proc, rc = rack.site("--tags", "layer07", "--limit", "leaf1")
    assert rc["leaf1"]["failed"] == 0 and rc["leaf1"]["changed"] == 1, proc.stdout[-4000:]


def test_switch_mtu_low_on_one_port(fresh):
    rack = fresh
    rack.switch_fault("leaf2", "switch-mtu-low", ports=["swp1"])
    _, report = rack.validate()
    rack.fault("leaf2", "clear")
    row = names(report, "leaf2", 7, "leaf2 swp1: MTU 1500 below 9216", others=("node02", "leaf1"))
    assert row["evidence"] == ["leaf2 swp1: MTU 1500 below 9216"]
    node = names(report, "node01", 8, "node01 enp134s0f0np0 MTU 9000 vs leaf2 swp1 MTU 1500", others=())
    assert node["remediation"] == "run roce_switch (tag layer07) on leaf2"
    proc, rc = rack.site("--tags", "layer07", "--limit", "leaf2")
    assert rc["leaf2"]["failed"] == 0 and rc["leaf2"]["changed"] == 1, proc.stdout[-4000:]


# ------------------------------------------------------ layer 9: the cables

def test_cables_swapped_moved_and_unplugged_are_named_with_their_fix(fresh):
    """node01's two cables swapped, node02's second PF on the wrong port of
    its leaf and its first unplugged: validate.yml names exactly those
    links, each with where its cable is and where the plan has it, and the
    fix; the leaves stay green (their configuration is right)."""
    rack = fresh
    rack.fault("node01", "cable-swap")
    rack.fault("node02", "cable-move")
    rack.fault("node02", "cable-unplug")
    try:
        _, report = rack.validate()
    finally:
        for node in NODES:
            rack.fault(node, "clear")
    one = names(report, "node01", 9,
                "node01 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, cabled to leaf1 ethernet 1/1): node01 enp59s0f0np0 "
                "(rocep59s0f0) reaches leaf2 swp1 and node01 enp134s0f0np0 (rocep134s0f0) reaches leaf1 ethernet 1/1: "
                "their cables are swapped", others=list(SWITCHES))
    assert one["remediation"].startswith("swap the cables of node01's rocep59s0f0 and rocep134s0f0")
    lldp = lambda row: [e for e in row["evidence"] if e.startswith("LLDP: ")]
    assert lldp(one) == [
        "LLDP: node01 enp59s0f0np0 (rocep59s0f0) reaches leaf2 swp1 and node01 enp134s0f0np0 (rocep134s0f0) "
        "reaches leaf1 ethernet 1/1: their cables are swapped",
        "LLDP: node01 enp134s0f0np0 (rocep134s0f0) reaches leaf1 ethernet 1/1 and node01 enp59s0f0np0 "
        "(rocep59s0f0) reaches leaf2 swp1: their cables are swapped"]
    two = names(report, "node02", 9,
                "node02 enp59s0f0np0 (0000:3b:00.0, rocep59s0f0, cabled to leaf1 ethernet 1/2): link down (netdev "
                "operstate down, RDMA port DOWN, physical state DISABLED)", others=list(SWITCHES))
    assert two["remediation"].startswith("plug the cable of node02 enp59s0f0np0 into leaf1 ethernet 1/2")
    assert lldp(two) == [
        "LLDP: node02 enp59s0f0np0: no LLDP neighbour at either end and no carrier: the cable to leaf1 ethernet 1/2 "
        "is out or broken",
        "LLDP: node02 enp134s0f0np0 (rocep134s0f0) reaches leaf2 swp3; the plan gives leaf2 swp2"]
    # report.html draws each cable where LLDP found it, dashed, naming the planned port
    page = (rack.reports / "report.html").read_text()
    for line in ("node01 enp59s0f0np0 \u2194 leaf2 swp1: fail (as LLDP found it; the plan says leaf1 ethernet 1/1)",
                 "node01 enp134s0f0np0 \u2194 leaf1 ethernet 1/1: fail (as LLDP found it; the plan says leaf2 swp1)",
                 "node02 enp134s0f0np0 \u2194 leaf2 swp3: fail (as LLDP found it; the plan says leaf2 swp2)"):
        assert '<line class="fail moved"' in page and line in page, line
