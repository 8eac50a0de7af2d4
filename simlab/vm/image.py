"""Build what VM nodes run: a QEMU 10 tree and a bootable Debian 12 guest disk.

Both come from Debian's package archive with debootstrap and are built once
into ``out/vm`` (``$SIMLAB_VM_DIR``), each in a directory named by a hash of
its recipe, so changing a recipe builds anew and nothing else does:

``qemu-<hash>/root``
    Debian 13 minbase with ``qemu-system-x86`` and ``qemu-utils``.  Its
    binaries run through the tree's own dynamic loader (:func:`qemu_argv`), so
    the build machine's Debian 12 libraries never mix with Debian 13's.
``guest-<hash>/``
    ``disk.qcow2``: an MBR disk with one ext4 partition holding Debian 12 with
    what a GPU node's OS carries (systemd, udev, NetworkManager, openssh,
    rdma-core, ibverbs-utils, perftest, containerd, python3), booting through
    its own GRUB (i386-pc) with the console on the serial port; ``id_ed25519``:
    the key root logs in with; ``manifest.json``: kernel and package versions.

The guest image is a factory node: no IOMMU flag on the kernel command line,
containerd not enabled, NetworkManager managing only the management NIC.  Its
hostname comes from the SMBIOS system serial number QEMU gives each node, as a
provisioning system would set it from the DMI serial.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MIRROR = "http://deb.debian.org/debian"

QEMU_SUITE = "trixie"
QEMU_PACKAGES = ["qemu-system-x86", "qemu-utils"]

GUEST_SUITE = "bookworm"
GUEST_PACKAGES = [
    # boot: kernel, initramfs, GRUB for a BIOS (SeaBIOS) machine
    "linux-image-amd64", "initramfs-tools", "grub-pc-bin", "grub2-common", "e2fsprogs",
    # the OS a node runs
    "systemd", "systemd-sysv", "libpam-systemd", "udev", "dbus", "kmod", "procps", "iproute2", "iputils-ping",
    "pciutils", "ethtool", "less", "ca-certificates", "openssh-server", "network-manager",
    "python3", "python3-apt",
    # RDMA: verbs, the rxe provider, rdma_cm tools, perftest
    "rdma-core", "ibverbs-providers", "ibverbs-utils", "rdmacm-utils", "perftest",
    # layer 10: what the container_runtime role configures
    "containerd", "runc", "containernetworking-plugins",
    # layer 9's cabling check: the host's LLDP agent
    "lldpd",
]
DISK_GB = 4
ROOT_LABEL = "simlab-root"
PART_START = 2048  # sectors: the first partition, after GRUB's embedding area
INSTALLER = "/usr/local/sbin/simlab-install-grub"
# Run once as init on the image's first boot (see _install_grub), then removed.
INSTALLER_SCRIPT = """#!/bin/sh
# simlab: install GRUB on the disk this system booted from, then power off.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
grub-install --target=i386-pc /dev/vda && update-grub && rm -f "$0" && echo SIMLAB-GRUB-OK
sync
mount -o remount,ro /
echo o > /proc/sysrq-trigger
sleep 30
"""

# Files of the factory image.  The kernel command line carries only the
# serial console: the kernel role adds the IOMMU flags.
GRUB_DEFAULTS = """# simlab VM node: boot at once, console on the serial port.
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT="console=ttyS0,115200n8"
GRUB_CMDLINE_LINUX=""
GRUB_TERMINAL="serial console"
GRUB_SERIAL_COMMAND="serial --speed=115200"
GRUB_DISABLE_OS_PROBER=true
"""
NM_CONF = """# Only the management NIC is configured at the factory; the fabric NICs are
# left to the collection's roles.
[main]
no-auto-default=*
"""
NM_MGMT = """[connection]
id=mgmt
type=ethernet
autoconnect=true

[match]
driver=virtio_net

[ipv4]
method=auto

[ipv6]
method=disabled
"""
HOSTNAME_UNIT = """[Unit]
Description=Hostname from the SMBIOS system serial number
DefaultDependencies=no
After=local-fs.target
Before=network-pre.target systemd-networkd.service NetworkManager.service
Wants=network-pre.target

[Service]
Type=oneshot
ExecStart=/bin/sh -c 'n=$(cat /sys/class/dmi/id/product_serial 2>/dev/null); \
  case "$n" in ""|*[!a-z0-9-]*) exit 0;; esac; \
  [ "$(cat /etc/hostname)" = "$n" ] || echo "$n" > /etc/hostname; hostname "$n"'

