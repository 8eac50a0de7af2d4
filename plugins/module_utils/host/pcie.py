# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCIe path between a node's GPUs and its NICs, from sysfs alone, and
the ACS control bits of the bridges on it.

- **The path.** ``/sys/bus/pci/devices/<bdf>`` links to the function's
  directory under ``/sys/devices``, whose parents are the bridges above it
  up to its host bridge (``pci0000:3a``): the kernel builds the device tree
  that way (``drivers/pci/probe.c``). Two functions meet at their deepest
  common bridge; what they cross is named as ``nvidia-smi topo -m`` names it
  (its legend): ``PIX`` at most a single PCIe bridge (one switch), ``PXB``
  several bridges without the host bridge, ``PHB`` through a host bridge (the
  CPU), ``NODE`` between host bridges of one NUMA node, ``SYS`` across the
  SMP interconnect between NUMA nodes.
- **ACS.** The extended capability ``PCI_EXT_CAP_ID_ACS`` (0x0d) in the
  function's config space (``<bdf>/config``, 4096 bytes when read as root),
  its capability word at +4 and control word at +6
  (``include/uapi/linux/pci_regs.h``). ``ReqRedir`` / ``CmpltRedir`` (and
  ``EgressCtrl``) on a switch port send peer-to-peer traffic up to the root
  complex: what the kernel's ``pci=disable_acs_redir=`` clears
  (``drivers/pci/pci.c``: ``PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC``), and what
  NCCL's troubleshooting guide tells bare-metal GPU nodes to turn off.
- **nvidia-smi topo -m.** Its matrix, read to be held against the sysfs
  path where the tool exists.

Plain standard-library Python; reads go through the functions given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

# include/uapi/linux/pci_regs.h
PCI_EXT_CAP_ID_ACS = 0x0d
PCI_ACS_CAP = 0x04
PCI_ACS_CTRL = 0x06
# (lspci's name, bit), in bit order, as lspci -vvv prints ACSCap / ACSCtl (ls-ecaps.c)
ACS_BITS = (("SrcValid", 0x01), ("TransBlk", 0x02), ("ReqRedir", 0x04), ("CmpltRedir", 0x08),
            ("UpstreamFwd", 0x10), ("EgressCtrl", 0x20), ("DirectTrans", 0x40))
