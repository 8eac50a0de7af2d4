"""VM nodes behind sushy-tools' emulator: a Redfish BMC the project did not write.

sushy-tools (PyPI ``sushy-tools``, the BMC emulator OpenStack Ironic and
Metal3 test against) serves power, reset and BIOS attributes of libvirt
domains.  Here each such VM node is a domain of a libvirt daemon private to
the lab (Debian's ``libvirtd`` and QEMU driver, started in a mount namespace
of its own, its configuration and state under ``<lab>/libvirt``), and each
node has a sushy-emulator process of its own that serves only that domain
(``SUSHY_EMULATOR_ALLOWED_INSTANCES``), on its own port with its own
certificate and HTTP basic authentication, as a BMC serves one server.

What sushy-tools keeps is what it keeps: BIOS attributes live in the domain's
metadata (its libvirt driver writes them there and changes them at once, with
no pending settings), ``ForceRestart`` destroys and starts the domain.  The
lab seeds each domain with the factory attributes of the node's vendor
profile (:func:`simlab.bmc.server.initial_state`, what the lab's own BMCs
start from) and gives libvirt an emulator that does what the board's firmware
does at power-on: it reads the BIOS attributes the domain has at that moment
and puts the VT-d IOMMU on the machine only while they enable it
(:func:`post_args`), as :mod:`simlab.vm.power` does for the lab's own BMCs.
The rest of the machine is :func:`simlab.vm.machine.board_args`, the same
devices and SMBIOS identity a node behind the lab's own BMC has.

The node's QMP socket and pid file are where :mod:`simlab.vm.machine` looks
for them (``<lab>/nodes/<node>/``), so the lab's faults, power state and
teardown work on these nodes unchanged.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from simlab.lab import wait_ready

from . import image, machine

REPO = Path(__file__).resolve().parents[2]
SUSHY_NS = "http://openstack.org/xmlns/libvirt/sushy"
BOARD_NS = "https://gpufabric.stack/simlab/board"
# Debian's packages: libvirtd with its QEMU driver, and the Python binding
# (its module is built for the 3.11 ABI the venv's interpreter shares)
PACKAGES = ("libvirt-daemon", "libvirt-daemon-driver-qemu", "python3-libvirt")
BINDING = "/usr/lib/python3/dist-packages"
QEMU_CONF = """# the lab's private libvirtd (simlab.vm.sushy)
user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
cgroup_controllers = [ ]
stdio_handler = "file"
"""
LIBVIRTD_CONF = """# the lab's private libvirtd (simlab.vm.sushy)
unix_sock_group = "root"
unix_sock_rw_perms = "0700"
auth_unix_rw = "none"
auth_unix_ro = "none"
log_outputs = "3:stderr"
"""
# what libvirtd keeps where, bound into its mount namespace from <lab>/libvirt
BINDS = (("etc", "/etc/libvirt"), ("run", "/run/libvirt"), ("lib", "/var/lib/libvirt"),
         ("log", "/var/log/libvirt"), ("cache", "/var/cache/libvirt"))
# libvirtd resolves its compiled-in default user before it reads qemu.conf
QEMU_USER = "libvirt-qemu"


def missing() -> list[str]:
    """What this machine lacks to run VM nodes behind sushy-tools (empty when nothing)."""
    out = []
    if not shutil.which("libvirtd", path="/usr/sbin:/usr/bin:/sbin:/bin"):
        out.append("libvirtd (Debian: libvirt-daemon, libvirt-daemon-driver-qemu)")
    if not glob.glob(f"{BINDING}/libvirtmod.cpython-*.so"):
        out.append("the libvirt Python binding (Debian: python3-libvirt)")
    if not (Path(sys.executable).parent / "sushy-emulator").exists():
        out.append("sushy-emulator (requirements.txt: sushy-tools)")
    if not shutil.which("unshare"):
        out.append("unshare (util-linux)")
    return out


def libvirt_dir(lab_dir: Path) -> Path:
    return Path(lab_dir) / "libvirt"


def uri(lab_dir: Path) -> str:
    return f"qemu:///system?socket={libvirt_dir(lab_dir) / 'run' / 'libvirt-sock'}"


def domain_name(lab_name: str, node: str) -> str:
    return f"simlab-{lab_name}-{node}"


def domain_uuid(lab_name: str, node: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node}.{lab_name}.sushy.simlab"))


def binding_path(lab_dir: Path) -> Path:
    """A directory with only the libvirt binding of Debian's python3-libvirt,
    for the venv's interpreter (the rest of dist-packages stays out)."""
    d = libvirt_dir(lab_dir) / "python"
    d.mkdir(parents=True, exist_ok=True)
    for src in [f"{BINDING}/libvirt.py", *glob.glob(f"{BINDING}/libvirtmod*.so")]:
        link = d / Path(src).name
        if not link.exists():
            link.symlink_to(src)
    return d