[Install]
WantedBy=sysinit.target
"""
HOSTKEYS_UNIT = """[Unit]
Description=SSH host keys of this node, made on its first boot
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key

[Install]
WantedBy=multi-user.target
"""
SSHD_CONF = "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\nUseDNS no\n"
# Timers that would start package jobs in the middle of a test on a machine
# without a package mirror.
# A bytecode cache for what Python imports from zip files (every AnsiballZ
# module run), and the .pth that loads it; see simlab/node/simlab_zipcache.py.
ZIPCACHE = REPO / "simlab" / "node" / "simlab_zipcache.py"
ZIPCACHE_PTH = ZIPCACHE.with_suffix(".pth")

UNITS_MASKED = ["e2scrub_reap.service"]
TIMERS_OFF = ["apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer",
              "man-db.timer", "dpkg-db-backup.timer"]


def out_dir() -> Path:
    return Path(os.environ.get("SIMLAB_VM_DIR", REPO / "out" / "vm"))


def _hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def qemu_dir() -> Path:
    return out_dir() / f"qemu-{_hash(QEMU_SUITE, *sorted(QEMU_PACKAGES))}"


def guest_dir() -> Path:
    recipe = [GUEST_SUITE, *sorted(GUEST_PACKAGES), str(DISK_GB), GRUB_DEFAULTS, NM_CONF, NM_MGMT,
              HOSTNAME_UNIT, HOSTKEYS_UNIT, SSHD_CONF, INSTALLER_SCRIPT, *TIMERS_OFF, *UNITS_MASKED,
              ZIPCACHE.read_text(), ZIPCACHE_PTH.read_text(),
              # the marker at the start of a line: this line names it too
              Path(__file__).read_text().split("\n# -- recipe end --\n")[0]]
    return out_dir() / f"guest-{_hash(*recipe)}"


def qemu_argv(program: str = "qemu-system-x86_64") -> list[str]:
    """The argv prefix that runs one of the QEMU tree's programs on this machine."""
    root = qemu_dir() / "root"
    libs = ":".join(str(root / d) for d in ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"))
    return [str(root / "lib64/ld-linux-x86-64.so.2"), "--library-path", libs, str(root / "usr/bin" / program)]


def firmware_args() -> list[str]:
    """Where QEMU finds SeaBIOS and its option ROMs inside the tree."""
    root = qemu_dir() / "root"
    return ["-L", str(root / "usr/share/seabios"), "-L", str(root / "usr/share/qemu")]


def _debootstrap(suite: str, packages: list[str], target: Path, log) -> None:
    if shutil.which("debootstrap") is None:
        raise SystemExit("debootstrap is not installed: run 'make setup' (apt-get install debootstrap)")
    log(f"simlab: debootstrap {suite} ({len(packages)} packages) into {target} ...")
    proc = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}",
                           suite, str(target), MIRROR], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-15:])
        raise RuntimeError(f"debootstrap {suite} failed ({proc.returncode}):\n{tail}")


def build_qemu(force: bool = False, log=print) -> Path:
    d = qemu_dir()
    if (d / "ready").exists() and not force:
        return d
    t0 = time.monotonic()
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    _debootstrap(QEMU_SUITE, QEMU_PACKAGES, d / "root", log)
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for p in (d / "root" / junk).glob("*.deb"):
            p.unlink()
    version = subprocess.run([*qemu_argv(), "--version"], capture_output=True, text=True, check=True)
    devices = subprocess.run([*qemu_argv(), "-device", "help"], capture_output=True, text=True, check=True)
    if '"igb"' not in devices.stdout:
        raise RuntimeError(f"the QEMU in {d} has no igb device model: {version.stdout.splitlines()[0]}")
    (d / "ready").write_text(version.stdout.splitlines()[0] + "\n")
    _remove_others("qemu-*", d)
    log(f"simlab: QEMU tree {d.name} built in {time.monotonic() - t0:.0f}s")
    return d


@contextlib.contextmanager
def _mounted(*mounts: tuple[str, Path, list[str]]):
    """Mount (source, target, options) in order; unmount in reverse."""
    done = []
    try:
        for source, target, opts in mounts:
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", *opts, source, str(target)], check=True)
            done.append(target)
        yield
    finally:
        for target in reversed(done):
            subprocess.run(["umount", "-l", str(target)], check=False)


