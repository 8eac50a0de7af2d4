"""One scripted sequence of SR-IOV operations on a PF, run the same way on a
twin node and on a VM node; it prints what each step saw as JSON, with the
device-specific parts (PCI addresses, netdev names, counts) replaced by
their role, so the two records compare equal where the twin is faithful.

    python3 sysfs_sequence.py SYSFS_ROOT PF_BDF VF_DRIVER

Standard library only: it runs inside the twin's containers and the VM
guests with their own python3.  Writes go both through ``os.write`` (one
write(2), as the collection's modules write) and through ``bash``/``sh -c
'echo N > FILE'`` (as persistence scripts and people write), and the errno of
each is recorded, as are file contents, links, driver_override and ``ip -j
link`` (VF MAC, trust, spoofchk).  A VF whose PF has autoprobe off binds
only with a driver_override (pci_device_can_probe() in
drivers/pci/pci-driver.c): the first catch of this comparison.  The sequence follows the kernel's rules for sriov_numvfs
(drivers/pci/iov.c, sriov_numvfs_store): 0 then N; N over M is EBUSY; more
than sriov_totalvfs is ERANGE; the same value again is accepted; not a
number is EINVAL."""

import errno
import json
import os
import subprocess
import sys
import time


def main(root, bdf, vf_driver):
    dev = os.path.join(root, "bus/pci/devices", bdf)
    numvfs = os.path.join(dev, "sriov_numvfs")
    autoprobe = os.path.join(dev, "sriov_drivers_autoprobe")
    total = int(open(os.path.join(dev, "sriov_totalvfs")).read())
    netdev = os.listdir(os.path.join(dev, "net"))[0]
    steps = []

    def pywrite(path, value):
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, value.encode())
            finally:
                os.close(fd)
            return "ok"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    def shwrite(path, value):
        """What bash and dash say.  bash names the errno ("write error:
        Device or resource busy"); dash's echo says "I/O error" for any
        failed write, on a real kernel as on the twin."""
        said = {}
        for shell in ("bash", "sh"):
            p = subprocess.run([shell, "-c", "echo %s > %s" % (value, path)], capture_output=True, text=True)
            said[shell] = "ok" if p.returncode == 0 else p.stderr.strip().rsplit(":", 1)[-1].strip()
        return said

    def vfs():
        names = sorted(n for n in os.listdir(dev) if n.startswith("virtfn"))
        out = []
        for n in names:
            vf = os.path.realpath(os.path.join(dev, n))
            phys = os.path.realpath(os.path.join(vf, "physfn"))
            drv = os.path.join(vf, "driver")
            out.append({"link": n, "physfn_is_pf": os.path.basename(phys) == bdf,
                        "driver": "VF_DRIVER" if os.path.basename(os.path.realpath(drv)) == vf_driver
                        else (os.path.basename(os.path.realpath(drv)) if os.path.exists(drv) else None)})
        return out

    def wait_vfs(n, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            v = vfs()
            if len(v) == n and all(x["driver"] for x in v):
                return
            time.sleep(0.2)

    def read(path):
        return open(path).read().strip()

    def step(name, **data):
        data["numvfs"] = read(numvfs)
        data["vfs"] = vfs()
        steps.append(dict(step=name, **data))

    def count(n):
        return "TOTAL" if n == total else ("TOTAL+1" if n == total + 1 else str(n))

    def ip_vfs():
        p = subprocess.run(["ip", "-j", "link", "show", "dev", netdev], capture_output=True, text=True)
        if p.returncode != 0:
            return {"error": p.stderr.strip()}
        info = json.loads(p.stdout)[0].get("vfinfo_list", [])
        # query_rss_en is there only where the driver reports it (mlx5 does, igb does not)
        return [{"vf": v.get("vf"), "address": v.get("address"), "spoofchk": v.get("spoofchk"),
                 "trust": v.get("trust"), "keys": sorted(set(v) - {"query_rss_en"})} for v in info]

    pywrite(numvfs, "0")
    step("start at 0")
    r = pywrite(numvfs, "2")
    wait_vfs(2)
    step("0 then 2", py=r)
    step("2 again", py=pywrite(numvfs, "2"), sh=shwrite(numvfs, "2"))
    step("3 over 2", py=pywrite(numvfs, "3"), sh=shwrite(numvfs, "3"))
    step("above total", value=count(total + 1), py=pywrite(numvfs, str(total + 1)),
         sh=shwrite(numvfs, str(total + 1)))
    step("not a number", py=pywrite(numvfs, "abc"), sh=shwrite(numvfs, "abc"))
    step("back to 0", py=pywrite(numvfs, "0"))
    step("autoprobe off", py=pywrite(autoprobe, "0"), read=read(autoprobe))
    step("2 without drivers", py=pywrite(numvfs, "2"))
    first_vf = os.path.basename(os.path.realpath(os.path.join(dev, "virtfn0")))
    bind = os.path.join(root, "bus/pci/drivers", vf_driver, "bind")
    step("bind VF 0 without driver_override", py=pywrite(bind, first_vf))
    override = os.path.join(dev, "virtfn0", "driver_override")
    step("driver_override of VF 0", py=pywrite(override, vf_driver),
         read="VF_DRIVER" if read(override) == vf_driver else read(override))
    r = pywrite(bind, first_vf)
    time.sleep(1)
    step("bind VF 0 with driver_override", py=r)
    step("bind VF 0 again", py=pywrite(bind, first_vf))
    step("clear driver_override", py=pywrite(override, "\n"), read=read(override))
    pywrite(numvfs, "0")
    auto, r = pywrite(autoprobe, "1"), pywrite(numvfs, "2")
    wait_vfs(2)
    step("autoprobe on, 2 again", auto=auto, py=r)
    mac = "02:00:00:00:00:01"
    ip = []
    for args in (["mac", mac], ["trust", "on"], ["spoofchk", "off"]):
        p = subprocess.run(["ip", "link", "set", "dev", netdev, "vf", "0"] + args, capture_output=True, text=True)
        ip.append(p.returncode)
    vf_info = ip_vfs()
    step("VF 0 mac, trust, spoofchk", rc=ip, vf0=vf_info[0] if vf_info else None, count=len(vf_info))
    pywrite(numvfs, "0")
    driver = os.path.basename(os.path.realpath(os.path.join(dev, "driver")))
    step("PF unbind", py=pywrite(os.path.join(dev, "driver", "unbind"), bdf),
         netdev=os.path.exists(os.path.join(root, "class/net", netdev)), driver=os.path.exists(os.path.join(dev, "driver")),
         numvfs_file=os.path.exists(numvfs))
    step("PF bind", py=pywrite(os.path.join(root, "bus/pci/drivers", driver, "bind"), bdf))
    time.sleep(1)
    steps[-1]["driver"] = os.path.exists(os.path.join(dev, "driver"))
    print(json.dumps(steps, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(*sys.argv[1:4])
