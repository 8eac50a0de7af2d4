"""Fixtures for tests against VM nodes: a real Debian 12 kernel in QEMU with
igb SR-IOV NICs, brought up with `python -m simlab up --kind vm` from the
images `make image` builds.  One lab for the session (a boot costs a minute
or more under emulation); the tests run in file order and build on each
other: converge, re-run, doctor, faults, then the twin held against it.
node01's BMC is the lab's own; node02's is sushy-tools' emulator over a
libvirt domain (simlab/vm/sushy.py), a Redfish BMC the project did not
write, which the same converge, re-run and doctor go through."""

import os
import shutil
import subprocess

import pytest

from tests.integration.twinlab import ENV, REPO, Twin, recap  # noqa: F401 - shared with the VM tests


def require_vm():
    """Skip where QEMU nodes cannot run (no debootstrap to build the images);
    fail instead under `make test` (SIMLAB_REQUIRED=1)."""
    missing = [tool for tool in ("debootstrap", "ssh", "ssh-keyscan", "mkfs.ext4") if shutil.which(tool) is None]
    if not missing:
        return
    if os.environ.get("SIMLAB_REQUIRED") == "1":
        pytest.fail(f"VM node tests need {', '.join(missing)} (SIMLAB_REQUIRED=1)")
    pytest.skip(f"VM node tests need {', '.join(missing)}")


class VmLab(Twin):
    """A VM rack: the same inventory and playbook helpers as a twin rack,
    commands on a node over SSH, and the node's QMP for what hardware does."""

    def sh(self, node, script, check=True, timeout=300, stdin=None):
        from simlab.lab import Lab
        from simlab.vm import lab as vm_lab
        proc = vm_lab.ssh(Lab(self.name), node, "sh", "-c", script, check=False, timeout=timeout, input=stdin)
        if check and proc.returncode:
            raise AssertionError(f"{node}: {script}: rc {proc.returncode}: {proc.stderr}{proc.stdout}")
        return proc

    @property
    def lab(self):
        from simlab.lab import Lab
        return Lab(self.name)


@pytest.fixture(scope="session")
def vmlab(tmp_path_factory):
    require_vm()
    lab = VmLab.up(tmp_path_factory, "vm", "--kind", "vm", "--nodes", "2", "--sushy-nodes", "node02")
    yield lab
    lab.down()


def run(cmd, **kw):
    return subprocess.run(cmd, cwd=REPO, env=ENV, capture_output=True, text=True, **kw)