def write_mbr(image: Path, size_bytes: int, start_sector: int = PART_START) -> None:
    """An MBR with one bootable Linux partition from ``start_sector`` to the end."""
    sectors = size_bytes // 512 - start_sector
    # status, CHS first (unused: LBA), type 0x83, CHS last, LBA start, sectors
    entry = struct.pack("<B3sB3sII", 0x80, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff", start_sector, sectors)
    with open(image, "r+b") as f:
        f.seek(446)
        f.write(entry + bytes(48) + b"\x55\xaa")


def _configure_guest(root: Path, pubkey: str) -> None:
    def put(rel: str, text: str, mode: int = 0o644) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        p.chmod(mode)

    def enable(unit: str, target: str) -> None:
        wants = root / "etc/systemd/system" / f"{target}.wants"
        wants.mkdir(parents=True, exist_ok=True)
        link = wants / unit
        if not link.is_symlink():
            link.symlink_to(f"/etc/systemd/system/{unit}")

    put(INSTALLER.lstrip("/"), INSTALLER_SCRIPT, 0o755)
    put("etc/hostname", "localhost\n")
    put("etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
    put("etc/fstab", f"LABEL={ROOT_LABEL}\t/\text4\terrors=remount-ro\t0\t1\n")
    put("etc/default/grub", GRUB_DEFAULTS)
    # A small initramfs: GRUB reads it through the BIOS, which is slow under TCG.
    put("etc/initramfs-tools/conf.d/simlab", "MODULES=list\n")
    put("etc/initramfs-tools/modules", "virtio_pci\nvirtio_blk\next4\n")
    put("etc/NetworkManager/conf.d/10-simlab.conf", NM_CONF)
    put("etc/NetworkManager/system-connections/mgmt.nmconnection", NM_MGMT, 0o600)
    put("etc/systemd/system/simlab-hostname.service", HOSTNAME_UNIT)
    enable("simlab-hostname.service", "sysinit.target")
    put("etc/systemd/system/simlab-hostkeys.service", HOSTKEYS_UNIT)
    enable("simlab-hostkeys.service", "multi-user.target")
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    put("etc/ssh/sshd_config.d/simlab.conf", SSHD_CONF)
    put("root/.ssh/authorized_keys", pubkey, 0o600)
    for python in sorted((root / "usr/lib").glob("python3.[0-9]*")):  # site-packages of each python3.X
        site = f"usr/local/lib/{python.name}/dist-packages"
        put(f"{site}/{ZIPCACHE.name}", ZIPCACHE.read_text())
        put(f"{site}/{ZIPCACHE_PTH.name}", ZIPCACHE_PTH.read_text())
    (root / "root/.ssh").chmod(0o700)
    (root / "etc/machine-id").write_text("")  # systemd makes one per node on first boot
    dbus_id = root / "var/lib/dbus/machine-id"
    if dbus_id.exists() or dbus_id.is_symlink():
        dbus_id.unlink()
    for timer in TIMERS_OFF:
        link = root / "etc/systemd/system/timers.target.wants" / timer
        if link.is_symlink():
            link.unlink()
    # e2scrub_reap looks for stale LVM snapshots at every boot (there is no
    # LVM here): up to ten seconds of the one emulated CPU at each boot.
    for unit in UNITS_MASKED:
        link = root / "etc/systemd/system" / unit
        if not (link.is_symlink() and os.readlink(link) == "/dev/null"):
            link.unlink(missing_ok=True)
            link.symlink_to("/dev/null")
    # The initramfs the configuration above asks for (MODULES=list: the
    # disk's drivers and ext4, 6 MB), not the one debootstrap left (every
    # module, 36 MB): measured, 5-6 s less per boot under TCG.
    with _mounted(("/proc", root / "proc", ["--bind"]), ("/sys", root / "sys", ["--rbind"]),
                  ("/dev", root / "dev", ["--rbind"])):
        _chroot(root, "update-initramfs", "-u", "-k", "all")
    # containerd is layer 10's to configure and start.
    link = root / "etc/systemd/system/multi-user.target.wants/containerd.service"
    if link.is_symlink():
        link.unlink()
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for p in (root / junk).glob("*"):
            if p.is_file():
                p.unlink()
# -- recipe end --


def _chroot(root: Path, *cmd: str) -> None:
    proc = subprocess.run(["chroot", str(root), *cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"})
    if proc.returncode != 0:
        raise RuntimeError(f"chroot {' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}")


def build_guest(force: bool = False, log=print) -> Path:
    d = guest_dir()
    if (d / "manifest.json").exists() and not force:
        return d
    build_qemu(log=log)
    t0 = time.monotonic()
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    key = d / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "simlab-vm", "-f", str(key)], check=True)
    # The debootstrap tree depends on the suite and packages only, and is kept:
    # a change to the configuration below costs no new debootstrap.
    tree = out_dir() / f"tree-{_hash(GUEST_SUITE, *sorted(GUEST_PACKAGES))}"
    if not (tree / ".complete").exists():
        shutil.rmtree(tree, ignore_errors=True)
        _debootstrap(GUEST_SUITE, GUEST_PACKAGES, tree, log)
        with _mounted(("/proc", tree / "proc", ["--bind"]), ("/sys", tree / "sys", ["--rbind"]),
                      ("/dev", tree / "dev", ["--rbind"])):
            _chroot(tree, "update-initramfs", "-u", "-k", "all")
        (tree / ".complete").write_text("")
    _configure_guest(tree, key.with_suffix(".pub").read_text())
    kernel = sorted(p.name.removeprefix("vmlinuz-") for p in (tree / "boot").glob("vmlinuz-*"))
    dpkg = subprocess.run(["chroot", str(tree), "dpkg-query", "-W", "-f", "${Package} ${Version}\n",
                           *sorted(GUEST_PACKAGES)], capture_output=True, text=True, check=True).stdout
    raw = d / "disk.raw"
    size = DISK_GB << 30
    with open(raw, "wb") as f:
        f.truncate(size)
    write_mbr(raw, size)
    log(f"simlab: making the guest disk ({DISK_GB} GB: ext4, then GRUB installed from inside the guest) ...")
    # The file system goes straight into the partition (no loop device or
    # mount needed); GRUB is installed by the guest itself on a first boot.
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", ROOT_LABEL, "-E", f"offset={PART_START * 512}", "-d", str(tree),
                    str(raw), f"{(size - PART_START * 512) // 1024}k"], check=True)
    _install_grub(raw, tree, d / "install.log", log)
    log("simlab: converting the guest disk to qcow2 ...")
    subprocess.run([*qemu_argv("qemu-img"), "convert", "-O", "qcow2", str(raw), str(d / "disk.qcow2")], check=True)
    raw.unlink()
    manifest = {"suite": GUEST_SUITE, "kernel": kernel,
                "packages": dict(line.split(" ", 1) for line in dpkg.splitlines() if " " in line),
                "built_seconds": round(time.monotonic() - t0)}
    (d / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    _remove_others("guest-*", d)
    _remove_others("tree-*", tree)
    log(f"simlab: guest image {d.name} built in {manifest['built_seconds']}s (kernel {', '.join(kernel)})")
    return d


def _remove_others(pattern: str, keep: Path) -> None:
    """Images of older recipes: nothing uses them once a new one is built."""
    for other in out_dir().glob(pattern):
        if other != keep and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)


