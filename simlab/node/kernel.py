"""The kernel side of a twin node: PCI functions, netdevs and RDMA devices of
its ConnectX NICs, and the sysfs tree that exposes them.

The model follows the kernel where the collection can tell the difference:

* ``sriov_numvfs`` is written exactly as ``sriov_numvfs_store()`` in
  drivers/pci/iov.c handles it (same value is a no-op, N while M != 0 is
  EBUSY, above ``sriov_totalvfs`` is ERANGE, an unbound PF is ENOENT, a BIOS
  that gave no IOV BARs is ENOMEM), and the ``sriov_*`` files are absent when
  the firmware has SR-IOV off (``sriov_attrs_are_visible()``).
* Enabling VFs makes ``virtfnN``/``physfn`` links at once; the VF netdevs and
  RDMA devices appear a moment later, as udev names them on a real host.
  Disabling clears the per-VF MAC/VLAN/trust/spoof-check state, as mlx5's
  ``mlx5_device_disable_sriov(clear_vf=true)`` does.
* ``/sys/bus/pci/devices/*`` and ``/sys/class/{net,infiniband}/*`` are
  relative symlinks into ``/sys/devices/pci0000:xx/...`` with the real depths.
* ``ecn/``, ``qos/`` and per-VF ``sriov/N`` exist only with the OFED driver.
* A VF is bound to mlx5_core, to ``vfio-pci`` or to nothing; binds follow
  drivers/base/bus.c and drivers/pci/pci-driver.c as Debian 12's 6.1 does
  them (checked on the VM nodes, tests/vm/sysfs_sequence.py): ``bind``
  fails ENODEV unless the driver matches (driver_override names it;
  vfio-pci has no ID table, so only the override matches it), EBUSY on a
  bound device, ENODEV where the VF may not probe, and vfio-pci's probe
  fails EINVAL without an IOMMU group.  ``drivers_probe`` binds the
  override's driver, or the device's own, and succeeds even when none
  binds.  Loading vfio_pci binds every unbound device whose
  driver_override names it; unloading it leaves its devices unbound.

Stdlib only: it runs inside the node with Debian's python3.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import threading
import time
from dataclasses import dataclass, field

from . import kmod
from .hardware import VENDOR, NicSpec, gpu_driver, nic_specs
from .sysctls import BASE_SYSCTLS, BRIDGE_SYSCTLS, sysctl_key

ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
GID_TABLE = 16
VF_PROBE_DELAY = 0.25  # seconds between the numvfs write and the VF netdevs appearing
MAX_MTU = 9978
VF_DRIVER = "mlx5_core"        # the kernel's own driver of a ConnectX PF and its VFs
VFIO_DRIVER = "vfio-pci"       # PCI driver name; its module is vfio_pci
VFIO_MODULE = "vfio_pci"


# include/uapi/linux/pci_regs.h: SrcValid, ReqRedir, CmpltRedir, UpstreamFwd
# (what the kernel enables for an IOMMU) and the redirect bits
# disable_acs_redir clears (ReqRedir, CmpltRedir, EgressCtrl)
ACS_ISOLATION = 0x01 | 0x04 | 0x08 | 0x10
ACS_REDIRECT = 0x04 | 0x08 | 0x20


def acs_match(entry: str, bdf: str, vendor: int, device: int) -> bool:
    """Whether one device of a ``disable_acs_redir=`` list names this
    function, as pci_dev_str_match reads it: ``pci:VVVV:DDDD`` (0 for any)
    or ``[DDDD:]BB:DD.F``."""
    if entry.startswith("pci:"):
        parts = entry[4:].split(":")
        try:
            v, d = int(parts[0], 16), int(parts[1], 16)
        except (IndexError, ValueError):
            return False
        return (v == 0 or v == vendor) and (d == 0 or d == device)
    want = entry if entry.count(":") == 2 else "0000:" + entry
    return want.lower() == bdf.lower()


class KernelError(OSError):
    def __init__(self, err: int, msg: str = ""):
        super().__init__(err, msg or errno.errorcode.get(err, str(err)))


def proc_int(text: str) -> int:
    """One int written to a /proc/sys file, as kernel/sysctl.c's
    __do_proc_dointvec() reads it: leading blanks skipped, an optional
    ``-``, a number in C's base 0 (``0x1f`` hex, ``010`` octal), then a
    blank, a newline or the end; within int's range, and shorter than the
    21 characters proc_get_long() copies (TMPBUFLEN - 1: a sign and number
    that fill them are EINVAL even when they are 1).  Anything else (or
    nothing) is EINVAL."""
    p = text.lstrip(" \t\n\v\f\r")
    neg = p.startswith("-") and len(p) > 1
    p = p[1:] if neg else p
    if not p[:1].isdigit():
        raise KernelError(errno.EINVAL)
    if p[:2].lower() == "0x" and p[2:3] and p[2:3] in "0123456789abcdefABCDEF":
        digits, base, start = "0123456789abcdefABCDEF", 16, 2
    elif p.startswith("0"):
        digits, base, start = "01234567", 8, 0
    else:
        digits, base, start = "0123456789", 10, 0
    end = start
    while end < len(p) and p[end] in digits:
        end += 1
    if end < len(p) and p[end] not in " \t\n" or neg + end >= 21:
        raise KernelError(errno.EINVAL)
    number = int(p[start:end], base)
    if number > 2 ** 31 - 1 + neg:
        raise KernelError(errno.EINVAL)
    return -number if neg else number


def _mac_to_eui64(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    e = b[:3] + [0xff, 0xfe] + b[3:]
    return ":".join(f"{e[i]:02x}{e[i + 1]:02x}" for i in range(0, 8, 2))


def ipv4_gid(ip: str) -> str:
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"0000:0000:0000:0000:0000:ffff:{a:02x}{b:02x}:{c:02x}{d:02x}"


def parse_u16(data: bytes) -> int:
    """kstrtou16(buf, 0, ...): base auto-detect, one trailing newline allowed."""
    text = data.decode("ascii", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    if not text or text.strip() != text:
        raise KernelError(errno.EINVAL)
    try:
        if text.startswith(("0x", "0X")):
            value = int(text[2:], 16)
        elif len(text) > 1 and text.startswith("0"):
            value = int(text[1:], 8)
        else:
            if not text.isdigit():
                raise ValueError
            value = int(text, 10)
    except ValueError:
        raise KernelError(errno.EINVAL) from None
    if value > 0xFFFF:
        raise KernelError(errno.ERANGE)
    return value


# the order do_setvfinfo() applies a VF's attributes in; the length of an 802.1ad
# VLAN list, vlan_proto and qos, checked before vlan, ride with it in one
# ndo_set_vf_vlan() call
_SETVF_ORDER = ("mac", "vlan_list_len", "vlan_proto", "qos", "vlan", "tx_rate", "max_tx_rate", "min_tx_rate",
                "spoofchk", "link_state", "query_rss", "trust", "node_guid", "port_guid")


@dataclass
class Inet:
    """One IPv4 address of a netdev (net/ipv4/devinet.c's in_ifaddr): its
    label is the netdev's name; ``noprefixroute`` marks NetworkManager's."""
    local: str
    prefixlen: int
    broadcast: str | None = None
    scope: str = "global"
    secondary: bool = False
    noprefixroute: bool = False

    def subnet(self) -> ipaddress.IPv4Network:
        return ipaddress.ip_network(f"{self.local}/{self.prefixlen}", strict=False)


@dataclass
class VF:
    index: int
    bdf: str
    mac: str = "00:00:00:00:00:00"
    vlan: int = 0
    qos: int = 0
    spoofchk: bool = True
    trust: bool = False
    link_state: str = "auto"
    node_guid: str = "00:00:00:00:00:00:00:00"
    port_guid: str = "00:00:00:00:00:00:00:00"
    max_tx_rate: int = 0
    min_tx_rate: int = 0
    mtu: int = 1500
    admin_up: bool = False
    # driver_override (drivers/pci/pci-sysfs.c): the one driver that may bind it
    driver_override: str | None = None
    probed_at: float = 0.0
    driver: str | None = VF_DRIVER    # the PCI driver bound to it, or None
    rdma_index: int = 0
    # its netdev's ifindex (Kernel.new_ifindex() when mlx5_core registers it) and
    # whether it was ever up: a netdev never opened keeps noop_qdisc (dev_init_scheduler)
    ifindex: int = 0
    opened: bool = False
    # its IPv4 addresses, and the IPv4 address of each pair of RoCE GID
    # entries after the two default ones (None: a pair freed)
    inet: list[Inet] = field(default_factory=list)
    gid_ips: list[str | None] = field(default_factory=list)

    @property
    def bound(self) -> bool:
        return self.driver is not None

    @property
    def on_kernel_driver(self) -> bool:
        """Bound to mlx5_core: the VF has a netdev and an RDMA device."""
        return self.driver == VF_DRIVER


@dataclass
class PF:
    spec: NicSpec
    bound: bool = True
    numvfs: int = 0
    autoprobe: bool = True
    vfs: list[VF] = field(default_factory=list)
    mtu: int = 1500
    admin_up: bool = True
    link_fault: bool = False
    rdma_index: int = 0
    ifindex: int = 0
    opened: bool = True       # up since the boot brought it up
    inet: list[Inet] = field(default_factory=list)       # as VF.inet
    gid_ips: list[str | None] = field(default_factory=list)
    # host QoS (mlnx_qos / DCB): trust, PFC per priority, dscp -> priority
    trust: str = "pcp"
    pfc: list[int] = field(default_factory=lambda: [0] * 8)
    dscp2prio: dict[int, int] = field(default_factory=lambda: {d: d >> 3 for d in range(64)})
    # the dcbnl APP table's DSCP keys (dcb app show dscp-prio): mlx5 keeps one
    # entry per DSCP the host set; the first switches the port to DSCP trust,
    # deleting the last back to PCP (en_dcbnl.c ieee_setapp / ieee_delapp)
    app_dscp: set[int] = field(default_factory=set)
    cable_len: int = 7
    ecn_rp: list[int] = field(default_factory=lambda: [0] * 8)
    ecn_np: list[int] = field(default_factory=lambda: [0] * 8)
    cnp_dscp: int = 48
    cnp_802p_prio: int = 6
    roce_mode: str = "RoCE v2"   # cma_roce_mode default of current kernels
    roce_tos: int = 0

    @property
    def bdf(self) -> str:
        return self.spec.bdf

    @property
    def netdev(self) -> str:
        return self.spec.netdev

    @property
    def operstate(self) -> str:
        return "up" if self.bound and self.admin_up and not self.link_fault else "down"


class Kernel:
    """One node's kernel view of its NICs.

    ``boot`` carries what firmware, BIOS and the command line decided at boot:
    ``sriov_en`` / ``totalvfs`` per PF (from the firmware's *current* values),
    ``bios_sriov`` and ``iommu`` (the BIOS, plus the ``intel_iommu=on`` or
    ``amd_iommu=on`` flag), ``mmio_ok`` (IOV BARs were assigned).
    """

    def __init__(self, hw: dict, firmware: dict, cmdline: str, bios: dict, faults: dict | None = None,
                 clock=time.monotonic):
        self.hw = hw
        self.lock = threading.RLock()
        self.clock = clock
        self.cmdline = cmdline
        self.bios = bios
        self.faults = dict(faults or {})
        self.ofed = hw.get("driver") == "ofed"
        self.kernel_names = hw.get("rdma_naming") == "kernel"
        self.firmware = firmware
        self.generation = 0
        # what a booted node has loaded (mlx5_core and what it needs for the
        # PFs, mlx5_ib and rdma_ucm through rdma-core's udev rules)
        self.modules = {m for name in kmod.BOOT_MODULES for m in kmod.load_order(name)}
        if self.ofed:
            # DOCA-OFED's modules all depend on its compat layer (lsmod shows
            # mlx_compat used by ib_core, mlx5_core, ...)
            self.modules.add("mlx_compat")
        # the NVIDIA driver of a GPU node, loaded at boot (nvidia_peermem is not);
        # the gpu-driver-closed fault swaps in its closed kernel modules
        self.gpu_driver_installed = gpu_driver(hw)
        self.gpu_driver = self.gpu_driver_installed
        if self.gpu_driver:
            self.modules.add("nvidia")
        # ACS control words written to config space since boot (setpci)
        self.acs_written: dict[str, int] = {}
        # RDMA-CM configfs groups made with mkdir /sys/kernel/config/rdma_cm/<dev>
        self.configfs_groups: set[str] = set()
        self.sysctls = dict(BASE_SYSCTLS)
        self.pfs: list[PF] = []
        # ifindexes as net/core/dev.c dev_new_index() hands them out in the
        # node's network namespace: 1 is its lo (the node container has no other
        # link), then one per netdev registered, never given twice
        self._next_ifindex = 2
        rdma = 0
        for spec in nic_specs(hw):
            pf = PF(spec=spec, rdma_index=rdma, ifindex=self.new_ifindex())
            self.provision(pf)
            rdma += 1
            self.congestion_defaults(pf)
            self.pfs.append(pf)
        self._next_rdma = rdma
        self.apply_faults()

    def congestion_defaults(self, pf: PF) -> None:
        """DCQCN starts as the firmware has it (what OFED's ``ecn/`` files
        read back): on for the priorities in ROCE_CC_PRIO_MASK_P1 (every one by
        default), CNPs with CNP_DSCP_P1 and CNP_802P_PRIO_P1 (48 and 6)."""
        cur = self.firmware.get(pf.bdf, {}).get("current", {})
        mask = int(cur.get("ROCE_CC_PRIO_MASK_P1", 255))
        pf.ecn_rp = [(mask >> p) & 1 for p in range(8)]
        pf.ecn_np = list(pf.ecn_rp)
        pf.cnp_dscp = int(cur.get("CNP_DSCP_P1", 48))
        pf.cnp_802p_prio = int(cur.get("CNP_802P_PRIO_P1", 6))

    # ----------------------------------------------------------------- sysctls
    def sync_module_sysctls(self) -> None:
        """The bridge-netfilter sysctls come and go with br_netfilter."""
        if "br_netfilter" in self.modules:
            for key, default in BRIDGE_SYSCTLS.items():
                self.sysctls.setdefault(key, default)
        else:
            for key in BRIDGE_SYSCTLS:
                self.sysctls.pop(key, None)

    def sysctl_get(self, key: str) -> str:
        key = sysctl_key(key)
        if key not in self.sysctls:
            raise KernelError(errno.ENOENT)
        return self.sysctls[key]

    def sysctl_set(self, key: str, value) -> str:
        """A write of ``value`` to the key's /proc/sys file: read as
        proc_dointvec() does (proc_int()), EINVAL for what it refuses; the
        bridge switches store any non-zero value as 1
        (brnf_sysctl_call_tables())."""
        key = sysctl_key(key)
        if key not in self.sysctls:
            raise KernelError(errno.ENOENT)
        number = proc_int(str(value))
        if key.startswith("net.bridge."):
            number = 1 if number else 0
        self.sysctls[key] = str(number)
        return self.sysctls[key]

    # ----------------------------------------------------------------- boot facts
    def cmdline_flags(self) -> list[str]:
        return self.cmdline.split()

    @property
    def iommu_active(self) -> bool:
        flags = self.cmdline_flags()
        cpu = self.hw.get("cpu_vendor", "intel")
        flag = "intel_iommu=on" if cpu == "intel" else "amd_iommu=on"
        # AMD IOMMUs are on by default when the BIOS enables them; Intel needs the flag.
        wanted = flag in flags or (cpu == "amd" and "amd_iommu=off" not in flags)
        return bool(self.bios.get("iommu")) and wanted

    def acs_ctrl(self, bdf: str, vendor: int, device: int, cap: int) -> int:
        """The ACS control word of a port with capability ``cap`` after boot:
        what the firmware left (BIOS ACS on: the isolation bits), the bits
        the kernel turns on for an IOMMU (pci_std_enable_acs: SrcValid,
        ReqRedir, CmpltRedir, UpstreamFwd), then ``pci=disable_acs_redir=``
        clearing ReqRedir, CmpltRedir and EgressCtrl on the functions it names
        (drivers/pci/pci.c)."""
        ctrl = cap & ACS_ISOLATION if self.bios.get("acs") else 0
        if self.iommu_active:
            ctrl |= cap & ACS_ISOLATION
        if any(acs_match(entry, bdf, vendor, device) for entry in self.disable_acs_redir()):
            ctrl &= ~ACS_REDIRECT
        return self.acs_written.get(bdf, ctrl)

    def write_config(self, bdf: str, offset: int, data: bytes, acs_ctrl_at: int | None) -> None:
        """A write to a port's config space: the ACS control word (16 bits
        at ``acs_ctrl_at``) is kept until the next boot, as the hardware
        keeps what setpci wrote; other registers are not modelled (EIO)."""
        if acs_ctrl_at is None or offset != acs_ctrl_at or len(data) != 2:
            raise KernelError(errno.EIO)
        self.acs_written[bdf] = int.from_bytes(data, "little") & 0x7f

    def disable_acs_redir(self) -> list[str]:
        """The devices of the last ``pci=...disable_acs_redir=`` on the
        command line (pci_setup keeps the last; options split at commas, the
        devices at semicolons)."""
        found: list[str] = []
        for arg in self.cmdline_flags():
            arg = arg.strip("'\"")
            if not arg.startswith("pci="):
                continue
            for opt in arg[4:].split(","):
                if opt.startswith("disable_acs_redir="):
                    found = [e for e in opt[len("disable_acs_redir="):].split(";") if e]
        return found

    @property
    def mmio_ok(self) -> bool:
        """Were IOV BARs assigned?  Not when the BIOS has SR-IOV off; not on a
        board whose BIOS leaves too little MMIO unless the kernel reallocates."""
        if not self.bios.get("sriov"):
            return False
        if self.faults.get("numvfs-enomem") and "pci=realloc" not in self.cmdline_flags():
            return False
        return True

    def fw(self, pf: PF) -> dict:
        return self.firmware[pf.bdf]["current"]

    def sriov_visible(self, pf: PF) -> bool:
        return bool(self.fw(pf).get("SRIOV_EN")) and self.totalvfs(pf) > 0

    def totalvfs(self, pf: PF) -> int:
        """mlx5 sets sriov_totalvfs to the firmware's NUM_OF_VFS."""
        return int(self.fw(pf).get("NUM_OF_VFS", 0))

    def apply_faults(self) -> None:
        for pf in self.pfs:
            pf.link_fault = bool(self.faults.get("link-down")) and pf.spec.index == 0
        if self.gpu_driver_installed:
            closed = bool(self.faults.get("gpu-driver-closed"))
            self.gpu_driver = dict(self.gpu_driver_installed, open=self.gpu_driver_installed["open"] and not closed)
        self.generation += 1

    def set_faults(self, faults: dict) -> None:
        with self.lock:
            self.faults = dict(faults)
            self.apply_faults()

    # ----------------------------------------------------------------- lookups
    def pf_by_bdf(self, bdf: str) -> PF | None:
        return next((p for p in self.pfs if p.bdf == bdf), None)

    def netdevs(self) -> dict:
        """netdev name -> (pf, vf or None) for every netdev that exists now."""
        now = self.clock()
        out = {}
        for pf in self.pfs:
            if not pf.bound:
                continue
            out[pf.netdev] = (pf, None)
            for vf in pf.vfs:
                if vf.on_kernel_driver and now >= vf.probed_at:
                    out[pf.spec.vf_netdev(vf.index)] = (pf, vf)
        return out

    def new_ifindex(self) -> int:
        """The next ifindex, for a netdev being registered."""
        self._next_ifindex += 1
        return self._next_ifindex - 1

    def ifindex(self, pf: PF, vf: VF | None = None) -> int:
        """The netdev's ifindex (sysfs ``ifindex``, ``ip link``, ``rdma
        link``): the PFs' from the boot, a VF's from its last probe by
        mlx5_core, so a VF made again, or bound again, has a new one."""
        return (pf if vf is None else vf).ifindex

    def running(self, pf: PF, vf: VF | None = None) -> bool:
        """netif_running(): the netdev is up (IFF_UP). A netdev that is not
        refuses reads of its sysfs ``carrier``, ``speed`` and ``duplex``."""
        return (pf if vf is None else vf).admin_up

    def vf_link(self, pf: PF, vf: VF) -> bool:
        """The link a VF's vport gives it, up or down: its PF's under
        ``link_state auto``; ``enable`` keeps it and ``disable`` takes it
        whatever the PF's (ip-link(8) ``vf N state``; mlx5 sets its vport's
        admin state so). What a VF's carrier is once its netdev is up, and
        what NetworkManager sees of a VF it manages."""
        return vf.link_state == "enable" or (vf.link_state == "auto" and pf.operstate == "up")

    def carrier(self, pf: PF, vf: VF | None = None) -> bool:
        """netif_carrier_ok() of the netdev, and so whether the RDMA port on
        it is active (mlx5_query_port_roce(): the netdev running and its
        carrier on). A PF's is its operstate. A VF's needs its netdev up
        (mlx5e_close() turns the carrier off) and its vport's link
        (vf_link())."""
        if vf is None:
            return pf.operstate == "up"
        return vf.admin_up and self.vf_link(pf, vf)

    def link_speed(self, pf: PF, vf: VF | None = None) -> bool:
        """Whether ethtool's link settings of the netdev give its speed and
        full duplex: mlx5e's get_speed_duplex() reads them with the carrier
        on and the physical port's link up (a VF held up by ``enable`` over
        a PF without its link gets SPEED_UNKNOWN and DUPLEX_UNKNOWN)."""
        return self.carrier(pf, vf) and pf.operstate == "up"

    def netdev_operstate(self, pf: PF, vf: VF | None = None) -> str:
        """The netdev's operstate: up when it is up (IFF_UP) and has its link."""
        return "up" if self.carrier(pf, vf) else "down"

    def rdma_name(self, pf: PF, vf: VF | None = None) -> str:
        if self.kernel_names:
            return f"mlx5_{(vf.rdma_index if vf else pf.rdma_index)}"
        proto = "roce" if pf.spec.link_type == "ETH" else "ib"
        if vf is None:
            return f"{proto}p{pf.spec.bus}s0f0"
        bus, slot, fn = self.vf_location(pf, vf.index)
        return f"{proto}p{bus}s{slot}f{fn}"

    def vf_location(self, pf: PF, i: int) -> tuple[int, int, int]:
        offset, stride = self.sriov_offset_stride(pf)
        devfn = 0 + offset + stride * i
        return pf.spec.bus + (devfn >> 8), (devfn & 0xff) >> 3, devfn & 7

    def vf_bdf(self, pf: PF, i: int) -> str:
        bus, slot, fn = self.vf_location(pf, i)
        return f"0000:{bus:02x}:{slot:02x}.{fn}"

    @staticmethod
    def sriov_offset_stride(pf: PF) -> tuple[int, int]:
        return 1, 1   # single-function cards: VF0 right after the PF

    def rdma_devices(self) -> dict:
        now = self.clock()
        out = {}
        for pf in self.pfs:
            if not pf.bound or "mlx5_ib" not in self.modules:
                continue
            out[self.rdma_name(pf)] = (pf, None)
            for vf in pf.vfs:
                if vf.on_kernel_driver and now >= vf.probed_at:
                    out[self.rdma_name(pf, vf)] = (pf, vf)
        return out

    # ----------------------------------------------------------------- dcbnl APP table
    def set_trust(self, pf: PF, value: str) -> None:
        """mlx5e_set_trust_state: in DSCP trust the driver registers every
        DSCP in the APP table (mlx5e_dcbnl_dscp_app INIT), in PCP none."""
        if value not in ("pcp", "dscp"):
            raise KernelError(errno.EINVAL, "Invalid argument")
        with self.lock:
            if value != pf.trust or (value == "dscp" and not pf.app_dscp):
                pf.app_dscp = set(range(64)) if value == "dscp" else set()
            pf.trust = value
            self.generation += 1

    def app_set(self, pf: PF, dscp: int, prio: int) -> None:
        """mlx5e_dcbnl_ieee_setapp for a DSCP entry: the first one switches
        the port to DSCP trust; a DSCP already present gets the new priority."""
        if not 0 <= dscp < 64 or not 0 <= prio < 8:
            raise KernelError(errno.EINVAL, "Invalid argument")
        with self.lock:
            if not pf.app_dscp:
                pf.trust = "dscp"
            pf.app_dscp.add(dscp)
            pf.dscp2prio[dscp] = prio
            self.generation += 1

    def app_del(self, pf: PF, dscp: int, prio: int) -> None:
        """mlx5e_dcbnl_ieee_delapp: the entry must match; its DSCP maps to
        priority 0 again and the last one gone switches back to PCP trust."""
        with self.lock:
            if dscp not in pf.app_dscp or pf.dscp2prio.get(dscp) != prio:
                raise KernelError(errno.ENOENT, "No such file or directory")
            pf.app_dscp.discard(dscp)
            pf.dscp2prio[dscp] = 0
            if not pf.app_dscp:
                pf.trust = "pcp"
            self.generation += 1

    # ----------------------------------------------------------------- writes
    def write_numvfs(self, pf: PF, data: bytes) -> None:
        with self.lock:
            n = parse_u16(data)
            if n > self.totalvfs(pf):
                raise KernelError(errno.ERANGE)
            if n == pf.numvfs:
                return
            if not pf.bound:
                raise KernelError(errno.ENOENT)
            if n == 0:
                self._disable_vfs(pf)
                return
            if pf.numvfs:
                raise KernelError(errno.EBUSY)
            if not self.mmio_ok:
                raise KernelError(errno.ENOMEM)
            self._enable_vfs(pf, n)

    def _enable_vfs(self, pf: PF, n: int) -> None:
        ready = self.clock() + VF_PROBE_DELAY
        pf.vfs = []
        for i in range(n):
            vf = VF(index=i, bdf=self.vf_bdf(pf, i), driver=VF_DRIVER if pf.autoprobe else None, probed_at=ready,
                    rdma_index=self._next_rdma, ifindex=self.new_ifindex() if pf.autoprobe else 0)
            self._next_rdma += 1
            # mlx5 gives every VF a random locally administered MAC unless one is set.
            vf.mac = "00:00:00:00:00:00"
            pf.vfs.append(vf)
        pf.numvfs = n
        self.generation += 1

    def _disable_vfs(self, pf: PF) -> None:
        pf.vfs = []          # per-VF vport config goes with them
        pf.numvfs = 0
        self.generation += 1

    def set_autoprobe(self, pf: PF, data: bytes) -> None:
        text = data.decode().strip().lower()
        truth = {"1": True, "y": True, "yes": True, "on": True, "0": False, "n": False, "no": False, "off": False}
        if text not in truth:
            raise KernelError(errno.EINVAL)
        with self.lock:
            pf.autoprobe = truth[text]
            self.generation += 1

    def drivers(self) -> set[str]:
        """The PCI drivers registered now: mlx5_core's directory is always
        there (as the collection's tests expect it), vfio-pci's only while
        its module is loaded."""
        return {VF_DRIVER} | ({VFIO_DRIVER} if VFIO_MODULE in self.modules else set())

    def _probe_vf(self, vf: VF, driver: str) -> None:
        """A driver's probe of a VF (pci_device_probe, then the driver's
        own): ENODEV where the VF may not probe (pci_device_can_probe():
        its PF's autoprobe off and no driver_override), EINVAL from
        vfio-pci without an IOMMU group (vfio_group_find_or_alloc())."""
        owner = self._vf_by_bdf(vf.bdf)[0]
        if not owner.autoprobe and vf.driver_override is None:
            raise KernelError(errno.ENODEV)
        if driver == VFIO_DRIVER and not self.iommu_active:
            raise KernelError(errno.EINVAL)
        vf.driver = driver
        if driver == VF_DRIVER:
            vf.probed_at = self.clock() + VF_PROBE_DELAY
            # a new netdev: its own number, down and never opened
            vf.ifindex, vf.admin_up, vf.opened = self.new_ifindex(), False, False
            vf.inet, vf.gid_ips = [], []

    @staticmethod
    def _matches(vf: VF, driver: str) -> bool:
        """pci_match_device(): a driver_override admits only the driver it
        names (and that one always matches); vfio-pci has no ID table."""
        if vf.driver_override is not None:
            return vf.driver_override == driver
        return driver == VF_DRIVER

    def bind(self, bdf: str, driver: str = VF_DRIVER) -> None:
        """``drivers/<driver>/bind`` (bind_store() in drivers/base/bus.c):
        ENODEV for no such device or no match, EBUSY for a bound device,
        then the probe's error."""
        with self.lock:
            bdf = bdf.strip()
            pf = self.pf_by_bdf(bdf)
            if pf is None:
                found = self._vf_by_bdf(bdf)
                if found is None:
                    raise KernelError(errno.ENODEV)
                vf = found[1]
                if not self._matches(vf, driver):
                    raise KernelError(errno.ENODEV)
                if vf.bound:
                    raise KernelError(errno.EBUSY)
                self._probe_vf(vf, driver)
            else:
                if driver != VF_DRIVER:
                    raise KernelError(errno.ENODEV)
                if pf.bound:
                    raise KernelError(errno.EBUSY)
                pf.bound, pf.ifindex = True, self.new_ifindex()
                self.provision(pf)
            self.generation += 1

    def drivers_probe(self, bdf: str) -> None:
        """``/sys/bus/pci/drivers_probe`` (drivers_probe_store()): ENODEV for
        no such device; a bound device is left as it is; otherwise the first
        registered driver that matches and probes takes it.  A failed probe
        is not the writer's error: the device stays unbound."""
        with self.lock:
            bdf = bdf.strip()
            pf = self.pf_by_bdf(bdf)
            found = None if pf else self._vf_by_bdf(bdf)
            if pf is None and found is None:
                raise KernelError(errno.ENODEV)
            if pf is not None:
                if not pf.bound:
                    pf.bound, pf.ifindex = True, self.new_ifindex()
                    self.provision(pf)
                    self.generation += 1
                return
            vf = found[1]
            if vf.bound:
                return
            for driver in sorted(self.drivers()):
                if self._matches(vf, driver):
                    try:
                        self._probe_vf(vf, driver)
                    except KernelError:
                        continue
                    break
            self.generation += 1

    def set_driver_override(self, vf: VF, data: bytes) -> None:
        """driver_override_store(): a name, or an empty line to clear it."""
        text = data.decode().strip()
        with self.lock:
            vf.driver_override = text or None
            self.generation += 1

    def unbind(self, bdf: str, driver: str = VF_DRIVER) -> None:
        """``drivers/<driver>/unbind``: ENODEV unless the device is bound to
        that driver."""
        with self.lock:
            pf = self.pf_by_bdf(bdf.strip())
            if pf is None:
                vf = self._vf_by_bdf(bdf.strip())
                if vf is None or vf[1].driver != driver:
                    raise KernelError(errno.ENODEV)
                vf[1].driver = None
            else:
                if not pf.bound or driver != VF_DRIVER:
                    raise KernelError(errno.ENODEV)
                # mlx5's remove path disables SR-IOV first
                self._disable_vfs(pf)
                pf.bound = False
            self.generation += 1

    def vfio_loaded(self) -> None:
        """vfio_pci registered its driver: it probes every unbound device
        whose driver_override names it."""
        for pf in self.pfs:
            for vf in pf.vfs:
                if not vf.bound and vf.driver_override == VFIO_DRIVER:
                    try:
                        self._probe_vf(vf, VFIO_DRIVER)
                    except KernelError:
                        pass

    def vfio_unloaded(self) -> None:
        """pci_unregister_driver(): every device on vfio-pci is released."""
        for pf in self.pfs:
            for vf in pf.vfs:
                if vf.driver == VFIO_DRIVER:
                    vf.driver = None

    def _vf_by_bdf(self, bdf: str):
        for pf in self.pfs:
            for vf in pf.vfs:
                if vf.bdf == bdf:
                    return pf, vf
        return None

    def set_mtu(self, ifname: str, mtu: int) -> None:
        with self.lock:
            dev = self.netdevs().get(ifname)
            if dev is None:
                raise KernelError(errno.ENODEV)
            if not 68 <= mtu <= MAX_MTU:
                raise KernelError(errno.EINVAL, "mtu out of range")
            pf, vf = dev
            if vf is None:
                pf.mtu = mtu
            else:
                vf.mtu = mtu
            self.generation += 1

    def set_admin(self, ifname: str, up: bool) -> None:
        with self.lock:
            dev = self.netdevs().get(ifname)
            if dev is None:
                raise KernelError(errno.ENODEV)
            pf, vf = dev
            if vf is None:
                pf.admin_up = up
            else:
                vf.admin_up = up
                vf.opened = vf.opened or up
            self.generation += 1

    def set_vf(self, ifname: str, index: int, **settings) -> None:
        """``ip link set <pf> vf N ...`` through the PF's netlink ops."""
        with self.lock:
            dev = self.netdevs().get(ifname)
            if dev is None:
                raise KernelError(errno.ENODEV, f"Cannot find device \"{ifname}\"")
            pf, vf = dev
            if vf is not None:
                raise KernelError(errno.EOPNOTSUPP, "Operation not supported")
            if not 0 <= index < pf.numvfs:
                raise KernelError(errno.EINVAL, "Invalid argument")
            target = pf.vfs[index]
            # net/core/rtnetlink.c do_setvfinfo(): the attributes in its order,
            # each through mlx5e's ndo (none for query_rss); the first refusal
            # ends it, with what came before it applied
            unknown = sorted(set(settings) - set(_SETVF_ORDER))
            if unknown:
                raise KernelError(errno.EINVAL, f"no VF attribute {unknown[0]}")
            for key in sorted(settings, key=_SETVF_ORDER.index):
                value = settings[key]
                if key == "qos":
                    value &= 0xFF        # ndo_set_vf_vlan() takes a u8
                if key in ("tx_rate", "max_tx_rate") or (key == "min_tx_rate" and "max_tx_rate" not in settings):
                    # rtnl_set_vf_rate(): both rates in one call (the legacy tx_rate
                    # with the VF's min), a max below the min refused
                    low = settings.get("min_tx_rate", target.min_tx_rate) if key != "tx_rate" else target.min_tx_rate
                    high = value if key == "tx_rate" else settings.get("max_tx_rate", target.max_tx_rate)
                    if high and high < low:
                        raise KernelError(errno.EINVAL, "Invalid argument")
                    if key == "tx_rate":
                        key = "max_tx_rate"
                if key == "query_rss" or (key in ("node_guid", "port_guid") and pf.spec.link_type != "IB"):
                    raise KernelError(errno.EOPNOTSUPP, "Operation not supported")
                if key == "mac" and int(value.split(":")[0], 16) & 1:
                    raise KernelError(errno.EINVAL, "Invalid argument")     # multicast
                if key == "vlan_list_len":    # an 802.1ad VLAN list: MAX_VLAN_LIST_LEN is 1
                    if value > 1:
                        raise KernelError(errno.EOPNOTSUPP, "Operation not supported")
                    continue
                if key == "vlan_proto":
                    if value != "802.1Q":
                        raise KernelError(errno.EPROTONOSUPPORT, "Protocol not supported")
                    continue
                if key == "vlan" and not 0 <= value <= 4095:
                    raise KernelError(errno.EINVAL, "Invalid argument")
                if key == "qos" and not 0 <= value <= 7:
                    raise KernelError(errno.EINVAL, "Invalid argument")
                setattr(target, key, value)
                self.generation += 1

    # ------------------------------------------------------------ addresses
    def provision(self, pf: PF) -> None:
        """The PF's netdev as the rack's provisioning leaves it: its RoCE
        address from a NetworkManager profile (ipv4.method manual, a /24,
        ipv6.method disabled, autoconnect), which NetworkManager puts on each
        netdev the PF registers, flagged ``noprefixroute`` as NetworkManager's
        addresses are; simlab.vm.lab.provision() makes the same profile on the
        VM nodes. The GID table's IPv4 entries follow the addresses."""
        pf.inet, pf.gid_ips = [], []
        if pf.spec.ipv4 and pf.spec.link_type == "ETH":
            net = ipaddress.ip_network(f"{pf.spec.ipv4}/24", strict=False)
            pf.inet.append(Inet(pf.spec.ipv4, 24, str(net.broadcast_address), noprefixroute=True))
            pf.gid_ips.append(pf.spec.ipv4)

    def _inet_owner_pair(self, ifname: str):
        dev = self.netdevs().get(ifname)
        if dev is None:
            raise KernelError(errno.ENODEV, os.strerror(errno.ENODEV))
        return dev

    def _inet_owner(self, ifname: str):
        pf, vf = self._inet_owner_pair(ifname)
        return pf if vf is None else vf

    # rtnl_rtscope_a2n()'s numbers: a smaller one is the wider scope
    SCOPES = {"global": 0, "site": 200, "link": 253, "host": 254, "nowhere": 255}

    def inet_add(self, ifname: str, local: str, prefixlen: int, broadcast: str | None, scope: str) -> None:
        """RTM_NEWADDR with NLM_F_EXCL (``ip addr add``), as
        net/ipv4/devinet.c inet_insert_ifa() takes it: EEXIST for the same
        address and mask, an address inside another's subnet is its
        secondary (listed after every primary), EINVAL where their scopes
        differ; a primary goes after the last primary of its scope or a
        wider one. RoCE: roce_gid_mgmt adds the address's GID entries (one
        per GID type, RoCE v1 then v2) at the first free index."""
        with self.lock:
            dev = self._inet_owner(ifname)
            if local == "0.0.0.0":
                return          # __inet_insert_ifa() drops it and answers success
            # inet_fill_ifaddr() leaves a zero broadcast out
            new = Inet(local, prefixlen, None if broadcast == "0.0.0.0" else broadcast, scope)
            at = 0
            for i, have in enumerate(dev.inet):
                if not have.secondary and self.SCOPES[scope] <= self.SCOPES[have.scope]:
                    at = i + 1
                if have.prefixlen == prefixlen and have.subnet() == new.subnet():
                    if have.local == local:
                        raise KernelError(errno.EEXIST, os.strerror(errno.EEXIST))
                    if have.scope != scope:
                        raise KernelError(errno.EINVAL, os.strerror(errno.EINVAL))
                    new.secondary = True
            dev.inet.insert(len(dev.inet) if new.secondary else at, new)
            if local not in dev.gid_ips:
                free = dev.gid_ips.index(None) if None in dev.gid_ips else len(dev.gid_ips)
                dev.gid_ips[free:free + 1] = [local]
            self.generation += 1

    def inet_del(self, ifname: str, local: str, prefixlen: int | None) -> None:
        """RTM_DELADDR (``ip addr del``), as inet_rtm_deladdr(): the first
        address with that local address (and prefix length, when the command
        gave one: iproute2 leaves it out of a wildcard deletion), or
        EADDRNOTAVAIL. A primary takes its secondaries with it
        (__inet_del_ifa() with promote_secondaries 0, as Debian 12 has it:
        seen on the VM nodes). The GID entries of what went are freed, those
        of an IP another address still holds too (seen on Soft-RoCE)."""
        with self.lock:
            dev = self._inet_owner(ifname)
            gone = next((a for a in dev.inet if a.local == local and prefixlen in (None, a.prefixlen)), None)
            if gone is None:
                raise KernelError(errno.EADDRNOTAVAIL, os.strerror(errno.EADDRNOTAVAIL))
            lost = [gone] + ([] if gone.secondary else
                             [a for a in dev.inet if a.secondary and a.prefixlen == gone.prefixlen
                              and a.subnet() == gone.subnet()])
            dev.inet = [a for a in dev.inet if all(a is not x for x in lost)]
            for a in lost:
                # each address gone is roce_gid_mgmt's GID_DEL of its IP, even where
                # another address of the netdev has that IP with another prefix
                if a.local in dev.gid_ips:
                    dev.gid_ips[dev.gid_ips.index(a.local)] = None
            while dev.gid_ips and dev.gid_ips[-1] is None:
                dev.gid_ips.pop()
            self.generation += 1

    def inet6_refused(self, ifname: str, add: bool) -> None:
        """An IPv6 address to add to or delete from a PF: its profile
        disables IPv6 (disable_ipv6 1), so the kernel answers EACCES to an
        add (inet6_addr_add()) and EADDRNOTAVAIL to a delete (seen on the VM
        nodes). IPv6 on a VF is not modelled."""
        pf, vf = self._inet_owner_pair(ifname)
        if vf is not None:
            raise KernelError(errno.EOPNOTSUPP, "IPv6 on a VF is not modelled")
        err = errno.EACCES if add else errno.EADDRNOTAVAIL
        raise KernelError(err, os.strerror(err))

    def addresses(self, pf: PF, vf: VF | None = None) -> list[dict]:
        """The netdev's addresses as RTM_GETADDR dumps them: its IPv4
        addresses, primaries first. No IPv6: the PF's profile disables it,
        and NetworkManager turns the kernel's link-local address off on the
        VFs it manages (seen on the VM nodes); an unmanaged VF's link-local
        address is not modelled."""
        dev = pf if vf is None else vf
        if not pf.bound:
            return []
        return [{"family": "inet", "local": a.local, "prefixlen": a.prefixlen, "broadcast": a.broadcast,
                 "scope": a.scope, "secondary": a.secondary, "noprefixroute": a.noprefixroute}
                for a in dev.inet]

    def vf_netdev_mac(self, pf: PF, vf: VF) -> str:
        if vf.mac != "00:00:00:00:00:00":
            return vf.mac
        # the VF netdev gets a random MAC when the admin MAC is unset; keep it stable
        return f"1e:{pf.spec.bus:02x}:{vf.index:02x}:5a:{pf.spec.index:02x}:7c"

    # ----------------------------------------------------------------- GIDs
    def gids(self, pf: PF, vf: VF | None) -> list:
        """(gid, type, ndev) per index, in kernel order; None for an index
        freed inside the table."""
        name = pf.spec.vf_netdev(vf.index) if vf else pf.netdev
        if pf.spec.link_type == "IB":
            guid = self.node_guid(pf, vf).replace(":", "")
            return [(f"fe80:0000:0000:0000:{guid[0:4]}:{guid[4:8]}:{guid[8:12]}:{guid[12:16]}", "IB/RoCE v1", "")]
        mac = self.vf_netdev_mac(pf, vf) if vf else pf.spec.mac
        ll = "fe80:0000:0000:0000:" + _mac_to_eui64(mac)
        rows: list = [(ll, "IB/RoCE v1", name), (ll, "RoCE v2", name)]
        for ip in (pf if vf is None else vf).gid_ips:
            # roce_gid_mgmt's entries of an IPv4 address; a freed pair stays empty
            rows += [(ipv4_gid(ip), "IB/RoCE v1", name), (ipv4_gid(ip), "RoCE v2", name)] if ip else [None, None]
        return rows

    def node_guid(self, pf: PF, vf: VF | None) -> str:
        if vf is not None:
            if vf.node_guid != "00:00:00:00:00:00:00:00":
                g = vf.node_guid.replace(":", "")
                return ":".join(g[i:i + 4] for i in range(0, 16, 4))
            return "0000:0000:0000:0000"
        m = pf.spec.mac.split(":")
        return f"{m[0]}{m[1]}:{m[2]}ff:fe{m[3]}:{m[4]}{m[5]}"

    def port_state(self, pf: PF, vf: VF | None) -> tuple[str, str]:
        up = self.carrier(pf, vf)
        return ("4: ACTIVE", "5: LinkUp") if up else ("1: DOWN", "3: Disabled")
