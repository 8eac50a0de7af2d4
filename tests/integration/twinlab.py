"""What the tests against a live twin rack (podman nodes, BMCs, switches)
share: the Twin class that brings a rack up and drives it, the RoCE rack set
by hand, and the parsers of a playbook's output.  A module, not a conftest:
the tests import it as tests.integration.twinlab, so the name resolves to this
file from any directory pytest is started in."""

import json
import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ENV = dict(os.environ,
           CONTAINERS_CONF=str(REPO / "simlab" / "containers.conf"),
           ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
           ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
           ANSIBLE_FORCE_COLOR="0",
           ANSIBLE_NOCOLOR="1",
           PYTHONPATH=str(REPO))
BIN = Path(sys.executable).parent


def keep_log(cmd, proc):
    """Append a playbook run's command and output to $TWINLAB_LOG (unset: kept
    nowhere), where a profile of the tier reads them: run the tier with
    ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks to have each task's
    time in it."""
    path = os.environ.get("TWINLAB_LOG")
    if path:
        with open(path, "a") as log:
            log.write(f"=== {' '.join(cmd)} rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}\n")


def have_twin():
    from shutil import which
    return which("podman") and os.path.exists("/dev/fuse")


def require_twin():
    """Skip a twin test where the twin cannot run (no podman or /dev/fuse);
    fail instead under `make test` (SIMLAB_REQUIRED=1), where a skipped twin
    test would hide that nothing ran."""
    if have_twin():
        return
    if os.environ.get("SIMLAB_REQUIRED") == "1":
        pytest.fail("podman and /dev/fuse are needed for twin tests (SIMLAB_REQUIRED=1)")
    pytest.skip("podman and /dev/fuse are needed for twin tests")