# ---------------------------------------------------------------- the domain
def domain_xml(lab_name: str, lab_dir: Path, hw: dict, bios: dict, accel_name: str = "tcg") -> str:
    """The libvirt domain of a VM node: memory, CPUs and the serial console as
    libvirt devices; the board (disk, NICs, RNG, SMBIOS) as the lab's QEMU
    arguments; the factory BIOS in sushy-tools' metadata; QMP and the pid file
    where the lab looks for them."""
    d = machine.node_dir(lab_dir, hw["name"])
    qemu_args = [*machine.board_args(lab_dir, hw), "-qmp", f"unix:{d / 'qmp.sock'},server=on,wait=off"]
    attrs = "\n".join(f"        <sushy:attribute name={quoteattr(k)} value={quoteattr(str(v))}/>"
                      for k, v in sorted(bios["current"].items()))
    args = "\n".join(f"    <qemu:arg value={quoteattr(a)}/>" for a in qemu_args)
    kind = "kvm" if accel_name == "kvm" else "qemu"
    return f"""<domain type='{kind}' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{escape(domain_name(lab_name, hw['name']))}</name>
  <uuid>{domain_uuid(lab_name, hw['name'])}</uuid>
  <metadata>
    <sushy:bios xmlns:sushy="{SUSHY_NS}">
      <sushy:attributes>
{attrs}
      </sushy:attributes>
    </sushy:bios>
    <board:board xmlns:board="{BOARD_NS}" vendor={quoteattr(bios['vendor'])} accel={quoteattr(accel_name)}/>
  </metadata>
  <memory unit='MiB'>{int(hw.get('memory_mb', 1536))}</memory>
  <vcpu>{int(hw.get('smp', 2))}</vcpu>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <features><acpi/><apic/></features>
  <cpu mode='maximum' migratable='off'/>
  <on_reboot>restart</on_reboot>
  <devices>
    <emulator>{escape(str(emulator_path(lab_dir)))}</emulator>
    <controller type='usb' model='none'/>
    <memballoon model='none'/>
    <serial type='file'><source path={quoteattr(str(d / 'console.log'))}/></serial>
  </devices>
  <qemu:commandline>
{args}
  </qemu:commandline>
</domain>
"""


def emulator_path(lab_dir: Path) -> Path:
    return libvirt_dir(lab_dir) / "qemu-board"


def write_emulator(lab_dir: Path) -> Path:
    """The program libvirt runs as QEMU: the lab's QEMU tree with the
    firmware's decisions of this power-on (:func:`post_args`) added."""
    path = emulator_path(lab_dir)
    path.write_text(f"""#!{sys.executable} -S
# QEMU for the lab's libvirt domains (simlab.vm.sushy): what the board's
# firmware decides at power-on from the BIOS attributes the domain has now.
import os, sys
sys.path.insert(0, {str(REPO)!r})
from simlab.vm import sushy
argv = sushy.emulator_argv(sys.argv[1:], {str(libvirt_dir(lab_dir) / 'etc' / 'qemu')!r})
os.execv(argv[0], argv)
""")
    path.chmod(0o755)
    return path


def post_args(domain: str) -> list[str]:
    """What the firmware adds at power-on, from a domain's XML: the VT-d
    IOMMU while the BIOS attributes in its sushy-tools metadata enable it
    (:func:`simlab.bmc.vendors.effective`)."""
    from simlab.bmc import vendors
    tree = ET.fromstring(domain)
    board = tree.find(f"metadata/{{{BOARD_NS}}}board")
    attributes = tree.find(f"metadata/{{{SUSHY_NS}}}bios/{{{SUSHY_NS}}}attributes")
    if board is None or attributes is None:
        return []
    current = {a.get("name"): a.get("value") for a in attributes}
    if vendors.effective(board.get("vendor"), current)["iommu"]:
        return machine.iommu_args(board.get("accel") or "tcg")
    return []


