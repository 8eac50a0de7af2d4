"""Build the twin node image locally: debootstrap + podman import, no registry.

The image holds only the operating system a GPU node would have (Debian 12 with
systemd, iproute2, python3, fuse3).  The twin's own code is bind-mounted from
this checkout at run time, so changing simlab never needs a rebuild; the tag is
a hash of the recipe below, so changing the recipe builds a new image.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import podman

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
# What a GPU node's OS carries that the collection's roles rely on.  python3-apt
# lets Ansible's apt module run; kmod gives modprobe/lsmod; udev gives udevadm;
# containerd, runc and the CNI plugins are what layer 10 installs (the node
# has no network to install them from).
PACKAGES = [
    "python3", "python3-apt", "systemd", "systemd-sysv", "dbus", "iproute2",
    "fuse3", "libfuse3-3", "kmod", "procps", "udev", "ca-certificates",
    "containerd", "runc", "containernetworking-plugins",
]
REPO = "localhost/simlab-node"
# Started before the network and anything the collection installs: it is the
# node's hardware.  The twin's code is mounted at /opt/simlab at run time.
NODE_UNIT = """[Unit]
Description=simlab twin hardware: sysfs, firmware and tool twins
DefaultDependencies=no
After=local-fs.target
Before=network-pre.target sysinit.target shutdown.target
Wants=network-pre.target
Conflicts=shutdown.target

[Service]
Type=simple
Environment=PYTHONPATH=/opt/simlab
ExecStart=/usr/bin/python3 -m simlab.node.agent
ExecStartPost=/bin/sh -c 'i=0; until mountpoint -q /run/simlab/sys; do i=$((i+1)); [ $i -gt 400 ] && exit 1; sleep 0.05; done'
ExecStopPost=-/bin/fusermount3 -u /run/simlab/sys
Restart=on-failure

[Install]
WantedBy=sysinit.target
"""


def recipe_hash() -> str:
    h = hashlib.sha256()
    h.update(SUITE.encode())
    h.update(" ".join(sorted(PACKAGES)).encode())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()[:12]


def image_ref() -> str:
    return f"{REPO}:{recipe_hash()}"


def _mfusepy_source() -> Path:
    import mfusepy  # the host venv's copy, installed from PyPI by the Makefile
    return Path(mfusepy.__file__)


def build(force: bool = False, log=print) -> str:
    ref = image_ref()
    if podman.image_exists(ref) and not force:
        return ref
    if shutil.which("debootstrap") is None:
        raise SystemExit("debootstrap is not installed: run 'make setup' (apt-get install debootstrap)")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="simlab-rootfs-") as tmp:
        root = Path(tmp) / "rootfs"
        log(f"simlab: debootstrap {SUITE} into {root} ...")
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
                        SUITE, str(root), MIRROR], check=True,
                       stdout=subprocess.DEVNULL, stderr=sys.stderr)
        site = root / "usr/lib/python3/dist-packages"
        shutil.copy2(_mfusepy_source(), site / "mfusepy.py")
        # A container boots with an empty machine-id; systemd fills it in.
        (root / "etc/machine-id").write_text("")
        for junk in ("var/lib/apt/lists", "var/cache/apt/archives"):
            for p in (root / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        # containerd is configured by the container_runtime role, not started by default.
        wants = root / "etc/systemd/system/multi-user.target.wants/containerd.service"
        if wants.is_symlink():
            wants.unlink()
        (root / "etc/hostname").write_text("simlab-node\n")
        unit = root / "etc/systemd/system/simlab-node.service"
        unit.write_text(NODE_UNIT)
        wants = root / "etc/systemd/system/sysinit.target.wants"
        wants.mkdir(parents=True, exist_ok=True)
        (wants / "simlab-node.service").symlink_to("/etc/systemd/system/simlab-node.service")
        # A container has no consoles to spawn gettys on.
        for unit_name in ("getty@tty1.service", "console-getty.service"):
            link = root / "etc/systemd/system/getty.target.wants" / unit_name
            if link.is_symlink():
                link.unlink()
        log(f"simlab: importing image {ref} ...")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(["podman", "import", "--change", "CMD=/sbin/init",
                              "--change", "STOPSIGNAL=SIGRTMIN+3", "-", ref],
                             stdin=tar.stdout, env=podman.env(), capture_output=True, text=True)
        tar.wait()
        if imp.returncode != 0:
            raise podman.PodmanError(f"podman import failed: {imp.stderr}")
    log(f"simlab: image {ref} built in {time.monotonic() - t0:.0f}s")
    return ref
