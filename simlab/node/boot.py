"""What happens when a twin node boots (systemd starts ``simlab-node.service``).

* The firmware's next-boot configuration becomes current (mlxconfig changes
  take effect on reboot), and a firmware image burned since the last boot runs.
* BIOS settings come from the BMC's state (pending ones were applied by the BMC
  at reset); the kernel command line comes from the GRUB config the way
  GRUB would boot it (``/boot/grub/grub.cfg``, written by ``update-grub``).
* VFs do not survive: the kernel starts with ``sriov_numvfs`` 0 on every PF.

Paths inside the node: the lab directory of this node is mounted at
``/var/lib/simlab/lab`` (hardware.json, firmware.json, bios.json, faults.json).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
from pathlib import Path

from . import hardware

LAB = Path(os.environ.get("SIMLAB_LAB_DIR", "/var/lib/simlab/lab"))
RUN = Path(os.environ.get("SIMLAB_RUN_DIR", "/run/simlab"))
GRUB_DEFAULT = Path("/etc/default/grub")
GRUB_CFG = Path("/boot/grub/grub.cfg")
KERNEL = "/boot/vmlinuz-6.1.0-28-amd64"
ROOT = "root=UUID=6f1c3e2a-5d4b-4c8e-9a7f-2b1d0e9c8a11 ro"

FACTORY_GRUB = """# If you change this file, run 'update-grub' afterwards to update
# /boot/grub/grub.cfg.
# For full documentation of the options in this file, see:
#   info -f grub -n 'Simple configuration'

