"""One scripted sequence on the RDMA-CM configfs
(drivers/infiniband/core/cma_configfs.c): make a device's group, read and
write default_roce_mode and default_roce_tos with good and bad values, drop
the group and make it again (the values live in the RDMA-CM device).  Run on a
real kernel (a VM node's rxe device) and on a twin node (its FUSE sysfs);
the answers must be the same.  Prints one JSON object; leaves the device as
it found it.

    python3 configfs_sequence.py <configfs root> <RDMA device>
"""

import errno
import json
import os
import sys


def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))


def write(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read(path):
    with open(path) as f:
        return f.read()


def main(root, dev):
    cm = os.path.join(root, "rdma_cm")
    group = os.path.join(cm, dev)
    port = os.path.join(group, "ports", "1")
    out = {"present": os.path.isdir(cm), "mkdir a missing device": attempt(lambda: os.mkdir(os.path.join(cm, "nosuch0")))}
    existed = os.path.isdir(group)
    out["mkdir"] = "ok" if existed else attempt(lambda: os.mkdir(group))
    out["mkdir again"] = attempt(lambda: os.mkdir(group))
    out["ports"] = sorted(os.listdir(os.path.join(group, "ports")))
    out["files"] = sorted(os.listdir(port))
    mode0, tos0 = read(port + "/default_roce_mode"), read(port + "/default_roce_tos")
    out["read"] = [mode0, tos0]
    for value in ("106\n", "0x20", "010", "08", "300", "abc", "-1"):
        out["tos %r" % value] = [attempt(lambda: write(port + "/default_roce_tos", value.encode())),
                                 read(port + "/default_roce_tos")]
    for value in ("RoCE v2", "RoCE v2\n", "RoCE v1", "roce v2", "RoCE v2\r\n", "2"):
        out["mode %r" % value] = [attempt(lambda: write(port + "/default_roce_mode", value.encode())),
                                  read(port + "/default_roce_mode")]
    write(port + "/default_roce_tos", b"106")
    out["rmdir"] = attempt(lambda: os.rmdir(group))
    out["listed after rmdir"] = dev in os.listdir(cm)
    out["mkdir after rmdir"] = attempt(lambda: os.mkdir(group))
    out["tos kept"] = read(port + "/default_roce_tos")
    write(port + "/default_roce_tos", tos0.encode())
    write(port + "/default_roce_mode", mode0.encode())
    if not existed:
        os.rmdir(group)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
