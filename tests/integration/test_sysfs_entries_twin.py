"""The twin's sysfs keeps its directory entries in the node's kernel and
still shows a change at once, as sysfs does.

The FUSE mount (simlab/node/fusefs.py) lets the kernel keep the entries it
looked up (a path walk asks the agent only for a component it has not seen),
and nothing else: attributes, link targets, listings and opens go to the
agent every time, and a name that did not exist is asked again. So a VF
removed by ``sriov_numvfs`` or a driver unbound is gone for stat, readlink,
open, access(2) and chdir on the next call, through entries the kernel still
holds (the VF's own directory under ``devices/`` is reached through
directories only, every one of them such an entry), and a VF created is there
at once where it was looked up and missing before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.twinlab import Twin, require_twin
from tests.vm.sysfs_entries import EXPECTED

pytestmark = [pytest.mark.twin, pytest.mark.layers(6)]

# the walks (tests/vm/sysfs_entries.py), and the answers a kernel gives, which
# the VM tier holds against Debian 12's kernel
WALKS = Path(__file__).parents[1] / "vm" / "sysfs_entries.py"


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    require_twin()
    t = Twin.up(tmp_path_factory, "se", "--nodes", "1", "--switches", "1")
    yield t
    t.down()


def test_a_vf_removed_or_unbound_is_gone_at_once_and_one_created_is_there(rack):
    rack.sh("node01", f"cat > /tmp/sysfs_entries.py <<'PYEOF'\n{WALKS.read_text()}PYEOF")
    steps = json.loads(rack.sh("node01", "python3 /tmp/sysfs_entries.py /run/simlab/sys 0000:3b:00.0").stdout)
    assert list(steps) == list(EXPECTED)
    for step, want in EXPECTED.items():
        # "created": looked up and missing just before; "removed": through entries the kernel still holds
        assert steps[step] == want, f"{step}: {steps[step]}"
