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
number is EINVAL.

Then VFs handed to VMs through vfio-pci, as layer 6 does it and back
(drivers/base/bus.c bind_store/unbind_store/drivers_probe_store,
pci_match_device() with driver_override; vfio-pci has no ID table): modprobe
vfio-pci; a bind without driver_override (ENODEV); the override, then a bind
while the VF is still on its driver (EBUSY); unbind, bind to vfio-pci (with
an IOMMU: bound, no netdev, an iommu_group alone; without: EINVAL from
vfio-pci's probe); bind again (EBUSY); the VF's driver binding or unbinding
it (ENODEV); drivers_probe on a bound VF (a no-op); back to the VF's driver
(override cleared, unbind, drivers_probe; the netdev comes back); VF 1 by
drivers_probe alone; sriov_numvfs 0 with a VF on vfio-pci, and VFs made
again come up on their own driver.  PCI addresses become VF0, VF1, PF."""

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
    vfio_steps(root, bdf, dev, numvfs, autoprobe, pywrite, step, wait_vfs, vf_driver, read)
    print(json.dumps(steps, indent=1, sort_keys=True))


def vfio_steps(root, bdf, dev, numvfs, autoprobe, pywrite, step, wait_vfs, vf_driver, read):
    pci = os.path.join(root, "bus/pci/devices")
    vfio = os.path.join(root, "bus/pci/drivers/vfio-pci")
    probe = os.path.join(root, "bus/pci/drivers_probe")
    own = os.path.join(root, "bus/pci/drivers", vf_driver)
    iommu = bool(os.listdir(os.path.join(root, "class/iommu")))
    p = subprocess.run(["modprobe", "vfio-pci"], capture_output=True, text=True)
    step("modprobe vfio-pci", rc=p.returncode, stderr=p.stderr.strip(), iommu=iommu,
         driver_files=sorted(n for n in os.listdir(vfio) if not n.startswith("0000:")) if os.path.isdir(vfio) else None)
    pywrite(numvfs, "0")
    auto, r = pywrite(autoprobe, "1"), pywrite(numvfs, "2")
    wait_vfs(2)
    vf0 = os.path.basename(os.path.realpath(os.path.join(dev, "virtfn0")))
    vf1 = os.path.basename(os.path.realpath(os.path.join(dev, "virtfn1")))
    names = {vf0: "VF0", vf1: "VF1", bdf: "PF"}
    d0, d1 = os.path.join(pci, vf0), os.path.join(pci, vf1)

    def role(name):
        return names.get(name, "OTHER")

    def driver(d):
        link = os.path.join(d, "driver")
        if not os.path.exists(link):
            return None
        name = os.path.basename(os.path.realpath(link))
        return "VF_DRIVER" if name == vf_driver else name

    def netdev(d, seconds=0):
        deadline = time.time() + seconds
        while True:
            there = os.path.isdir(os.path.join(d, "net")) and bool(os.listdir(os.path.join(d, "net")))
            if there or time.time() >= deadline:
                return there
            time.sleep(0.2)

    def group(d):
        link = os.path.join(d, "iommu_group")
        if not os.path.exists(link):
            return None
        members = os.listdir(os.path.join(link, "devices"))
        return sorted(role(m) for m in members)

    def on_vfio():
        return sorted(role(n) for n in os.listdir(vfio) if n.startswith("0000:")) if os.path.isdir(vfio) else None

    def state(d):
        return {"driver": driver(d), "netdev": netdev(d), "iommu_group": group(d),
                "numa_is_pfs": read(os.path.join(d, "numa_node")) == read(os.path.join(dev, "numa_node")),
                "override": read(os.path.join(d, "driver_override")).replace(vf_driver, "VF_DRIVER")}

    netdev(d0, 20)   # settled: udev has named the netdevs (the twin's take 0.25 s to appear)
    netdev(d1, 20)
    step("autoprobe on, 2 for VFIO", auto=auto, py=r, vf0=state(d0))
    step("bind VF 0 to vfio-pci without driver_override", py=pywrite(os.path.join(vfio, "bind"), vf0),
         vf0=state(d0))
    step("override vfio-pci, bind while on its driver", override=pywrite(os.path.join(d0, "driver_override"),
                                                                         "vfio-pci"),
         py=pywrite(os.path.join(vfio, "bind"), vf0), vf0=state(d0))
    step("unbind VF 0 from its driver", py=pywrite(os.path.join(d0, "driver", "unbind"), vf0), vf0=state(d0))
    step("bind VF 0 to vfio-pci", py=pywrite(os.path.join(vfio, "bind"), vf0 + "\n"), vf0=state(d0),
         on_vfio=on_vfio())
    step("bind VF 0 to vfio-pci again", py=pywrite(os.path.join(vfio, "bind"), vf0))
    step("its own driver binds or unbinds it", bind=pywrite(os.path.join(own, "bind"), vf0),
         unbind=pywrite(os.path.join(own, "unbind"), vf0), vf0=state(d0))
    step("drivers_probe while bound", py=pywrite(probe, vf0), vf0=state(d0))
    back = [pywrite(os.path.join(d0, "driver_override"), "\n")]
    back.append(pywrite(os.path.join(d0, "driver", "unbind"), vf0) if os.path.exists(os.path.join(d0, "driver"))
                else "no driver")
    back.append(pywrite(probe, vf0))
    netdev(d0, 20)
    step("back to its driver: override cleared, unbind, drivers_probe", py=back, vf0=state(d0), on_vfio=on_vfio())
    v1 = [pywrite(os.path.join(d1, "driver_override"), "vfio-pci"), pywrite(os.path.join(d1, "driver", "unbind"), vf1),
          pywrite(probe, vf1)]
    step("VF 1 to vfio-pci by drivers_probe", py=v1, vf1=state(d1), on_vfio=on_vfio())
    step("sriov_numvfs 0 with VF 1 on vfio-pci", py=pywrite(numvfs, "0"), on_vfio=on_vfio())
    r = pywrite(numvfs, "2")
    wait_vfs(2)
    netdev(d0, 20)
    netdev(d1, 20)
    step("2 again after that", py=r, vf0=state(d0), vf1=state(d1))
    pywrite(numvfs, "0")


if __name__ == "__main__":
    main(*sys.argv[1:4])