GRUB_DEFAULT=0
GRUB_TIMEOUT=5
GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`
GRUB_CMDLINE_LINUX_DEFAULT="quiet"
GRUB_CMDLINE_LINUX="{extra}"
"""


def read_json(path: Path, default):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return default


def write_json(path: Path, data) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def grub_cmdline_from_cfg(text: str) -> str | None:
    for line in text.splitlines():
        m = re.match(r"\s*linux\s+(\S+)\s*(.*)$", line)
        if m:
            # GRUB's script quoting is the shell's: quotes around an argument
            # (one with ';' in it) do not reach the kernel
            try:
                args = " ".join(shlex.split(m.group(2)))
            except ValueError:
                args = m.group(2)
            return f"BOOT_IMAGE={m.group(1)} {args}".strip()
    return None


# where layer 3 (the kernel role) keeps its arguments
GRUB_DROPIN = Path("/etc/default/grub.d/gpufabric.cfg")


def ensure_grub(preset: str, gpus: int = 0) -> None:
    """A fresh node image has GRUB's factory files, with or without the
    IOMMU flags depending on the lab's preset; a ready GPU node also has ACS
    redirect off on its PCIe switches, in the drop-in where layer 3 puts
    that argument (and from where it takes it away for a node whose VFs go
    to VMs)."""
    if not GRUB_DEFAULT.exists():
        extra = "intel_iommu=on iommu=pt" if preset == "ready" else ""
        GRUB_DEFAULT.parent.mkdir(parents=True, exist_ok=True)
        GRUB_DEFAULT.write_text(FACTORY_GRUB.format(extra=extra))
        if preset == "ready" and gpus:
            sw = hardware.PCIE_SWITCH
            GRUB_DROPIN.parent.mkdir(parents=True, exist_ok=True)
            GRUB_DROPIN.write_text('GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX '
                                   f'pci=disable_acs_redir=pci:{sw["vendor"]:04x}:{sw["device"]:04x}"\n')
    if not GRUB_CFG.exists():
        from simlab.tools.grub import update_grub
        update_grub(quiet=True)


def bios_effective(hw: dict) -> dict:
    """SR-IOV / IOMMU / ACS as the BIOS set them at this boot."""
    path = LAB / "bios.json"
    if path.exists():
        from simlab.bmc.state import load_bios
        from simlab.bmc.vendors import effective
        bios = load_bios(path)
        return effective(bios["vendor"], bios.get("current", bios.get("attributes", {})))
    return dict(hw.get("bios_default", {"sriov": True, "iommu": True, "acs": False}))


def boot_firmware(hw: dict) -> dict:
    path = LAB / "firmware.json"
    fw = read_json(path, None)
    if fw is None:
        fw = hardware.factory_firmware(hw)
        if hw.get("preset", "ready") == "ready":
            for nic in hardware.nic_specs(hw):
                for col in ("current", "next"):
                    fw[nic.bdf][col].update(SRIOV_EN=1, NUM_OF_VFS=nic.totalvfs)
    for state in fw.values():
        state["current"] = dict(state["next"])
        state["running_fw_version"] = state["fw_version"]
    write_json(path, fw)
    return fw


def node_hardware() -> dict:
    """The lab's description of this node; a node started outside a lab (for
    example by Molecule) describes itself: the default GPU node, named after
    its hostname, shaped by SIMLAB_* environment variables of PID 1."""
    path = LAB / "hardware.json"
    if path.exists():
        return hardware.load(path)
    env = _init_env()
    name = socket.gethostname()
    digits = "".join(ch for ch in name if ch.isdigit()) or "1"
    hw = hardware.default_spec(name, int(digits[-3:]) or 1, nics=int(env.get("SIMLAB_NICS", 2)),
                               model=env.get("SIMLAB_MODEL", "cx7"), driver=env.get("SIMLAB_DRIVER", "inbox"),
                               totalvfs=int(env.get("SIMLAB_TOTALVFS", hardware.DEFAULT_TOTALVFS)))
    hw["preset"] = env.get("SIMLAB_PRESET", "ready")
    hw["bios_default"] = {"sriov": hw["preset"] == "ready", "iommu": hw["preset"] == "ready", "acs": False}
    LAB.mkdir(parents=True, exist_ok=True)
    hardware.dump(hw, path)
    return hw


def _init_env() -> dict:
    """Environment of PID 1 (podman run -e ...), which systemd does not pass on."""
    try:
        raw = Path("/proc/1/environ").read_bytes()
    except OSError:
        return dict(os.environ)
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


MODULES_LOAD_DIRS = ("/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d",
                     "/usr/lib/modules-load.d")
SYSCTL_DIRS = ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d")


def _conf_files(dirs, root: Path = Path("/")) -> list[Path]:
    """systemd's conf.d order: by file name across the directories, the first
    directory's file winning over a same-named one later."""
    chosen: dict[str, Path] = {}
    for d in dirs:
        base = root / d.lstrip("/")
        if base.is_dir():
            for f in sorted(base.glob("*.conf")):
                chosen.setdefault(f.name, f)
    return [chosen[n] for n in sorted(chosen)]


def boot_modules(root: Path = Path("/")) -> list[str]:
    """Module names from modules-load.d, as systemd-modules-load reads them."""
    out = []
    for f in _conf_files(MODULES_LOAD_DIRS, root):
        for line in f.read_text(errors="replace").splitlines():
            line = line.strip()
            if line and not line.startswith(("#", ";")):
                out.append(line.replace("-", "_"))
    return out


def boot_sysctls(root: Path = Path("/")) -> list[tuple[str, str]]:
    """(key, value) from sysctl.d and /etc/sysctl.conf, in systemd-sysctl's
    order (later settings of a key win), for the keys the twin models."""
    from .sysctls import sysctl_key, sysctl_modelled
    files = _conf_files(SYSCTL_DIRS, root)
    conf = root / "etc/sysctl.conf"
    if conf.is_file() and not any(f.resolve() == conf.resolve() for f in files):
        files.append(conf)
    out = []
    for f in files:
        for line in f.read_text(errors="replace").splitlines():
            line = line.strip()
            if not line or line.startswith(("#", ";")) or "=" not in line:
                continue
            key, value = (part.strip() for part in line.split("=", 1))
            key = sysctl_key(key.lstrip("-"))
            if sysctl_modelled(key):
                out.append((key, value))
    return out


def boot() -> dict:
    """Compute the boot state; returns the arguments for ``Kernel``."""
    hw = node_hardware()
    ensure_grub(hw.get("preset", "ready"), int(hw.get("gpus", 0) or 0))
    cmdline = grub_cmdline_from_cfg(GRUB_CFG.read_text()) or f"BOOT_IMAGE={KERNEL} {ROOT}"
    (RUN / "proc").mkdir(parents=True, exist_ok=True)
    (RUN / "proc" / "cmdline").write_text(cmdline + "\n")
    # the running kernel's release, as /proc/sys/kernel/osrelease shows it (the host's)
    (RUN / "proc" / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
    (RUN / "proc" / "sys" / "kernel" / "osrelease").write_text(os.uname().release + "\n")
    faults = read_json(LAB / "faults.json", {})
    return {"hw": hw, "firmware": boot_firmware(hw), "cmdline": cmdline,
            "bios": bios_effective(hw), "faults": faults}