class Twin:
    """A twin rack and its inventory. The doctor's reports and the NCCL
    record go to the rack's own directory (not the repository's reports/),
    so racks of parallel test workers do not read each other's reports."""

    # the test that left the lab broken (set when a test using the lab fails);
    # a lab with a repair() is put right before its next test runs
    broken_by = None
    repair = None

    def __init__(self, name, inventory, reports=None):
        self.name = name
        self.inventory = Path(inventory)
        self.reports = Path(reports) if reports else self.inventory.parent / f"{self.inventory.name}-reports"

    def simlab(self, *args, check=True):
        proc = subprocess.run([sys.executable, "-m", "simlab", *args, "--name", self.name],
                              cwd=REPO, env=ENV, capture_output=True, text=True)
        if check and proc.returncode:
            raise AssertionError(f"simlab {' '.join(args)} failed: {proc.stderr}")
        return proc

    def fault(self, target, kind):
        return self.simlab("fault", target, kind)

    def settle(self, node, since, until=None, limit=5.0):
        """Wait until the node's agent has published its state (live.json in the
        lab directory, which the fabric model reads) after ``since`` (a
        time.time() taken before the change), that state carries the faults the
        lab holds for the node (faults.json), and ``until(state)``, when given,
        holds; at most ``limit`` seconds. A publish after ``since`` can still be
        one the agent started for an earlier change, so the content decides,
        not the time alone. A change that publishes nothing (a fault the model
        reads from its own file) costs the limit, never a stale read."""
        from simlab.lab import lab_dir
        base = lab_dir(self.name) / "nodes" / node
        path = base / "live.json"
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                if path.stat().st_mtime > since:
                    state = json.loads(path.read_text())
                    faults = json.loads((base / "faults.json").read_text() or "{}")
                    if state.get("faults", {}) == faults and (until is None or until(state)):
                        return True
            except (FileNotFoundError, ValueError):
                pass        # not there yet, or caught mid-write
            time.sleep(0.05)
        return False

    def container(self, node):
        return f"simlab-{self.name}-{node}"

    def sh(self, node, script, check=True):
        proc = subprocess.run(["podman", "exec", self.container(node), "sh", "-c", script],
                              env=ENV, capture_output=True, text=True)
        if check and proc.returncode:
            raise AssertionError(f"{node}: {script}: {proc.stderr}")
        return proc

    def playbook(self, playbook, *args, check=False, env=None):
        """ansible-playbook on the rack's inventory; ``env`` adds to the environment."""
        # the test's own -e come later and win. Layer 9's runs from GPU memory
        # (a second round of pairs on every GPU node) are off but where a test
        # turns them on: test_rdma_check_twin.py, which is about them
        cmd = [str(BIN / "ansible-playbook"), "-i", str(self.inventory / "hosts.yml"), str(REPO / playbook),
               "-e", f"doctor_report_dir={self.reports}",
               "-e", f"nccl_validate_result_file={self.reports}/nccl_validate-last.json",
               "-e", "rdma_check_gpu_memory=false", *args]
        proc = subprocess.run(cmd, cwd=REPO, env=dict(ENV, **(env or {})), capture_output=True, text=True)
        keep_log(cmd, proc)
        if check and proc.returncode:
            raise AssertionError(f"{playbook} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
        return proc

    def module(self, host, module, args, *extra):
        cmd = [str(BIN / "ansible"), "-i", str(self.inventory / "hosts.yml"), host, "-m", module,
               "-a", json.dumps(args), *extra]
        proc = subprocess.run(cmd, cwd=REPO, env=dict(ENV, ANSIBLE_STDOUT_CALLBACK="json",
                                                      ANSIBLE_LOAD_CALLBACK_PLUGINS="1"),
                              capture_output=True, text=True)
        try:
            out = json.loads(proc.stdout)
            return out["plays"][0]["tasks"][0]["hosts"][host]
        except (ValueError, KeyError, IndexError):
            raise AssertionError(f"ansible {module} on {host}: rc {proc.returncode}\n{proc.stdout}\n{proc.stderr}")

    def report(self):
        return json.loads((self.reports / "report.json").read_text())

    @classmethod
    def up(cls, tmp_path_factory, prefix, *args, **kwargs):
        """`python -m simlab up` a rack of its own (a unique name from
        `prefix`, an inventory in a fresh temporary directory) with the given
        options; extra keyword arguments go to the constructor."""
        name = f"{prefix}{uuid.uuid4().hex[:6]}"
        t = cls(name, tmp_path_factory.mktemp("inventory"), **kwargs)
        proc = subprocess.run([sys.executable, "-m", "simlab", "up", "--name", name, *args,
                               "--inventory", str(t.inventory)], cwd=REPO, env=ENV, capture_output=True, text=True)
        if proc.returncode:
            # the lab's logs name the process that stopped and why; down removes them
            logs = _log_tails(name)
            t.down()
            raise AssertionError(f"simlab up failed: {proc.stdout}\n{proc.stderr}\n{logs}")
        return t

    def down(self):
        subprocess.run([sys.executable, "-m", "simlab", "down", "--name", self.name], cwd=REPO, env=ENV,
                       capture_output=True, text=True)


def _log_tails(name, lines=40):
    """The last lines of each log of lab ``name`` (simlab's lab directory,
    logs/*.log), for a failure message."""
    from simlab.lab import lab_dir
    out = []
    for path in sorted((lab_dir(name) / "logs").glob("*.log")):
        try:
            tail = path.read_text(errors="replace").splitlines()[-lines:]
        except OSError as e:
            tail = [f"(unreadable: {e})"]
        out.append(f"--- {path}\n" + "\n".join(tail))
    return "\n".join(out) or f"(no logs under {lab_dir(name) / 'logs'})"


# The switch and host side of the RoCE chain (layers 7 and 8) set by hand, for
# the tests of the fabric model and the layers above it: leaf1 runs Onyx,
# leaf2 NVUE, both PFs of each node trust DSCP with PFC on priority 3.
ROCE_ONYX = ["enable", "configure terminal", "interface ethernet 1/1-1/2 qos trust L3",
             "dcb priority-flow-control enable force", "dcb priority-flow-control priority 3 enable",
             "interface ethernet 1/1-1/2 dcb priority-flow-control mode on force",
             "interface ethernet 1/1-1/2 mtu 9216 force"]
ROCE_NVUE = ["nv set qos roce mode lossless", "nv set interface swp1-2 link mtu 9216", "nv config apply -y"]
ROCE_PFS = ("enp59s0f0np0", "enp134s0f0np0")


def roce_rack(tmp_path_factory, prefix):
    """A rack of 2 nodes and 2 switches (Onyx, NVUE) with RoCE set by hand."""
    t = Twin.up(tmp_path_factory, prefix, "--nodes", "2", "--switches", "2", "--nos", "onyx,nvue")
    try:
        from simlab.lab import lab_dir
        from simlab.switches import load_switch, save_switch
        sw = lab_dir(t.name) / "switches"
        for leaf, lines in (("leaf1", ROCE_ONYX), ("leaf2", ROCE_NVUE)):
            m = load_switch(sw, leaf)
            outs = [m.handle(line) for line in lines]
            assert not [o for o in outs if o and ("%" in o or "Error" in o)], outs
            save_switch(sw, m)
        for node in ("node01", "node02"):
            roce_host_by_hand(t, node)
    except BaseException:
        t.down()
        raise
    return t


def roce_host_by_hand(t, node):
    script = "; ".join(f"mlnx_qos -i {pf} --trust dscp --pfc 0,0,0,1,0,0,0,0 >/dev/null && "
                       f"ip link set dev {pf} mtu 9000" for pf in ROCE_PFS)
    since = time.time()
    t.sh(node, "set -e; " + script)
    # the fabric model reads what the agent published
    t.settle(node, since, until=lambda state: all(
        pf["trust"] == "dscp" and pf["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0] and pf["mtu"] == 9000
        for pf in state["pfs"] if pf["netdev"] in ROCE_PFS))


def task_lines(stdout, task):
    """The result lines ("ok: [node01]", "skipping: [node02]") of one task."""
    m = re.search(r"TASK \[[^\]]*%s\][^\n]*\n((?:(?!TASK).*\n)*)" % re.escape(task), stdout)
    assert m, f"task {task!r} not in the output"
    return sorted(line.split(" =>")[0] for line in m.group(1).splitlines() if line.split(":")[0] in
                  ("ok", "changed", "skipping", "failed", "fatal"))


def recap(stdout):
    """{host: {ok, changed, unreachable, failed, ...}} from a PLAY RECAP."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1] == ":" and "ok=" in line:
            out[parts[0]] = {k: int(v) for k, v in (p.split("=") for p in parts[2:])}
    return out


def set_inventory_var(inv, group_file, key, value):
    path = Path(inv) / group_file
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    data[key] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def labs_of(item):
    """The Twin labs a test item holds among its fixture values (a lab, or a
    tuple with one)."""
    out = []
    for value in getattr(item, "funcargs", {}).values():
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, Twin) and v not in out:
                out.append(v)
    return out


class SessionTwin(Twin):
    """The session's rack (2 nodes, 2 switches), shared by several test
    modules: after a test that failed on it, every fault is cleared and layer
    6 converged again before the next test runs, so one failure does not
    spill into the next test or module."""

    def repair(self):
        for host in ("node01", "node02", "leaf1", "leaf2"):
            self.fault(host, "clear")
        self.playbook("playbooks/site.yml", "--tags", "layer06", check=True)
