"""One VM node: its QEMU command line, start, power state and QMP.

A node's files live in ``<lab>/nodes/<node>/``: ``disk.qcow2`` (a
copy-on-write overlay of the guest image, made by the lab), ``console.log``
(the serial console: GRUB, the kernel, systemd), ``qmp.sock``, ``qemu.pid``.

What firmware decides is decided here at each power-on, from the BMC's BIOS
state: the emulated VT-d IOMMU is on the machine only while the BIOS has
VT-d enabled, as a real board hides DMAR from the OS when it is disabled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from . import image
from .qmp import Qmp, QmpError

# SMBIOS system information per BMC vendor (what dmidecode shows on such a server).
SMBIOS = {
    "dell": ("Dell Inc.", "PowerEdge XE9680"),
    "hpe": ("HPE", "ProLiant XD685"),
    "supermicro": ("Supermicro", "SYS-821GE-TNHR"),
}
LOOPBACK = "127.0.0.1"


def node_dir(lab_dir: Path, node: str) -> Path:
    return Path(lab_dir) / "nodes" / node


def accel() -> str:
    """``tcg`` unless a KVM probe on this machine showed a guest booting (see :func:`probe_kvm`)."""
    probe = image.out_dir() / "kvm-probe.json"
    try:
        doc = json.loads(probe.read_text())
        if doc.get("boot_id") == Path("/proc/sys/kernel/random/boot_id").read_text().strip():
            return "kvm" if doc.get("boots") else "tcg"
    except (OSError, ValueError):
        pass
    boots = probe_kvm()
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_text(json.dumps({"boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
                                 "boots": boots}) + "\n")
    return "kvm" if boots else "tcg"


def probe_kvm(seconds: float = 25.0) -> bool:
    """Does the guest image boot under KVM here?  ``/dev/kvm`` can exist and
    accept ioctls, and even run SeaBIOS, while a guest never gets through its
    boot loader: the probe boots the node image itself (a throw-away
    snapshot) and waits for the kernel's first line on the serial console."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    disk = image.guest_dir() / "disk.qcow2"
    if not disk.exists():
        return False
    log = image.out_dir() / "kvm-probe.log"
    log.unlink(missing_ok=True)
    proc = subprocess.Popen([*image.qemu_argv(), *image.firmware_args(), "-accel", "kvm", "-machine", "q35",
                             "-m", "512", "-snapshot", "-drive", f"file={disk},if=virtio,format=qcow2",
                             "-display", "none", "-vga", "none", "-monitor", "none", "-net", "none",
                             "-serial", f"file:{log}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + seconds
    booted = False
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and "Linux version" in log.read_text(errors="replace"):
            booted = True
            break
        time.sleep(0.5)
    proc.kill()
    proc.wait()
    return booted


def argv(lab_name: str, lab_dir: Path, hw: dict, iommu: bool, accel_name: str = "tcg") -> list[str]:
    d = node_dir(lab_dir, hw["name"])
    args = [*image.qemu_argv(), *image.firmware_args(),
            "-name", f"{lab_name}-{hw['name']},process=simlab-{lab_name}-{hw['name']}",
            "-machine", "q35,kernel-irqchip=split" if accel_name == "kvm" else "q35",
            "-accel", "kvm" if accel_name == "kvm" else "tcg,thread=multi",
            "-cpu", "max", "-smp", str(hw.get("smp", 2)), "-m", str(hw.get("memory_mb", 1536))]
    if iommu:
        args += iommu_args(accel_name)
    args += board_args(lab_dir, hw)
    args += ["-display", "none", "-vga", "none", "-monitor", "none",
             "-serial", f"file:{d / 'console.log'}",
             "-qmp", f"unix:{d / 'qmp.sock'},server=on,wait=off",
             "-pidfile", str(d / "qemu.pid"), "-daemonize"]
    return args


def iommu_args(accel_name: str = "tcg") -> list[str]:
    """The emulated VT-d IOMMU, on the machine while the BIOS has VT-d enabled."""
    return ["-device", "intel-iommu,intremap=on" + (",caching-mode=on" if accel_name == "kvm" else "")]


def board_args(lab_dir: Path, hw: dict) -> list[str]:
    """The node's devices and SMBIOS identity, whoever starts its QEMU: this
    module (:func:`argv`) or libvirt under sushy-tools' emulator
    (:mod:`simlab.vm.sushy`, which passes them through the domain)."""
    d = node_dir(lab_dir, hw["name"])
    maker, product = SMBIOS.get(hw.get("bmc_vendor", "dell"), SMBIOS["dell"])
    # a hardware RNG, as servers have: without one, early-boot key generation
    # waits for entropy that an emulated machine gathers slowly
    args = ["-device", "virtio-rng-pci",
            "-drive", f"file={d / 'disk.qcow2'},if=virtio,format=qcow2,cache=unsafe,discard=unmap",
            "-netdev", f"user,id=mgmt,restrict=on,hostfwd=tcp:{LOOPBACK}:{hw['ssh_port']}-:22",
            "-device", f"virtio-net-pci,netdev=mgmt,mac={hw['mgmt_mac']},addr=0x3"]
    for nic in hw["nics"]:
        r = nic["index"] + 1
        args += ["-device", f"pcie-root-port,id=rp{r},chassis={r},slot={r}",
                 "-netdev", (f"dgram,id=fab{nic['index']},local.type=inet,local.host={LOOPBACK},"
                             f"local.port={nic['vm_port']},remote.type=inet,remote.host={LOOPBACK},"
                             f"remote.port={nic['hub_port']}"),
                 "-device", f"igb,netdev=fab{nic['index']},mac={nic['mac']},bus=rp{r}"]
    args += ["-smbios", f"type=1,manufacturer={maker},product={product},serial={hw['name']}"]
    return args


def pid(lab_dir: Path, node: str) -> int | None:
    try:
        p = int((node_dir(lab_dir, node) / "qemu.pid").read_text())
        os.kill(p, 0)
        return p
    except (OSError, ValueError):
        return None


def start(lab_name: str, lab_dir: Path, hw: dict, iommu: bool) -> None:
    """Power on: a new QEMU process (the console log starts anew, as a boot does)."""
    d = node_dir(lab_dir, hw["name"])
    if pid(lab_dir, hw["name"]):
        return
    console = d / "console.log"
    if console.exists():
        console.replace(d / "console.prev.log")
    (d / "qmp.sock").unlink(missing_ok=True)
    cmd = argv(lab_name, lab_dir, hw, iommu, accel())
    (d / "qemu.argv").write_text(json.dumps(cmd) + "\n")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"QEMU for {hw['name']} did not start ({proc.returncode}): {proc.stderr.strip()}")


def qmp(lab_dir: Path, node: str, timeout: float = 10.0) -> Qmp:
    return Qmp(node_dir(lab_dir, node) / "qmp.sock", timeout=timeout)


def state(lab_dir: Path, node: str) -> str:
    if not pid(lab_dir, node):
        return "Off"
    try:
        with qmp(lab_dir, node) as q:
            status = q.execute("query-status")
    except QmpError:
        return "Off"
    return "Off" if status.get("status") in ("shutdown", "guest-panicked") else "On"


def wait_exit(lab_dir: Path, node: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid(lab_dir, node):
            return True
        time.sleep(0.2)
    return False


def stop(lab_dir: Path, node: str, force: bool, timeout: float = 60.0) -> None:
    """Power off: ACPI power button and wait (graceful), or pull the plug."""
    p = pid(lab_dir, node)
    if not p:
        return
    try:
        with qmp(lab_dir, node) as q:
            q.execute("quit" if force else "system_powerdown")
    except QmpError:
        if not force:
            raise
    if wait_exit(lab_dir, node, 10 if force else timeout):
        return
    if not force:
        stop(lab_dir, node, force=True)
        return
    try:
        os.kill(p, signal.SIGKILL)
    except OSError:
        pass
    wait_exit(lab_dir, node, 10)


def set_link(lab_dir: Path, node: str, nic: int, up: bool) -> None:
    """Plug or pull a fabric cable: the guest's igb sees carrier come or go."""
    with qmp(lab_dir, node) as q:
        q.execute("set_link", name=f"fab{nic}", up=up)


def console_tail(lab_dir: Path, node: str, lines: int = 20) -> str:
    path = node_dir(lab_dir, node) / "console.log"
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no console log)"
