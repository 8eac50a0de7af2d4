"""Fixtures for tests against a live twin rack (podman nodes, BMCs, switches).

One twin rack per test session (2 nodes, 2 switches), brought up from the
node image that `make image` builds; tests that change a node put it back or
use their own lab."""

import json
import os
import subprocess
import sys
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


def have_twin():
    from shutil import which
    return which("podman") and os.path.exists("/dev/fuse")


class Twin:
    """A twin rack and its inventory. The doctor's reports and the NCCL
    record go to the rack's own directory (not the repository's reports/),
    so racks of parallel test workers do not read each other's reports."""

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

    def container(self, node):
        return f"simlab-{self.name}-{node}"

    def sh(self, node, script, check=True):
        proc = subprocess.run(["podman", "exec", self.container(node), "sh", "-c", script],
                              env=ENV, capture_output=True, text=True)
        if check and proc.returncode:
            raise AssertionError(f"{node}: {script}: {proc.stderr}")
        return proc

    def playbook(self, playbook, *args, check=False):
        # the test's own -e come later and win
        cmd = [str(BIN / "ansible-playbook"), "-i", str(self.inventory / "hosts.yml"), str(REPO / playbook),
               "-e", f"doctor_report_dir={self.reports}",
               "-e", f"nccl_validate_result_file={self.reports}/nccl_validate-last.json", *args]
        proc = subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True)
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


@pytest.fixture(scope="session")
def twin(tmp_path_factory):
    if not have_twin():
        pytest.skip("podman and /dev/fuse are needed for twin tests")
    name = f"it{uuid.uuid4().hex[:6]}"
    inv = tmp_path_factory.mktemp("inventory")
    t = Twin(name, inv)
    proc = subprocess.run([sys.executable, "-m", "simlab", "up", "--name", name, "--nodes", "2", "--switches", "2",
                           "--inventory", str(inv)], cwd=REPO, env=ENV, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"simlab up failed: {proc.stdout}\n{proc.stderr}")
    yield t
    subprocess.run([sys.executable, "-m", "simlab", "down", "--name", name], cwd=REPO, env=ENV,
                   capture_output=True, text=True)


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