# the bits pci=disable_acs_redir= clears (drivers/pci/pci.c, pci_disable_acs_redir / __pci_config_acs)
ACS_REDIRECT = 0x04 | 0x08 | 0x20
# what the kernel enables on every port with ACS when an IOMMU asks for it
# (pci_std_enable_acs: SrcValid, ReqRedir, CmpltRedir, UpstreamFwd)
ACS_ISOLATION = 0x01 | 0x04 | 0x08 | 0x10
PCI_CONFIG_EXTENDED = 0x100
PCI_CONFIG_SIZE = 4096
# nvidia-smi's distances, nearest first; SOC is the older drivers' SYS
RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")
P2P_BELOW_SWITCH = ("PIX", "PXB")
# a host bridge's directory (pci0000:3a; a VMD domain has five digits, pci10000:00)
HOST_BRIDGE_RE = re.compile(r"^pci[0-9a-f]{4,5}:[0-9a-f]{2}$")
BDF_RE = re.compile(r"^[0-9a-f]{4,5}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


class PcieError(ValueError):
    pass


# ------------------------------------------------------------------ config space
def ext_capability(config, cap_id):
    """Offset of extended capability ``cap_id`` in a config space (bytes),
    following the list from 0x100 as the kernel's pci_find_ext_capability
    does (at most (4096 - 256) / 8 entries); None when absent or when the
    extended space was not readable (fewer than 4096 bytes: read as root)."""
    if config is None or len(config) < PCI_CONFIG_SIZE:
        return None
    pos = PCI_CONFIG_EXTENDED
    for _ in range((PCI_CONFIG_SIZE - PCI_CONFIG_EXTENDED) // 8):
        header = int.from_bytes(config[pos:pos + 4], "little")
        if header == 0 or header == 0xffffffff:
            return None
        if header & 0xffff == cap_id:
            return pos
        pos = (header >> 20) & 0xffc
        if pos < PCI_CONFIG_EXTENDED:
            return None
    return None


def acs(config):
    """``{"cap": int, "ctrl": int, "offset": int}`` of a function's ACS
    capability, ``None`` when it has none, or ``{"unreadable": True}`` when
    only the first 256 bytes could be read (not root)."""
    if config is not None and 0 < len(config) < PCI_CONFIG_SIZE:
        return {"unreadable": True}
    pos = ext_capability(config, PCI_EXT_CAP_ID_ACS)
    if pos is None:
        return None
    return {"offset": pos, "cap": int.from_bytes(config[pos + PCI_ACS_CAP:pos + PCI_ACS_CAP + 2], "little"),
            "ctrl": int.from_bytes(config[pos + PCI_ACS_CTRL:pos + PCI_ACS_CTRL + 2], "little")}


def acs_text(word):
    """An ACS word as lspci -vvv prints it: ``SrcValid+ TransBlk- ...``."""
    return " ".join("%s%s" % (name, "+" if word & bit else "-") for name, bit in ACS_BITS)


def parse_acs_text(text):
    """The word of lspci's ``ACSCtl:`` / ``ACSCap:`` text; fails quoting a
    flag it cannot read."""
    body = text.split(":", 1)[1] if ":" in text else text
    names = dict(ACS_BITS)
    word, seen = 0, set()
    for flag in body.split():
        name, sign = flag[:-1], flag[-1:]
        if name not in names or sign not in "+-":
            raise PcieError("cannot read ACS flag %r in %r" % (flag, text.strip()))
        seen.add(name)
        if sign == "+":
            word |= names[name]
    if seen != set(names):
        raise PcieError("ACS line without every flag: %r" % text.strip())
    return word


# ------------------------------------------------------------------ the path
def device_path(sysfs_root, bdf, realpath=os.path.realpath):
    """``[host bridge, bridge, ..., bdf]`` of a PCI function, from where its
    ``bus/pci/devices`` link points; None when it is not there."""
    link = os.path.join(sysfs_root, "bus", "pci", "devices", bdf)
    if not os.path.lexists(link):
        return None
    return path_of(realpath(link))


def path_of(target):
    """``[host bridge, bridge, ..., function]`` of a function's directory
    under /sys/devices; None without a host bridge directory above it (a
    platform bus of its own: its place is not known, it pairs with
    nothing)."""
    parts = target.split("/")
    for i, part in enumerate(parts):
        if HOST_BRIDGE_RE.match(part):
            return [p for p in parts[i:] if p]
    return None


def relation(a, b):
    """How the functions a and b (``{"path": [...], "numa_node": n}``)
    reach each other: ``{"kind", "via", "bridges"}``. ``via`` is the bridge
    where they meet (None through the host bridge or beyond); ``bridges`` the
    ones peer traffic passes below it (each side's, ACS applies at them)."""
    pa, pb = a["path"], b["path"]
    common = 0
    while common < min(len(pa), len(pb)) and pa[common] == pb[common]:
        common += 1
    if common == 0:
        same = a.get("numa_node") is not None and str(a.get("numa_node")) == str(b.get("numa_node"))
        return {"kind": "NODE" if same else "SYS", "via": None, "bridges": []}
    meet = pa[common - 1]
    # the bridges strictly below the meeting point, on each side (the
    # functions themselves excluded)
    bridges = pa[common:-1] + pb[common:-1]
    if HOST_BRIDGE_RE.match(meet) or common == 2:
        # common == 2: they meet at a root port, which is the root complex
        return {"kind": "PHB", "via": None if HOST_BRIDGE_RE.match(meet) else meet, "bridges": bridges}
    # below a switch: one switch when each side has at most its own
    # downstream port between it and the meeting upstream port
    kind = "PIX" if len(pa) - common <= 2 and len(pb) - common <= 2 else "PXB"
    return {"kind": kind, "via": meet, "bridges": bridges}


def rank(kind):
    return RELATIONS.index(kind) if kind in RELATIONS else len(RELATIONS)


def read(sysfs_root, gpus, nics, read_bytes=None, realpath=os.path.realpath):
    """The path of every GPU and NIC (``[{pci_address, numa_node, ...}]``,
    with whatever else the caller put in, kept), the ACS words of every
    bridge on them, and per GPU its nearest NICs. read_bytes(path) returns
    a file's bytes or None."""
    read_bytes = read_bytes or _read_bytes
    devices = os.path.join(sysfs_root, "bus", "pci", "devices")
    out = {"gpus": [], "nics": [], "bridges": {}}
    for key, items in (("gpus", gpus), ("nics", nics)):
        for item in items:
            path = device_path(sysfs_root, item["pci_address"], realpath)
            out[key].append(dict(item, path=path))
            for bridge in (path or [])[1:-1]:
                if bridge in out["bridges"] or not BDF_RE.match(bridge):
                    continue
                ids = [(_text(read_bytes(os.path.join(devices, bridge, f))) or "").replace("0x", "")
                       for f in ("vendor", "device")]
                out["bridges"][bridge] = {
                    "id": "pci:%s:%s" % tuple(ids) if all(ids) else None,
                    "present": os.path.lexists(os.path.join(devices, bridge)),
                    "acs": acs(read_bytes(os.path.join(devices, bridge, "config")))}
    out["pairs"] = pairs(out["gpus"], out["nics"])
    return out


def pairs(gpus, nics):
    """Per GPU (in PCI order, as nvidia-smi numbers them) every NIC and how
    it is reached, the nearest first (NIC order breaks ties)."""
    found = []
    for gi, gpu in enumerate(sorted(gpus, key=lambda g: g["pci_address"])):
        if not gpu.get("path"):
            continue
        links = []
        for ni, nic in enumerate(nics):
            if not nic.get("path"):
                continue
            rel = relation(gpu, nic)
            links.append(dict(rel, nic=nic["pci_address"], rdma=nic.get("rdma_device"), netdev=nic.get("name"),
                              numa_node=nic.get("numa_node"), order=ni))
        links.sort(key=lambda r: (rank(r["kind"]), r["order"]))
        found.append({"gpu": gpu["pci_address"], "index": gi, "numa_node": gpu.get("numa_node"), "links": links})
    return found


def _read_bytes(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except (IOError, OSError):
        return None


def _text(data):
    return data.decode("ascii", "replace").strip() if data is not None else None


# ------------------------------------------------------------------ the intent
P2P_MODES = ("auto", "gpudirect", "isolate")


def resolve_mode(want, has_gpus, vfio, gpudirect_off=False):
    """The PCIe peer-to-peer intent of a node: ``gpudirect`` (ACS redirect off
    below the GPU/NIC switches), ``isolate`` (ACS on: VFs go to VMs) or None
    (neither asked for: ACS left as the kernel sets it). ``auto`` takes
    isolate where VFs go to vfio-pci, gpudirect on a GPU node."""
    if want not in P2P_MODES:
        raise PcieError("gpufabric_pcie_p2p is %r: not one of %s" % (want, ", ".join(P2P_MODES)))
    if want == "gpudirect" and vfio:
        raise PcieError("gpufabric_pcie_p2p is gpudirect, but gpufabric_nics hands VFs to VMs (vfio-pci): a VM "
                        "needs ACS on the ports above its VF; set isolate, or take the VFs off vfio-pci")
    if want != "auto":
        return want
    if vfio:
        return "isolate"
    if has_gpus and not gpudirect_off:
        return "gpudirect"
    return None


def hands_vfs_to_vms(nics):
    """Whether a node's ``gpufabric_nics`` give VFs to VMs: a ``vf_drivers``
    range on vfio-pci (layer 6). Layers 2 and 3 read the intent so."""
    for entry in nics or []:
        for rng in (entry or {}).get("vf_drivers") or []:
            if (rng or {}).get("driver") == "vfio-pci":
                return True
    return False


def bios_acs(want, nics):
    """ACS in the BIOS (layer 2) for a node's PCIe peer-to-peer intent: on
    where the node isolates (``isolate``, or ``auto`` with VFs for VMs), off
    for GPUDirect and where nothing is asked. Known before the node runs an OS,
    so ``auto`` does not wait for the GPUs: a node without GPUs and without VMs
    keeps ACS off, as before the intent existed. With the IOMMU on, the kernel
    sets ACS on every port whatever the BIOS says (pci_std_enable_acs), and
    layer 3's argument decides what the GPUs' switches redirect; the BIOS value
    is what holds while the IOMMU is off and on ports the kernel skips."""
    return resolve_mode(want, False, hands_vfs_to_vms(nics)) == "isolate"


def acs_arg(ids):
    """The kernel argument that clears ACS redirect on the functions of the
    given ``pci:VVVV:DDDD`` ids (``;`` between several, as the kernel parses
    it)."""
    return "pci=disable_acs_redir=%s" % ";".join(sorted(set(ids))) if ids else None


def booted_acs_args(cmdline):
    """The ``pci=`` arguments of a command line that carry
    disable_acs_redir (quotes GRUB may leave removed)."""
    return [a.strip("'\"") for a in (cmdline or "").split() if "disable_acs_redir=" in a.strip("'\"")
            and a.strip("'\"").startswith("pci=")]


def plan(reading, mode, cmdline=None, vfio_nics=()):
    """What layer 3 makes of a node's ``read``: ``{mode, arg, unwanted,
    redirecting, open, unknown, evidence}``.

    - gpudirect: ``arg`` clears ACS redirect on the switch ports between
      each GPU and the NICs it reaches below a switch (PIX/PXB);
      ``redirecting`` lists those ports that still redirect now.
    - isolate: no argument; a ``disable_acs_redir`` on the booted command
      line is ``unwanted``; ``open`` lists the ports above a NIC whose VFs go
      to VMs (``vfio_nics``, PF addresses) that have ACS but not its
      redirect bits set.
    - None: nothing."""
    out = {"mode": mode, "arg": None, "unwanted": [], "redirecting": [], "open": [], "unknown": [],
           "evidence": [], "_ports": []}
    if mode is None:
        out.pop("_ports")
        return out
    bridges = reading.get("bridges") or {}
    booted = booted_acs_args(cmdline)
    if mode == "gpudirect":
        ids, seen = [], set()
        for p in reading.get("pairs") or []:
            for link in p["links"]:
                if link["kind"] not in P2P_BELOW_SWITCH:
                    continue
                for port in link["bridges"]:
                    out["_ports"].append(port)
                    b = bridges.get(port) or {}
                    a = b.get("acs")
                    if a is None:
                        continue
                    if a.get("unreadable"):
                        if port not in out["unknown"]:
                            out["unknown"].append(port)
                        continue
                    if a["cap"] & ACS_REDIRECT and b.get("id"):
                        ids.append(b["id"])
                    if a["ctrl"] & ACS_REDIRECT and (port, p["gpu"], link["nic"]) not in seen:
                        seen.add((port, p["gpu"], link["nic"]))
                        out["redirecting"].append({"port": port, "gpu": p["gpu"], "nic": link["nic"],
                                                   "rdma": link.get("rdma"), "ctrl": a["ctrl"],
                                                   "acsctl": acs_text(a["ctrl"])})
        out["arg"] = acs_arg(ids)
        out["unwanted"] = [a for a in booted if a != out["arg"]]
    elif mode == "isolate":
        out["unwanted"] = booted
        for nic in reading.get("nics") or []:
            if nic["pci_address"] not in vfio_nics:
                continue
            for port in (nic.get("path") or [])[1:-1]:
                out["_ports"].append(port)
                a = (bridges.get(port) or {}).get("acs")
                if a and not a.get("unreadable") and a["cap"] & ACS_ISOLATION and \
                        (a["ctrl"] & (a["cap"] & ACS_ISOLATION)) != a["cap"] & ACS_ISOLATION:
                    out["open"].append({"port": port, "nic": nic["pci_address"], "ctrl": a["ctrl"],
                                        "acsctl": acs_text(a["ctrl"])})
    for port in sorted(set(out.pop("_ports"))):
        b = bridges.get(port) or {}
        a = b.get("acs")
        if a and not a.get("unreadable"):
            out["evidence"].append("%s (%s) ACSCtl: %s" % (port, b.get("id") or "?", acs_text(a["ctrl"])))
    return out


def rails(reading):
    """Per GPU its rail: a NIC below a switch with it (PIX/PXB), with how it
    is reached; ``{gpu, index, nic, rdma, kind, below}`` or nic None with the
    nearest there is. GPUs take their rails in PCI order, each the nearest
    NIC below its switch that no GPU before it took (two GPUs and two NICs
    below one switch: one NIC each), else the nearest (a NIC shared by the
    GPUs of its switch); ``below`` lists every NIC below the GPU's switch,
    nearest first, for a caller that counts only some NICs (gpu_of_nic)."""
    out = []
    taken = set()
    for p in reading.get("pairs") or []:
        best = p["links"][0] if p["links"] else None
        below = [k for k in p["links"] if k["kind"] in P2P_BELOW_SWITCH]
        own = next((k for k in below if k["nic"] not in taken), below[0] if below else None)
        if own:
            taken.add(own["nic"])
        out.append({"gpu": p["gpu"], "index": p["index"], "numa_node": p.get("numa_node"),
                    "nic": own["nic"] if own else None, "rdma": own.get("rdma") if own else None,
                    "netdev": own.get("netdev") if own else None, "kind": (own or best or {}).get("kind"),
                    "below": [k["nic"] for k in below],
                    "nearest": dict((k, best.get(k)) for k in ("nic", "rdma", "kind", "numa_node")) if best else None})
    return out


def gpu_of_nic(rails, among=None):
    """``{nic pci_address: {pci_address, index}}``: the GPU whose rail each
    NIC is, from ``rails``; with ``among`` (PCI addresses: the fabric NICs a
    layer counts) each GPU in PCI order takes the first of those below its
    switch that no GPU before it took, so a NIC outside them (a storage or
    front-end port below a GPU's switch) is no GPU's rail."""
    out = {}
    if among is None:
        for rail in rails or []:
            if rail.get("nic") and rail["nic"] not in out:
                out[rail["nic"]] = {"pci_address": rail["gpu"], "index": rail.get("index")}
        return out
    among = set(among)
    for rail in rails or []:
        below = [n for n in (rail.get("below") or ([rail["nic"]] if rail.get("nic") else [])) if n in among]
        own = next((n for n in below if n not in out), None)
        if own:
            out[own] = {"pci_address": rail["gpu"], "index": rail.get("index")}
    return out


def gpu_index(value):
    """A GPU index (0, 1, ...) from inventory input, or None where it is not
    one (a bool, a float, a negative number, text)."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 and str(n) == str(value).strip() else None


KIND_TEXT = {"PHB": "across the root complex (PHB)", "NODE": "across the host bridges of its socket (NODE)",
             "SYS": "across the socket interconnect (SYS)"}


def planned_gpu_problem(reading, nic, planned):
    """The cabling plan makes NIC ``nic`` (PCI address) the rail of GPU
    ``planned`` (its index); None where that GPU reaches the NIC below a
    PCIe switch (PIX/PXB) or the node's GPUs were not read, else the text
    of how it reaches it and whose rail the NIC is by the path. NCCL turns
    GPUDirect RDMA off for a GPU farther from its NIC than PXB
    (NCCL_NET_GDR_LEVEL's default, src/graph/paths.cc ncclTopoCheckGdr)."""
    pairs = (reading or {}).get("pairs") or []
    if not pairs:
        return None
    gpu = next((p for p in pairs if p["index"] == planned), None)
    if gpu is None:
        known = ", ".join("GPU%d %s" % (p["index"], p["gpu"]) for p in pairs)
        return "the node has no GPU%d (its GPUs: %s)" % (planned, known)
    link = next((k for k in gpu["links"] if k["nic"] == nic), None)
    if link is None or link["kind"] in P2P_BELOW_SWITCH:
        return None
    own = gpu_of_nic(rails(reading)).get(nic)
    near = next((k for k in gpu["links"] if k["kind"] in P2P_BELOW_SWITCH), None)
    return "GPU%d %s (NUMA %s) reaches it %s, so NCCL gives that GPU no GPUDirect RDMA over it; by the PCIe path " \
        "it is %s%s" % (
            planned, gpu["gpu"], gpu.get("numa_node"), KIND_TEXT.get(link["kind"], link["kind"]),
            "GPU%d's rail (below its PCIe switch)" % own["index"] if own else "no GPU's rail",
            ", and GPU%d's own NIC is %s" % (planned, near.get("rdma") or near["nic"]) if near else "")


def rail_order(pci_addresses, gpu_of):
    """NICs (PCI addresses) in rail order: each NIC that is a GPU's rail
    (``gpu_of``: ``{pci_address: {index}}``, as gpu_of_nic gives) by that
    GPU's index, so GPU 0's rail comes first; the others after them, in PCI
    address order (the rail order of a node whose GPUs are not known).
    Layer 14's resource per rail and layer 15's NCCL_IB_HCA both take this
    order."""
    gpu_of = gpu_of or {}
    return sorted(pci_addresses, key=lambda pci: (gpu_of[pci]["index"] if pci in gpu_of else 1 << 16, pci))


def rail_text(rail):
    if rail["nic"]:
        return "GPU%d %s -> %s (%s, %s)" % (rail["index"], rail["gpu"], rail["rdma"] or rail["netdev"] or "?",
                                            rail["nic"], rail["kind"])
    near = rail.get("nearest")
    if not near:
        return "GPU%d %s: no NIC" % (rail["index"], rail["gpu"])
    return "GPU%d %s: no NIC below its switch; nearest %s (%s, %s)" % (
        rail["index"], rail["gpu"], near.get("rdma") or near["nic"], near["nic"], near["kind"])


# ------------------------------------------------------------------ nvidia-smi topo -m
TOPO_CELL_RE = re.compile(r"^(X|PIX|PXB|PHB|NODE|SYS|SOC|NV\d+)$")


ANSI_SGR_RE = re.compile(r"\x1b?\[[0-9;]*m")


def parse_topo(text):
    """``nvidia-smi topo -m``: ``{"columns": [...], "rows": {name: {column:
    cell}}, "legend": {"NIC0": "mlx5_0"}}``. Device columns are the header's
    names before ``CPU Affinity``; NICs are ``NIC<n>`` (named in the NIC
    Legend) or, from older drivers, the RDMA device itself (``mlx5_0``).
    ``SOC`` (older drivers) reads as ``SYS``. A row of a device column whose
    cells cannot be read fails, quoting it."""
    # drivers since about 570 underline the header (ESC[4m ... ESC[0m) even into a
    # pipe; a copy that lost the ESC byte keeps "[4m"
    lines = ANSI_SGR_RE.sub("", text).splitlines()
    header_at = next((i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line)), None)
    if header_at is None:
        raise PcieError("nvidia-smi topo -m: no header line starting with GPU0")
    columns = []
    for token in lines[header_at].split():
        if token in ("CPU", "NUMA", "GPU") and columns:
            break
        columns.append(token)
    rows, legend = {}, {}
    in_legend = False
    for line in lines[header_at + 1:]:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("Legend:"):
            break
        fields = stripped.split()
        name = fields[0]
        if name not in columns:
            raise PcieError("nvidia-smi topo -m: row %r is not a column of the header: %r" % (name, line))
        cells = fields[1:1 + len(columns)]
        bad = [c for c in cells if not TOPO_CELL_RE.match(c)]
        if len(cells) < len(columns) or bad:
            raise PcieError("nvidia-smi topo -m: cannot read row %s: %r" % (name, line))
        rows[name] = dict((c, "SYS" if v == "SOC" else v) for c, v in zip(columns, cells))
    for line in lines:
        if line.strip() == "NIC Legend:":
            in_legend = True
            continue
        if in_legend:
            m = re.match(r"^\s+(NIC\d+):\s+(\S+)\s*$", line)
            if m:
                legend[m.group(1)] = m.group(2)
            elif line.strip():
                raise PcieError("nvidia-smi topo -m: cannot read NIC Legend line %r" % line)
    nic_columns = [c for c in columns if not c.startswith("GPU")]
    unnamed = [c for c in nic_columns if re.match(r"^NIC\d+$", c) and c not in legend]
    if unnamed and legend:
        raise PcieError("nvidia-smi topo -m: NIC Legend names no RDMA device for %s" % ", ".join(unnamed))
    return {"columns": columns, "rows": rows, "legend": legend}


def topo_links(topo):
    """``{(gpu_index, rdma_device): kind}`` of a parsed matrix."""
    out = {}
    for col in topo["columns"]:
        if col.startswith("GPU"):
            continue
        rdma = topo["legend"].get(col, col)
        for row, cells in topo["rows"].items():
            m = re.match(r"^GPU(\d+)$", row)
            if m and col in cells:
                out[(int(m.group(1)), rdma)] = cells[col]
    return out


def cross_check(reading, topo):
    """Where nvidia-smi and the sysfs path disagree: ``[{gpu, index, rdma,
    sysfs, nvidia_smi}]`` for every GPU/NIC pair both name (NICs by RDMA
    device, GPUs by index in PCI order)."""
    links = topo_links(topo)
    out = []
    for p in reading.get("pairs") or []:
        for link in p["links"]:
            got = links.get((p["index"], link.get("rdma")))
            if got is not None and got != link["kind"]:
                out.append({"gpu": p["gpu"], "index": p["index"], "rdma": link.get("rdma"), "sysfs": link["kind"],
                            "nvidia_smi": got})
    return out


# ------------------------------------------------------------------ one node's reading
def gather(sysfs_root, gpus, nics, run=None, nvidia_smi=None):
    """What layers 3 and 5 take from the PCIe tree of a node: the ``read``
    with each GPU's ``rails`` and, where nvidia-smi is there (``nvidia_smi``
    its path, ``run(argv) -> (rc, out, err)``), its matrix held against the
    sysfs path in ``topo``."""
    keep = ("pci_address", "numa_node", "name", "rdma_device")
    reading = read(sysfs_root, gpus, [dict((k, n.get(k)) for k in keep) for n in nics])
    reading["rails"] = rails(reading)
    reading["topo"] = None
    if nvidia_smi and run and gpus:
        rc, out, err = run([nvidia_smi, "topo", "-m"])
        if rc != 0:
            reading["topo"] = {"error": "nvidia-smi topo -m: rc=%s: %s" % (rc, (err or out).strip()[:300])}
        else:
            try:
                topo = parse_topo(out)
            except PcieError as exc:
                reading["topo"] = {"error": str(exc)}
            else:
                reading["topo"] = {"columns": topo["columns"], "legend": topo["legend"],
                                   "disagree": cross_check(reading, topo)}
    return reading


def acs_plan(reading, want="auto", vfio=False, gpudirect_off=False, cmdline=None):
    """Layer 3's plan for a node: the resolved mode with ``plan``'s answer."""
    mode = resolve_mode(want, bool(reading.get("gpus")), vfio, gpudirect_off)
    return plan(reading, mode, cmdline, [n["pci_address"] for n in reading.get("nics") or []])