def _install_grub(raw: Path, tree: Path, log_path: Path, log) -> None:
    """Boot the new disk once with its own kernel and initramfs, loaded by
    QEMU, into a script that runs grub-install and update-grub on /dev/vda
    and powers off: the guest's kernel sees the partition table, which this
    machine's kernel may not (no partition scanning of loop devices)."""
    vmlinuz = sorted((tree / "boot").glob("vmlinuz-*"))[-1]
    initrd = sorted((tree / "boot").glob("initrd.img-*"))[-1]
    cmd = [*qemu_argv(), *firmware_args(), "-machine", "q35", "-accel", "tcg", "-m", "1024", "-smp", "1",
           "-drive", f"file={raw},if=virtio,format=raw,cache=unsafe", "-net", "none",
           "-kernel", str(vmlinuz), "-initrd", str(initrd),
           "-append", f"root=LABEL={ROOT_LABEL} rw console=ttyS0,115200n8 init={INSTALLER}",
           "-display", "none", "-vga", "none", "-monitor", "none", "-serial", f"file:{log_path}", "-no-reboot"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    if proc.returncode != 0 or "SIMLAB-GRUB-OK" not in text:
        tail = "\n".join(text.splitlines()[-25:])
        raise RuntimeError(f"installing GRUB in the guest failed (QEMU exit {proc.returncode}, "
                           f"{proc.stderr.strip()}); console:\n{tail}")


def build(force: bool = False, log=print) -> dict:
    """Both parts; what the VM lab needs to start nodes."""
    q = build_qemu(force=force, log=log)
    g = build_guest(force=force, log=log)
    return {"qemu": str(q), "guest": str(g), "disk": str(g / "disk.qcow2"), "key": str(g / "id_ed25519")}


if __name__ == "__main__":
    print(json.dumps(build(force="--force" in sys.argv), indent=2))
