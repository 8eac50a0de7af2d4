"""A VF's sysfs entries walked through the states of SR-IOV, run the same
way on a twin node and on a VM node; it prints what each walk saw as JSON.

    python3 sysfs_entries.py SYSFS_ROOT PF_BDF

Standard library only: it runs inside the twin's containers and the VM
guests with their own python3.  The PF's VFs are set to 0 and then 2; VF 1
is walked before it exists, once created, with its driver unbound, probed
again, removed and created again.  Each walk asks every kind of entry under
VF 1 three times (stat, lstat, readlink, read of ``virtfn1``, its
``vendor``, ``driver`` and ``physfn``; whether the PF's listing names it;
access(2), chdir, an open and a listing of the VF's own directory under
``devices/`` and of its driver's directory through its ``driver`` link, and
a read of its ``vendor``), and the three walks must agree: the twin's FUSE
sysfs lets the node's kernel keep the directory entries it looked up
(simlab/node/fusefs.py), and a removal must still show on the next call, as
kernfs revalidates each entry (fs/kernfs/dir.c, kernfs_dop_revalidate).
Each step also says whether VF 1 had its driver when the step's write
returned: the kernel probes a new VF, and binds one on ``drivers_probe``,
before the write returns (drivers/pci/iov.c: pci_iov_add_virtfn ->
pci_bus_add_device -> device_attach; drivers/base/bus.c: drivers_probe_store
-> bus_rescan_devices_helper -> device_attach).  The answers a kernel gives are below (NO_VF, VF);
tests/vm/test_vm_twin_faithful.py holds them, and the twin's, against Debian
12's kernel, tests/integration/test_sysfs_entries_twin.py the twin's alone."""

import errno
import json
import os
import sys
import time

GONE = {"lstat": "ENOENT", "stat": "ENOENT", "readlink": "ENOENT", "read": "ENOENT"}
DEVICE = {"access": True, "access vendor": True, "chdir": "ok", "opendir": "ok", "listdir": "ok", "vendor": "ok"}
NO_DEVICE = {"access": False, "access vendor": False, "chdir": "ENOENT", "opendir": "ENOENT", "listdir": "ENOENT",
             "vendor": "ENOENT"}
DIR_LINK = {"lstat": "ok", "stat": "ok", "readlink": "ok", "read": "EISDIR"}
FILE = {"lstat": "ok", "stat": "ok", "readlink": "EINVAL", "read": "ok"}
# a driver's directory, through the VF's driver link: no vendor file in it
DRIVER_DIR = dict(DEVICE, **{"access vendor": False, "vendor": "ENOENT"})
NO_VF = {"virtfn1": GONE, "vendor": GONE, "driver": GONE, "physfn": GONE, "listed": False, "device": NO_DEVICE,
         "driver dir": NO_DEVICE, "driver at once": False}
VF = {"virtfn1": DIR_LINK, "vendor": FILE, "driver": DIR_LINK, "physfn": DIR_LINK, "listed": True, "device": DEVICE,
      "driver dir": DRIVER_DIR, "driver at once": True}
# what each step's walk sees, in the order the steps run
EXPECTED = {"before": NO_VF, "created": VF,
            "unbound": dict(VF, driver=GONE, **{"driver dir": NO_DEVICE, "driver at once": False}),
            "probed": VF, "removed": NO_VF, "again": VF}


def write(path, value):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def wait(path, seconds=60):
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
    """what access, chdir, an open of the directory, its listing and a read
    of its vendor file say of path: the VF's own directory under devices/
    (reached through directories only, no link to read on the way, so every
    component can be an entry the kernel holds), or its driver's directory
    through the VF's driver link"""
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


def main(root, bdf):
    dev = f"{root}/bus/pci/devices/{bdf}"
    numvfs = dev + "/sriov_numvfs"
    vf1 = dev + "/virtfn1"
    real = None  # VF 1's directory under devices/

    def walk(at_once):
        """every kind of entry under VF 1, asked three times (the kernel
        keeps what the first walk looked up), and whether VF 1 had its
        driver when the step's write returned (at_once); the one answer
        they all gave, or the three"""
        got = [{"virtfn1": seen(vf1), "vendor": seen(vf1 + "/vendor"), "driver": seen(vf1 + "/driver"),
                "physfn": seen(vf1 + "/physfn"), "listed": "virtfn1" in os.listdir(dev), "device": seen_dir(real),
                "driver dir": seen_dir(real + "/driver"), "driver at once": at_once}
               for _ in range(3)]
        return got[0] if all(g == got[0] for g in got) else got

    def bound():
        return os.path.lexists(vf1 + "/driver")

    def create():
        """VFs 0 -> 2; whether VF 1 had its driver when the write returned
        (the kernel probes a new VF before it does)"""
        write(numvfs, "2")
        at_once = bound()
        wait(vf1 + "/driver")
        return at_once

    # from whatever an earlier test left: VFs probed by their driver, none made
    write(dev + "/sriov_drivers_autoprobe", "1")
    write(numvfs, "0")
    create()
    real = os.path.realpath(vf1)
    write(numvfs, "0")
    steps = {"before": walk(bound())}
    at_once = create()
    real = os.path.realpath(vf1)
    steps["created"] = walk(at_once)
    vf = os.path.basename(os.readlink(vf1))
    write(vf1 + "/driver/unbind", vf)
    steps["unbound"] = walk(bound())
    write(root + "/bus/pci/drivers_probe", vf)
    at_once = bound()
    wait(vf1 + "/driver")
    steps["probed"] = walk(at_once)
    write(numvfs, "0")
    steps["removed"] = walk(bound())
    steps["again"] = walk(create())
    return steps


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
