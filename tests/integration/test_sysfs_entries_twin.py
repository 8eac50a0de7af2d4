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

import pytest

from tests.integration.twinlab import Twin, require_twin

pytestmark = [pytest.mark.twin, pytest.mark.layers(6)]

SCRIPT = r'''
import errno, json, os, time
root = "/run/simlab/sys"
dev = root + "/bus/pci/devices/0000:3b:00.0"
numvfs = dev + "/sriov_numvfs"
vf1 = dev + "/virtfn1"


def write(path, value):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def wait(path, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end and not os.path.exists(path):
        time.sleep(0.05)


def read(path):
    with open(path) as f:
        return f.read()


def seen(path):
    out = {}
    for name, call in (("lstat", os.lstat), ("stat", os.stat), ("readlink", os.readlink), ("read", read)):
        try:
            call(path)
            out[name] = "ok"
        except OSError as exc:
            out[name] = errno.errorcode[exc.errno]
    return out


def seen_dir(path):
    """what access, chdir, an open of the directory and its listing say of
    path, a directory reached through directories only (no link to read on
    the way, so every component can be an entry the kernel holds)"""
    out = {}

    def opendir(p):
        os.close(os.open(p, os.O_RDONLY | os.O_DIRECTORY))

    out["access"] = os.access(path, os.R_OK)
    out["access vendor"] = os.access(path + "/vendor", os.R_OK)
    for name, call in (("chdir", os.chdir), ("opendir", opendir), ("listdir", os.listdir),
                       ("vendor", lambda p: read(p + "/vendor"))):
        try:
            call(path)
            out[name] = "ok"
        except OSError as exc:
            out[name] = errno.errorcode[exc.errno]
        finally:
            os.chdir("/")
    return out


def walk():
    """every kind of entry under VF 1, asked three times (the kernel keeps
    what the first walk looked up); the three answers, or the one they all
    gave"""
    got = [{"virtfn1": seen(vf1), "vendor": seen(vf1 + "/vendor"), "driver": seen(vf1 + "/driver"),
            "physfn": seen(vf1 + "/physfn"), "listed": "virtfn1" in os.listdir(dev), "device": seen_dir(real)}
           for _ in range(3)]
    return got[0] if got[1:] == got[:2] else got


steps = {}
write(numvfs, "2")
wait(vf1 + "/driver")
real = os.path.realpath(vf1)     # VF 1's directory under devices/
write(numvfs, "0")
steps["before"] = walk()
write(numvfs, "2")
wait(vf1 + "/driver")
real = os.path.realpath(vf1)
steps["created"] = walk()
bdf = os.path.basename(os.readlink(vf1))
write(vf1 + "/driver/unbind", bdf)
steps["unbound"] = walk()
write(root + "/bus/pci/drivers_probe", bdf)
steps["probed"] = walk()
write(numvfs, "0")
steps["removed"] = walk()
write(numvfs, "2")
wait(vf1 + "/driver")
steps["again"] = walk()
print(json.dumps(steps))
'''

GONE = {"lstat": "ENOENT", "stat": "ENOENT", "readlink": "ENOENT", "read": "ENOENT"}
DEVICE = {"access": True, "access vendor": True, "chdir": "ok", "opendir": "ok", "listdir": "ok", "vendor": "ok"}
NO_DEVICE = {"access": False, "access vendor": False, "chdir": "ENOENT", "opendir": "ENOENT", "listdir": "ENOENT",
             "vendor": "ENOENT"}
DIR_LINK = {"lstat": "ok", "stat": "ok", "readlink": "ok", "read": "EISDIR"}
FILE = {"lstat": "ok", "stat": "ok", "readlink": "EINVAL", "read": "ok"}
NO_VF = {"virtfn1": GONE, "vendor": GONE, "driver": GONE, "physfn": GONE, "listed": False, "device": NO_DEVICE}
VF = {"virtfn1": DIR_LINK, "vendor": FILE, "driver": DIR_LINK, "physfn": DIR_LINK, "listed": True, "device": DEVICE}


@pytest.fixture(scope="module")
def rack(tmp_path_factory):
    require_twin()
    t = Twin.up(tmp_path_factory, "se", "--nodes", "1", "--switches", "1")
    yield t
    t.down()


def test_a_vf_removed_or_unbound_is_gone_at_once_and_one_created_is_there(rack):
    out = rack.sh("node01", "python3 - <<'EOF'\n" + SCRIPT + "EOF\n")
    steps = json.loads(out.stdout)
    assert steps["before"] == NO_VF, steps["before"]
    assert steps["created"] == VF, steps["created"]          # looked up and missing just before
    assert steps["unbound"] == dict(VF, driver=GONE), steps["unbound"]
    assert steps["probed"] == VF, steps["probed"]
    assert steps["removed"] == NO_VF, steps["removed"]        # through entries the kernel still holds
    assert steps["again"] == VF, steps["again"]
