"""Twins of kmod's ``modinfo`` for the modules the twin kernel models, and of
ofed-scripts' ``ofed_info`` on DOCA-OFED nodes.

``modinfo [-F field] [-n] <module>`` prints what the module file says of
itself, in kmod 30's layout (``field:`` padded to column 17, a repeated field
on a line of its own, the signature's further lines after two tabs).  Which
file depends on the node's driver stack:

* inbox: Debian 12's 6.1 module under ``kernel/drivers/``, ``intree: Y``,
  no version, signed with Debian's key; mlx5_core, mlx5_ib and ib_core line
  for line as kmod 30 prints them for 6.1.0-50-amd64 (captured on the VM
  image, tests/unit/fixtures/driver_stack_real/*-6.1.0-50-simlab-vm.txt; the
  VM tier compares them live), signed with the key made when that kernel
  was built;
* DOCA-OFED: ``updates/dkms/`` with ``version``, ``basedon``, ``srcversion``
  and ``depends: ...mlx_compat``, signed with the DKMS key; mlx5_core line
  for line as the published MLNX_OFED 24.10 capture has it; mlx5_ib and
  ib_core, for which no capture exists, in the same shape with the inbox
  module's aliases and parameters.

The signature's bytes are the twin's own (from the module's name), as many
as the key's size gives.  Other modules go to the real modinfo.

``ofed_info -s`` prints ``OFED-internal-<version>:`` (DOCA-OFED's form);
``ofed_info -n`` the bare version.
"""

from __future__ import annotations

import hashlib
import os
import sys

from simlab.node import kmod
from simlab.node.hardware import OFED_MODULE
from simlab.tools.agentclient import summary

REAL = ("/usr/sbin/modinfo", "/sbin/modinfo", "/usr/bin/modinfo")
_PCI = "pci:v000015B3d0000{}sv*sd*bc*sc*i*"
# mlx5_core's PCI IDs, in the order the two kernels' modules list them
_INBOX_IDS = ("A2DF A2DC A2D6 A2D3 A2D2 2101 1027 1025 1023 1021 101F 101E 101D 101C 101B 101A 1019 1018 1017 "
              "1016 1015 1014 1013 1012 1011").split()
_OFED_IDS = ("A2DF A2DC A2D6 A2D3 A2D2 1025 1023 1021 101F 101E 101D 101C 101B 101A 1019 1018 1017 1016 1015 "
             "1014 1013").split()
_MLX5_DESC = "Mellanox 5th generation network adapters (ConnectX series) {} driver"
_COMMON = {"license": "Dual BSD/GPL", "author": "Eli Cohen <eli@mellanox.com>"}
# per module: the .modinfo fields before ``depends`` in the inbox module's
# order, its parameters, and the OFED module's differences
INBOX = {
    "mlx5_core": [("license", _COMMON["license"]), ("description", _MLX5_DESC.format("core")),
                  ("author", _COMMON["author"]), ("alias", "auxiliary:mlx5_core.eth")]
                 + [("alias", _PCI.format(d)) for d in _INBOX_IDS] + [("alias", "auxiliary:mlx5_core.eth-rep")],
    "mlx5_ib": [("license", _COMMON["license"]), ("description", _MLX5_DESC.format("IB")),
                ("author", _COMMON["author"]), ("alias", "auxiliary:mlx5_core.rdma"),
                ("alias", "auxiliary:mlx5_core.multiport"), ("alias", "auxiliary:mlx5_core.rdma-rep")],
    "ib_core": [("alias", "rdma-netlink-subsys-4"), ("license", _COMMON["license"]),
                ("description", "core kernel InfiniBand API"), ("author", "Roland Dreier"),
                ("alias", "net-pf-16-proto-20"), ("alias", "rdma-netlink-subsys-5")],
}
PARMS = {
    "mlx5_core": ["debug_mask:debug mask: 1 = dump cmd data, 2 = dump cmd exec time, 3 = both. Default=0 (uint)",
                  "prof_sel:profile selector. Valid range 0 - 2 (uint)"],
    "mlx5_ib": [],
    "ib_core": ["send_queue_size:Size of send queue in number of work requests (int)",
                "recv_queue_size:Size of receive queue in number of work requests (int)",
                "netns_mode:Share device among net namespaces; default=1 (shared) (bool)",
                "force_mr:Force usage of MRs for RDMA READ/WRITE operations (bool)"],
}
OFED_MLX5_CORE = ([("alias", "auxiliary:mlx5_core.eth-rep"), ("alias", "auxiliary:mlx5_core.eth")], [
    ("license", _COMMON["license"]), ("description", _MLX5_DESC.format("core")), ("author", _COMMON["author"])],
    [("alias", _PCI.format(d)) for d in _OFED_IDS] + [("alias", "auxiliary:mlx5_core.sf")],
    ["num_of_groups:Eswitch offloads number of big groups in FDB table. Valid range 1 - 1024. Default 15 (uint)",
     "debug_mask:debug mask: 1 = dump cmd data, 2 = dump cmd exec time, 3 = both. Default=0 (uint)",
     "prof_sel:profile selector. Valid range 0 - 4 (uint)"])
# ``depends:``, what each .ko names itself (modpost writes the file names)
INBOX_DEPENDS = {"mlx5_core": "psample,pci-hyperv-intf,mlxfw", "mlx5_ib": "mlx5_core,ib_uverbs,ib_core", "ib_core": ""}
OFED_DEPENDS = {"mlx5_core": "mlxdevm,mlx_compat,tls,pci-hyperv-intf,psample,mlxfw",
                "mlx5_ib": "mlx5_core,ib_core,mlx_compat,ib_uverbs", "ib_core": "mlx_compat"}