def emulator_argv(args: list[str], config_dir: str) -> list[str]:
    """The QEMU command for libvirt's ``args``: the domain's configuration as
    libvirt keeps it (``<config_dir>/<name>.xml``) decides what
    :func:`post_args` adds, before the first device; libvirt's probes (no
    ``-name guest=``) run QEMU as they are."""
    extra = []
    for i, arg in enumerate(args[:-1]):
        if arg == "-name" and args[i + 1].startswith("guest="):
            name = args[i + 1][len("guest="):].split(",")[0]
            try:
                extra = post_args(Path(config_dir, f"{name}.xml").read_text())
            except (OSError, ET.ParseError):
                extra = []
            break
    if extra:
        at = args.index("-device") if "-device" in args else len(args)
        args = args[:at] + extra + args[at:]
    return [*image.qemu_argv(), *image.firmware_args(), *args]


# ---------------------------------------------------------------- libvirtd
def _start_libvirtd(lab_dir: Path, log_file) -> subprocess.Popen:
    """libvirtd in a mount namespace of its own, where /etc/libvirt,
    /run/libvirt, /var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt
    are the lab's (and /etc/passwd names the QEMU user libvirtd resolves
    first): nothing of the machine's libvirt configuration is read or
    changed, and its socket is ``<lab>/libvirt/run/libvirt-sock``."""
    d = libvirt_dir(lab_dir)
    for sub, _ in BINDS:
        (d / sub).mkdir(parents=True, exist_ok=True)
    (d / "etc" / "qemu.conf").write_text(QEMU_CONF)
    (d / "etc" / "libvirtd.conf").write_text(LIBVIRTD_CONF)
    accounts = d / "accounts"
    accounts.mkdir(exist_ok=True)
    passwd, group = Path("/etc/passwd").read_text(), Path("/etc/group").read_text()
    if not any(line.startswith(QEMU_USER + ":") for line in passwd.splitlines()):
        passwd += f"{QEMU_USER}:x:64055:64055::/var/lib/libvirt:/usr/sbin/nologin\n"
    if not any(line.startswith(QEMU_USER + ":") for line in group.splitlines()):
        group += f"{QEMU_USER}:x:64055:\n"
    (accounts / "passwd").write_text(passwd)
    (accounts / "group").write_text(group)
    script = ["set -e", "mount --make-rprivate /"]
    for sub, target in BINDS:
        script.append(f"mkdir -p {target} && mount --bind {d / sub} {target}")
    script += [f"mount --bind {accounts / 'passwd'} /etc/passwd", f"mount --bind {accounts / 'group'} /etc/group",
               "exec /usr/sbin/libvirtd --config /etc/libvirt/libvirtd.conf"]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
    proc = subprocess.Popen(["unshare", "--mount", "sh", "-c", "\n".join(script)], stdout=log_file,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    wait_ready(proc, (d / "run" / "libvirt-sock").exists, "libvirtd", log_file.name, interval=0.1)
    return proc


# ---------------------------------------------------------------- the BMCs
def _certificate(d: Path, node: str) -> tuple[Path, Path]:
    crt, key = d / f"{node}.crt", d / f"{node}.key"
    if not crt.exists():
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                        "-out", str(crt), "-days", "30", "-subj", f"/CN={node}-bmc",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return crt, key


def _htpasswd(d: Path, username: str, password: str) -> Path:
    import bcrypt  # sushy-tools' own dependency: the only digest its basic auth reads
    path = d / "htpasswd"
    path.write_text(f"{username}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=6)).decode()}\n")
    path.chmod(0o600)
    return path


def _sushy_config(d: Path, lab_dir: Path, entry: dict, crt: Path, key: Path, auth: Path) -> Path:
    path = d / f"{entry['name']}.conf"
    path.write_text("\n".join([
        "# sushy-emulator of one VM node (simlab.vm.sushy)",
        "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'",
        f"SUSHY_EMULATOR_LISTEN_PORT = {int(entry['port'])}",
        f"SUSHY_EMULATOR_SSL_CERT = {str(crt)!r}",
        f"SUSHY_EMULATOR_SSL_KEY = {str(key)!r}",
        f"SUSHY_EMULATOR_AUTH_FILE = {str(auth)!r}",
        f"SUSHY_EMULATOR_LIBVIRT_URI = {uri(lab_dir)!r}",
        # this BMC's server only, as a BMC serves one
        f"SUSHY_EMULATOR_ALLOWED_INSTANCES = {{{entry['uuid']!r}}}",
        ""]))
    return path


def request(port: int, method: str, path: str, username: str, password: str, body: dict | None = None,
            timeout: float = 10.0) -> tuple[int, dict]:
    """One Redfish request to a node's sushy-emulator (the lab's own tooling:
    its certificate is the lab's, not checked here)."""
    import base64
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Authorization", "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode())
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else {})
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def _answers(port: int, username: str, password: str) -> bool:
    """Does the sushy-emulator on ``port`` serve its Systems collection yet?"""
    try:
        return request(port, "GET", "/redfish/v1/Systems", username, password, timeout=2)[0] == 200
    except OSError:
        return False


