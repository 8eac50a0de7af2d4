"""The twin held against a real kernel: one scripted sequence of SR-IOV
operations (tests/vm/sysfs_sequence.py: 0 then N, the same N again, N over
M, above sriov_totalvfs, not a number, autoprobe off then a bind by hand,
VF MAC/trust/spoofchk through netlink, PF unbind and bind) runs on a twin
node (ConnectX-7, FUSE sysfs, tool twins) and on a VM node (igb, Debian 12's
kernel).  What each step saw (errno of os.write, what bash and dash say,
file contents, virtfn/physfn links, VF drivers, ``ip -j link`` VF info) must
be the same; where it is not, the twin is wrong.

Runs last on the session's VM lab: it leaves node02's VFs changed."""

import json
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import Twin, require_twin

SEQUENCE = Path(__file__).with_name("sysfs_sequence.py")


@pytest.fixture(scope="module")
def twin1(tmp_path_factory):
    require_twin()
    t = Twin.up(tmp_path_factory, "ff", "--nodes", "1", "--switches", "1")
    yield t
    t.down()


def on_twin(twin1):
    import subprocess
    from tests.integration.conftest import ENV
    c = twin1.container("node01")
    subprocess.run(["podman", "cp", str(SEQUENCE), f"{c}:/tmp/sysfs_sequence.py"], env=ENV, check=True)
    proc = subprocess.run(["podman", "exec", c, "python3", "/tmp/sysfs_sequence.py", "/run/simlab/sys",
                           "0000:3b:00.0", "mlx5_core"], env=ENV, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def on_vm(vmlab):
    proc = vmlab.sh("node02", "cat > /tmp/sysfs_sequence.py && python3 /tmp/sysfs_sequence.py /sys 0000:01:00.0 igbvf",
                    stdin=SEQUENCE.read_text())
    return json.loads(proc.stdout)


def test_the_twin_answers_the_sriov_sequence_as_the_kernel_does(vmlab, twin1):
    twin, real = on_twin(twin1), on_vm(vmlab)
    assert [s["step"] for s in twin] == [s["step"] for s in real]
    for t, r in zip(twin, real):
        assert t == r, f"step {r['step']!r}: twin {json.dumps(t, sort_keys=True)} != kernel {json.dumps(r, sort_keys=True)}"
    print(json.dumps(real, indent=1), file=sys.stderr)