# (signer, sig_key, signature bytes): Debian 12's 6.1.0-50 kernel signs its modules with a key made at
# build time, 4096 bits (the 6.1.0-50 captures; 6.1.0-31's were signed with Debian Secure Boot CA's);
# DKMS with its own 2048-bit key (modinfo-mlx5_core-mlnxofed-24.10-debian12.txt)
SIGNERS = {False: ("Build time autogenerated kernel key", "3D:46:54:93:DD:0E:13:96:44:69:0D:E4:81:B8:A0:8E:9C:E5:45:66",
                   512),
           True: ("DKMS module signing key", "71:58:C0:4E:AD:2B:3B:86:A0:6C:5E:B4:1B:14:52:CB:B6:CA:D0:91", 256)}
MODULES = tuple(INBOX)


def _signature(module: str, ofed: bool) -> list[tuple[str, str]]:
    signer, key, size = SIGNERS[ofed]
    digest = b"".join(hashlib.sha512(f"{module}/{ofed}/{i}".encode()).digest() for i in range(size // 64))
    hexes = [f"{b:02X}" for b in digest]
    rows = [":".join(hexes[i:i + 20]) for i in range(0, len(hexes), 20)]
    return [("sig_id", "PKCS#7"), ("signer", signer), ("sig_key", key), ("sig_hashalgo", "sha256"),
            ("signature", ":\n\t\t".join(rows))]


def fields(module: str, ofed: bool) -> list[tuple[str, str]]:
    """The (field, value) lines ``modinfo <module>`` prints, in kmod's order."""
    if ofed:
        rows = [("filename", kmod.path(module, ofed=True))]
        base = [(k, v) for k, v in INBOX[module] if k != "alias"]
        aliases, parms = [(k, v) for k, v in INBOX[module] if k == "alias"], PARMS[module]
        head = []
        if module == "mlx5_core":
            head, base, aliases, parms = OFED_MLX5_CORE
        rows += head + [("basedon", OFED_MODULE["basedon"]), ("version", OFED_MODULE["version"])] + base
        rows += [("srcversion", OFED_MODULE["srcversion"])] + aliases
        rows += [("depends", OFED_DEPENDS[module]), ("retpoline", "Y")]
    else:
        rows = [("filename", kmod.path(module))] + INBOX[module]
        rows += [("depends", INBOX_DEPENDS[module]), ("retpoline", "Y"), ("intree", "Y")]
        parms = PARMS[module]
    rows += [("name", module), ("vermagic", f"{kmod.release()} SMP preempt mod_unload modversions ")]
    return rows + _signature(module, ofed) + [("parm", p) for p in parms]


# kmod's options that print one field
_SHORT = {"-n": "filename", "--filename": "filename", "-a": "author", "--author": "author", "-d": "description",
          "--description": "description", "-l": "license", "--license": "license", "-p": "parm",
          "--parameters": "parm"}


def modinfo(argv: list[str]) -> int:
    """kmod's modinfo for the twin's modules: each module named, one after
    the other; ``-F field`` prints that field's values alone (nothing for a
    field the module lacks), ``-n``/``-a``/``-d``/``-l``/``-p`` the file,
    author, description, license and parameters.  A command line naming another
    module, or one the twin does not read, goes to the real modinfo."""
    field, args, i = None, [], 0
    while i < len(argv):
        a = argv[i]
        if a == "-F" and i + 1 < len(argv):
            field, i = argv[i + 1], i + 1
        elif a.startswith("--field="):
            field = a.split("=", 1)[1]
        elif a in _SHORT:
            field = _SHORT[a]
        elif a.startswith("-"):
            return _real(argv)
        else:
            args.append(a)
        i += 1
    modules = [kmod.norm(a) for a in args]
    if not modules or not all(m in MODULES for m in modules):
        return _real(argv)
    ofed = bool(summary("modinfo").get("ofed"))
    for module in modules:
        rows = fields(module, ofed)
        if field == "parmtype":       # kept apart in .modinfo; kmod joins it to parm's lines, in reverse
            rows = [("parmtype", f"{v.split(':', 1)[0]}:{v.rsplit('(', 1)[1].rstrip(')')}")
                    for k, v in reversed(rows) if k == "parm"]
        if field:
            sys.stdout.write("".join(f"{v}\n" for k, v in rows if k == field))
        else:
            sys.stdout.write("".join(f"{(k + ':'):<16}{v}\n" for k, v in rows))
    return 0


def _real(argv: list[str]) -> int:
    real = next((p for p in REAL if os.path.exists(p)), None)
    if real is None:
        print("modinfo: kmod not installed", file=sys.stderr)
        return 127
    os.execv(real, ["modinfo", *argv])
    return 127


def ofed_info(argv: list[str]) -> int:
    version = OFED_MODULE["ofed_info"].split("OFED-internal-", 1)[1]
    if "-n" in argv:
        print(version)
    elif "-s" in argv:
        print(f"{OFED_MODULE['ofed_info']}:")
    else:
        print(f"{OFED_MODULE['ofed_info']}:\n\n-------------------\n")
    return 0


def main(argv: list[str], prog: str = "modinfo") -> int:
    return ofed_info(argv) if prog == "ofed_info" else modinfo(argv)