def power_on(lab_dir: Path, hw: dict, username: str, password: str) -> None:
    """Redfish ``On`` through the node's sushy-emulator, as the bmc role would."""
    status, _ = request(hw["bmc_port"], "POST",
                        f"/redfish/v1/Systems/{hw['sushy_uuid']}/Actions/ComputerSystem.Reset",
                        username, password, {"ResetType": "On"}, timeout=60)
    if status not in (200, 202, 204):
        raise RuntimeError(f"sushy-emulator of {hw['name']}: Reset On answered HTTP {status}")


def serve(state_dir: Path, spec: dict) -> None:
    """The lab service: libvirtd, the domains, one sushy-emulator per node;
    on SIGTERM the domains are destroyed and the processes stopped."""
    sys.path.insert(0, str(binding_path(state_dir)))
    import libvirt
    d = libvirt_dir(state_dir)
    logs = Path(state_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    procs = []
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    procs.append(_start_libvirtd(state_dir, open(logs / "libvirtd.log", "ab")))
    write_emulator(state_dir)
    conn = libvirt.open(uri(state_dir))
    try:
        auth = _htpasswd(d, spec["username"], spec["password"])
        for entry in spec["nodes"]:
            hw = json.loads((machine.node_dir(state_dir, entry["name"]) / "hardware.json").read_text())
            name = domain_name(spec["lab"], entry["name"])
            try:
                old = conn.lookupByName(name)
                if old.isActive():
                    old.destroy()
                old.undefine()
            except libvirt.libvirtError:
                pass
            conn.defineXML(domain_xml(spec["lab"], state_dir, hw, entry["bios"], entry.get("accel", "tcg")))
            nd = machine.node_dir(state_dir, entry["name"])
            (nd / "qemu.pid").unlink(missing_ok=True)
            (nd / "qemu.pid").symlink_to(d / "run" / "qemu" / f"{name}.pid")
            crt, key = _certificate(d, entry["name"])
            conf = _sushy_config(d, state_dir, entry, crt, key, auth)
            procs.append(subprocess.Popen(
                [str(Path(sys.executable).parent / "sushy-emulator"), "--config", str(conf)],
                stdout=open(logs / f"sushy-{entry['name']}.log", "ab"), stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(binding_path(state_dir))}, start_new_session=True))
        for entry, proc in zip(spec["nodes"], procs[1:]):
            wait_ready(proc, lambda port=entry["port"]: _answers(port, spec["username"], spec["password"]),
                       f"sushy-emulator of {entry['name']} (port {entry['port']})",
                       logs / f"sushy-{entry['name']}.log", interval=0.2)
        (Path(state_dir) / "sushy-ready").write_text("ready\n")
        while not stop:
            time.sleep(0.5)
    finally:
        for entry in spec["nodes"]:
            try:
                dom = conn.lookupByName(domain_name(spec["lab"], entry["name"]))
                if dom.isActive():
                    dom.destroy()
            except libvirt.libvirtError:
                pass
        try:
            conn.close()
        except libvirt.libvirtError:
            pass        # libvirtd has gone already
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m simlab.vm.sushy")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--state-dir", required=True)
    s.add_argument("--spec", required=True)
    args = p.parse_args(argv)
    serve(Path(args.state_dir), json.loads(Path(args.spec).read_text()))


if __name__ == "__main__":
    main()
