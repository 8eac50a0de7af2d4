"""The sysfs tree of a twin node, computed from its :class:`Kernel`.

``Tree`` maps absolute paths (``/bus/pci/devices/...``, relative to the sysfs
root) to entries: directories, files with read/write handlers that raise the
kernel's errno, and relative symlinks with the real depths.  The FUSE front-end
(``fusefs.py``) serves it; tests use it directly, or ``materialize()`` it into a
plain directory.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import Callable

from .hardware import GPU, OFED_MODULE, OFED_MODULES, PCIE_SWITCH, SWITCH_ACS_CAP, VENDOR, Slot, pcie_slots
from .kernel import ACS_ISOLATION, GID_TABLE, PF, VF, VF_DRIVER, VFIO_DRIVER, ZERO_GID, Kernel, KernelError

PF_BAR_SIZE = 0x2000000   # BAR 0 of a ConnectX PF: 32 MiB
VF_BAR_SIZE = 0x100000    # BAR 0 of each VF: 1 MiB, all VFs together in IOV BAR 7


@dataclass
class Dir:
    mode: int = 0o755


@dataclass
class File:
    read: Callable[[], bytes] | None
    write: Callable[[bytes], None] | None = None
    mode: int = 0o444
    # a file written at an offset (config space), instead of whole
    pwrite: Callable[[bytes, int], None] | None = None


@dataclass
class Link:
    target: str


def _c(value) -> Callable[[], bytes]:
    data = value if isinstance(value, bytes) else f"{value}\n".encode()
    return lambda: data


def _to_root(path: str) -> str:
    """The relative way from the directory ``path`` up to the sysfs root."""
    return "../" * len([p for p in path.split("/") if p])


def _err(code: int) -> Callable[[], bytes]:
    def reader():
        raise KernelError(code)
    return reader


class Tree:
    def __init__(self, kernel: Kernel):
        self.k = kernel
        self.entries: dict[str, object] = {}
        self.children: dict[str, list[str]] = {}
        self._key = None

    # ------------------------------------------------------------ public API
    def refresh(self) -> None:
        k = self.k
        with k.lock:
            now = k.clock()
            ready = tuple(vf.probed_at <= now for pf in k.pfs for vf in pf.vfs)
            key = (k.generation, ready)
            if key == self._key:
                return
            self.entries = {}
            self.children = {}
            self._dir("/")
            self._build()
            self._key = key

    def lookup(self, path: str):
        """The entry at path, following symlinks in every component but the
        last (lstat semantics); None when it does not exist."""
        try:
            return self._walk(path, follow_last=False)
        except KernelError:
            return None

    def listdir(self, path: str) -> list[str]:
        real = self._real(path)
        if not isinstance(self.entries.get(real), Dir):
            raise KernelError(errno.ENOTDIR)
        return sorted(self.children.get(real, []))

    def read(self, path: str) -> bytes:
        e = self._walk(path, follow_last=True)
        if isinstance(e, Dir):
            raise KernelError(errno.EISDIR)
        if e.read is None:
            raise KernelError(errno.EACCES)
        return e.read()

    def write(self, path: str, data: bytes, offset: int = 0) -> None:
        e = self._walk(path, follow_last=True)
        if isinstance(e, Dir):
            raise KernelError(errno.EISDIR)
        if getattr(e, "pwrite", None) is not None:
            e.pwrite(data, offset)
            return
        if e.write is None:
            raise KernelError(errno.EACCES)
        e.write(data)

    # ------------------------------------------------------------ RDMA-CM configfs
    CONFIGFS = "/kernel/config/rdma_cm"

    def _configfs(self) -> None:
        """``<sysfs>/kernel/config/rdma_cm``, as the kernel's
        drivers/infiniband/core/cma_configfs.c makes it: present with rdma_cm
        loaded; a group per mkdir of an RDMA device name (ENODEV for another
        name) with ports/<n>/default_roce_mode and default_roce_tos, whose
        values live in the RDMA-CM device, not in configfs (they outlive
        rmdir)."""
        k = self.k
        if "rdma_cm" not in k.modules:
            return
        self._dir(self.CONFIGFS)
        devices = k.rdma_devices()
        for name in sorted(k.configfs_groups):
            if name not in devices:
                continue
            pf, vf = devices[name]
            port = f"{self.CONFIGFS}/{name}/ports/1"
            self._dir(f"{self.CONFIGFS}/{name}/ports")
            if vf is not None:
                # the model keeps RDMA-CM defaults per PF; a VF's read as the kernel's defaults
                self._file(f"{port}/default_roce_mode", "RoCE v2", write=lambda d: self._no_vf(), mode=0o644)
                self._file(f"{port}/default_roce_tos", "0", write=lambda d: self._no_vf(), mode=0o644)
                continue
            self._file(f"{port}/default_roce_mode", lambda pf=pf: f"{pf.roce_mode}\n".encode(),
                       write=lambda d, pf=pf: self._write_roce_mode(pf, d), mode=0o644)
            self._file(f"{port}/default_roce_tos", lambda pf=pf: f"{pf.roce_tos}\n".encode(),
                       write=lambda d, pf=pf: self._write_roce_tos(pf, d), mode=0o644)

    @staticmethod
    def _no_vf() -> None:
        raise KernelError(errno.EOPNOTSUPP)

    def _write_roce_mode(self, pf: PF, data: bytes) -> None:
        # cma_configfs default_roce_mode_store: exactly a GID type name, one optional newline
        text = data.decode(errors="replace")
        text = text[:-1] if text.endswith("\n") else text
        if text not in ("RoCE v2", "IB/RoCE v1"):
            raise KernelError(errno.EINVAL)
        with self.k.lock:
            pf.roce_mode = text
            self.k.generation += 1

    def _write_roce_tos(self, pf: PF, data: bytes) -> None:
        # kstrtou8(buf, 0, &tos): decimal, 0x hex or 0 octal; > 255 is ERANGE
        text = data.decode(errors="replace")
        text = text[:-1] if text.endswith("\n") else text
        try:
            value = int(text, 0) if not (len(text) > 1 and text[0] == "0" and text[1] not in "xX") else int(text, 8)
        except ValueError:
            raise KernelError(errno.EINVAL) from None
        if value < 0:
            raise KernelError(errno.EINVAL)
        if value > 255:
            raise KernelError(errno.ERANGE)
        with self.k.lock:
            pf.roce_tos = value
            self.k.generation += 1

    def mkdir(self, path: str) -> None:
        parent, _, name = path.rstrip("/").rpartition("/")
        if parent != self.CONFIGFS or not isinstance(self.lookup(self.CONFIGFS), Dir):
            raise KernelError(errno.EPERM)
        with self.k.lock:
            if name in self.k.configfs_groups:
                raise KernelError(errno.EEXIST)
            if name not in self.k.rdma_devices():
                raise KernelError(errno.ENODEV)
            self.k.configfs_groups.add(name)
            self.k.generation += 1

    def rmdir(self, path: str) -> None:
        parent, _, name = path.rstrip("/").rpartition("/")
        with self.k.lock:
            if parent != self.CONFIGFS or name not in self.k.configfs_groups:
                raise KernelError(errno.ENOENT if parent == self.CONFIGFS else errno.EPERM)
            self.k.configfs_groups.discard(name)
            self.k.generation += 1

    def readlink(self, path: str) -> str:
        e = self.lookup(path)
        if not isinstance(e, Link):
            raise KernelError(errno.EINVAL)
        return e.target

    def _real(self, path: str, follow_last: bool = True, depth: int = 0) -> str:
        """The link-free path that path names, as the kernel's path walk does."""
        self.refresh()
        parts = [p for p in path.split("/") if p]
        cur = "/"
        for i, part in enumerate(parts):
            nxt = cur.rstrip("/") + "/" + part
            e = self.entries.get(nxt)
            if e is None:
                raise KernelError(errno.ENOENT)
            last = i == len(parts) - 1
            if isinstance(e, Link) and (follow_last or not last):
                if depth > 20:
                    raise KernelError(errno.ELOOP)
                target = os.path.normpath(os.path.join(os.path.dirname(nxt), e.target))
                rest = "/".join(parts[i + 1:])
                return self._real(target + ("/" + rest if rest else ""), follow_last, depth + 1)
            cur = nxt
        return cur

    def _walk(self, path: str, follow_last: bool):
        real = self._real(path, follow_last)
        e = self.entries.get(real)
        if e is None:
            raise KernelError(errno.ENOENT)
        return e

    def materialize(self, dest: str) -> None:
        """Write the tree as plain files and symlinks (read errors -> file absent)."""
        self.refresh()
        for path in sorted(self.entries):
            e = self.entries[path]
            real = os.path.join(dest, path.lstrip("/"))
            if isinstance(e, Dir):
                os.makedirs(real, exist_ok=True)
            elif isinstance(e, Link):
                os.makedirs(os.path.dirname(real), exist_ok=True)
                os.symlink(e.target, real)
            else:
                try:
                    data = e.read() if e.read else b""
                except OSError:
                    continue
                os.makedirs(os.path.dirname(real), exist_ok=True)
                with open(real, "wb") as fh:
                    fh.write(data)

    # ------------------------------------------------------------ helpers
    def _dir(self, path: str, mode: int = 0o755) -> None:
        if path in self.entries:
            return
        if path != "/":
            parent = os.path.dirname(path)
            self._dir(parent)
            self.children.setdefault(parent, []).append(os.path.basename(path))
        self.entries[path] = Dir(mode)

    def _add(self, path: str, entry) -> None:
        parent = os.path.dirname(path)
        self._dir(parent)
        if path not in self.entries:
            self.children.setdefault(parent, []).append(os.path.basename(path))
        self.entries[path] = entry

    def _file(self, path, read, write=None, mode=None):
        if mode is None:
            mode = 0o644 if write else 0o444
        self._add(path, File(read if callable(read) or read is None else _c(read), write, mode))

    def _link(self, path: str, target: str) -> None:
        self._add(path, Link(target))

    # ------------------------------------------------------------ the tree
    def _slots(self) -> list[Slot]:
        slots = self.__dict__.get("_slot_cache")
        if slots is None:
            slots = self._slot_cache = pcie_slots(self.k.hw)
        return slots

    def _devdir(self, pf: PF) -> str:
        """The PF's directory: below its root port, the PCIe switch's
        upstream port and the downstream port it hangs off."""
        slot = self._slots()[pf.spec.index]
        return f"/devices/{slot.host_bridge}/{slot.root_port}/{slot.upstream}/{slot.nic_port}"

    def _build(self) -> None:
        k = self.k
        for d in ("/bus/pci/devices", "/bus/pci/drivers/mlx5_core", "/bus/pci/drivers/pcieport", "/class/net",
                  "/class/infiniband", "/class/iommu", "/kernel/iommu_groups", "/module", "/devices/virtual/net/lo"):
            self._dir(d)
        drivers = k.drivers()
        for name in sorted(drivers):
            drv = f"/bus/pci/drivers/{name}"
            self._file(f"{drv}/bind", None, write=lambda d, name=name: k.bind(d.decode(), driver=name), mode=0o200)
            self._file(f"{drv}/unbind", None, write=lambda d, name=name: k.unbind(d.decode(), driver=name),
                       mode=0o200)
            self._file(f"{drv}/uevent", None, write=lambda d: None, mode=0o200)
            if name == VFIO_DRIVER:
                # dynamic IDs: accepted, and vfio-pci matches by driver_override only here
                self._file(f"{drv}/new_id", None, write=lambda d: None, mode=0o200)
                self._file(f"{drv}/remove_id", None, write=lambda d: None, mode=0o200)
                self._link(f"{drv}/module", "../../../../module/vfio_pci")
        self._file("/bus/pci/drivers_probe", None, write=lambda d: k.drivers_probe(d.decode()), mode=0o200)
        for mod in sorted(k.modules):
            self._file(f"/module/{mod}/initstate", "live")
            if k.ofed and mod in OFED_MODULES:
                # MODULE_VERSION makes version and srcversion (kernel/params.c); inbox mlx5 has none since 5.11
                self._file(f"/module/{mod}/version", OFED_MODULE["version"])
                self._file(f"/module/{mod}/srcversion", OFED_MODULE["srcversion"])
            if mod in ("nvidia", "nvidia_peermem") and k.gpu_driver:
                # both carry the driver's MODULE_VERSION; module/<name>/taint lists the
                # module's taint flags in bit order (kernel/module/main.c): P for a licence
                # that is not GPL-compatible (the closed nvidia.ko's "NVIDIA"; nvidia-peermem
                # is "Dual BSD/GPL" in either driver), O out of tree, E unsigned (a DKMS
                # build); real values in tests/unit/fixtures/gpudirect_real
                closed = mod == "nvidia" and not k.gpu_driver["open"]
                self._file(f"/module/{mod}/version", k.gpu_driver["version"])
                self._file(f"/module/{mod}/taint", "POE" if closed else "OE")
        if k.ofed:
            # MLNX_OFED / DOCA-OFED's ib_core publishes its peer-memory API here
            # (NCCL looks for its clients under it); the inbox ib_core has none
            self._dir("/kernel/mm/memory_peers")
        self._configfs()
        groups = _Groups()
        for slot in self._slots():
            self._slot(slot, groups)
        slots = self._slots()
        for pf in k.pfs:
            self._pci_function(pf, None, self._group_below(slots[pf.spec.index].nic_port, groups, pf.bdf))
        shared = k.faults.get("iommu-shared-group")
        for pf in k.pfs:
            port = slots[pf.spec.index].nic_port
            for vf in pf.vfs:
                # without ACS on the port above it, a PF and its VFs are one group
                group = groups.of(pf.bdf) if (shared and pf.spec.index == 0) or not self._isolating(port) \
                    else groups.take(vf.bdf)
                self._pci_function(pf, vf, group)
        if k.iommu_active:
            iommu = "/devices/virtual/iommu/dmar0"
            self._file(f"{iommu}/intel-iommu/version", "1:0")
            self._link("/class/iommu/dmar0", "../../devices/virtual/iommu/dmar0")
            for group in groups.used():
                g = f"/kernel/iommu_groups/{group}"
                self._dir(f"{g}/devices")
                self._file(f"{g}/type", "DMA-FQ")
                self._file(f"{g}/reserved_regions", "0x00000000fee00000 0x00000000feefffff msi")

    def _common(self, d: str, bdf: str, ids: dict, cls: str, numa: int, group: int) -> None:
        """What every PCI function's directory has, and its links."""
        k = self.k
        dev_id = ids["device"]
        self._dir(d)
        self._file(f"{d}/vendor", f"0x{ids['vendor']:04x}")
        self._file(f"{d}/device", f"0x{dev_id:04x}")
        self._file(f"{d}/class", cls)
        self._file(f"{d}/subsystem_vendor", f"0x{ids['subsystem_vendor']:04x}")
        self._file(f"{d}/subsystem_device", f"0x{ids['subsystem_device']:04x}")
        self._file(f"{d}/revision", ids.get("revision", "0x00"))
        self._file(f"{d}/numa_node", str(numa))
        self._file(f"{d}/local_cpulist", "0-31,64-95" if numa == 0 else "32-63,96-127")
        self._file(f"{d}/enable", "1")
        c = int(cls, 16)
        self._file(f"{d}/modalias", f"pci:v0000{ids['vendor']:04X}d0000{dev_id:04X}sv0000{ids['subsystem_vendor']:04X}"
                                    f"sd0000{ids['subsystem_device']:04X}bc{c >> 16:02X}sc{c >> 8 & 0xff:02X}"
                                    f"i{c & 0xff:02X}")
        self._link(f"{d}/subsystem", _to_root(d) + "bus/pci")
        self._link(f"/bus/pci/devices/{bdf}", "../../.." + d)
        if k.iommu_active:
            self._link(f"{d}/iommu_group", f"{_to_root(d)}kernel/iommu_groups/{group}")
            self._link(f"/kernel/iommu_groups/{group}/devices/{bdf}", "../../../.." + d)

    def _bind_link(self, d: str, bdf: str, driver: str) -> None:
        self._link(f"{d}/driver", f"{_to_root(d)}bus/pci/drivers/{driver}")
        self._link(f"/bus/pci/drivers/{driver}/{bdf}", "../../../.." + d)

    def _slot(self, slot: Slot, groups: "_Groups") -> None:
        """The PCIe switch of a slot (bridge functions on pcieport) and its
        GPU; the root port is a path component only."""
        base = f"/devices/{slot.host_bridge}/{slot.root_port}"
        up = f"{base}/{slot.upstream}"
        for d in (up, f"{up}/{slot.gpu_port}", f"{up}/{slot.nic_port}"):
            bdf = os.path.basename(d)
            self._common(d, bdf, PCIE_SWITCH, PCIE_SWITCH["class"], slot.numa_node, groups.take(bdf))
            self._file(f"{d}/current_link_speed", "32.0 GT/s PCIe")
            self._file(f"{d}/current_link_width", "16")
            self._file(f"{d}/driver_override", "(null)", write=lambda data: None)
            self._bind_link(d, bdf, "pcieport")
            downstream = bdf != slot.upstream
            # read whole each time (the ACS word as the kernel has it now);
            # a write of the ACS control word at its offset is what setpci's
            # ECAP_ACS+0x6.w=<word> does, until the next boot
            self._add(f"{d}/config", File(
                lambda bdf=bdf, downstream=downstream: pci_config(
                    PCIE_SWITCH, 6 if downstream else 5,
                    acs=(SWITCH_ACS_CAP, self._acs_ctrl(bdf)) if downstream else None),
                None, 0o644, pwrite=lambda data, offset, bdf=bdf, downstream=downstream:
                self.k.write_config(bdf, offset, data, ACS_CTRL_AT if downstream else None)))
        if slot.gpu is not None:
            d = f"{up}/{slot.gpu_port}/{slot.gpu_bdf}"
            self._common(d, slot.gpu_bdf, GPU, GPU["class"], slot.numa_node, self._group_below(slot.gpu_port, groups,
                                                                                             slot.gpu_bdf))
            self._file(f"{d}/current_link_speed", "32.0 GT/s PCIe")
            self._file(f"{d}/current_link_width", "16")
            self._file(f"{d}/driver_override", "(null)", write=lambda data: None)

    def _acs_ctrl(self, bdf: str) -> int:
        return self.k.acs_ctrl(bdf, PCIE_SWITCH["vendor"], PCIE_SWITCH["device"], SWITCH_ACS_CAP)

    def _isolating(self, port: str) -> bool:
        """Whether a downstream port isolates what is below it, as
        pci_acs_path_enabled asks (SrcValid, ReqRedir, CmpltRedir and
        UpstreamFwd, of those it has, all on)."""
        want = SWITCH_ACS_CAP & ACS_ISOLATION
        return self._acs_ctrl(port) & want == want

    def _group_below(self, port: str, groups: "_Groups", bdf: str) -> int:
        """The IOMMU group of a function below a downstream port: the port's
        own when the port does not isolate it (pci_device_group walks up to
        the first port with ACS on the path), else a group of its own."""
        if not self._isolating(port):
            groups.by_bdf[bdf] = groups.of(port)
            return groups.of(port)
        return groups.take(bdf)

    def _pci_function(self, pf: PF, vf: VF | None, group: int) -> None:
        k = self.k
        base = self._devdir(pf)
        bdf = vf.bdf if vf else pf.bdf
        d = f"{base}/{bdf}"
        ids = pf.spec.ids
        dev_id = ids["vf_device"] if vf else ids["device"]
        cls = "0x020000" if pf.spec.link_type == "ETH" else "0x020700"
        self._common(d, bdf, {"vendor": VENDOR, "device": dev_id, "subsystem_vendor": VENDOR,
                              "subsystem_device": 0x0023}, cls, pf.spec.numa_node, group)
        self._file(f"{d}/current_link_speed", "32.0 GT/s PCIe" if pf.spec.model in ("cx7", "cx8") else "16.0 GT/s PCIe")
        self._file(f"{d}/current_link_width", "16")
        if vf is not None:
            self._file(f"{d}/driver_override", lambda: f"{vf.driver_override or '(null)'}\n".encode(),
                       write=lambda data: k.set_driver_override(vf, data), mode=0o644)
        else:
            self._file(f"{d}/driver_override", "(null)", write=lambda data: None)
        self._file(f"{d}/resource", self._resource(pf, vf))
        driver = vf.driver if vf else (VF_DRIVER if pf.bound else None)
        if driver:
            self._bind_link(d, bdf, driver)
        if vf is None:
            self._sriov_files(pf, d)
        else:
            self._link(f"{d}/physfn", f"../{pf.bdf}")
            self._file(f"{d}/sriov_vf_msix_count", "0", write=lambda data: None)
        now = k.clock()
        if driver == VF_DRIVER and (vf is None or vf.probed_at <= now):
            self._netdev(pf, vf, d)
            if "mlx5_ib" in k.modules:
                self._rdma(pf, vf, d)

    def _resource(self, pf: PF, vf: VF | None) -> bytes:
        """``resource`` as resource_show() prints it for an endpoint: 13 lines
        "start end flags" (BARs 0-5, the ROM, then the 6 IOV BARs).  BAR 0 is
        64-bit prefetchable; IOV BAR 7 holds every VF's BAR 0 and reads as zero
        when the PF has no SR-IOV capability or the kernel could not assign it
        (no MMIO left for it: BIOS SR-IOV off, or a short window without
        pci=realloc), the state in which sriov_numvfs answers ENOMEM."""
        k = self.k
        pref64 = 0x14220C
        bar0 = 0x200000000000 + (pf.spec.bus << 32)
        rows = [(0, 0, 0)] * 13
        if vf is None:
            rows[0] = (bar0, bar0 + PF_BAR_SIZE - 1, pref64)
            if k.sriov_visible(pf) and k.mmio_ok:
                iov = bar0 + PF_BAR_SIZE
                rows[7] = (iov, iov + VF_BAR_SIZE * k.totalvfs(pf) - 1, pref64)
        else:
            start = bar0 + PF_BAR_SIZE + VF_BAR_SIZE * vf.index
            rows[0] = (start, start + VF_BAR_SIZE - 1, pref64)
        return "".join(f"0x{a:016x} 0x{b:016x} 0x{c:016x}\n" for a, b, c in rows).encode()

    def _sriov_files(self, pf: PF, d: str) -> None:
        k = self.k
        if not k.sriov_visible(pf):
            return
        self._file(f"{d}/sriov_totalvfs", str(k.totalvfs(pf)))
        self._file(f"{d}/sriov_numvfs", lambda: f"{pf.numvfs}\n".encode(),
                   write=lambda data: k.write_numvfs(pf, data), mode=0o664)
        off, stride = k.sriov_offset_stride(pf)
        self._file(f"{d}/sriov_offset", str(off))
        self._file(f"{d}/sriov_stride", str(stride))
        self._file(f"{d}/sriov_vf_device", f"{pf.spec.ids['vf_device']:x}")
        self._file(f"{d}/sriov_drivers_autoprobe", lambda: f"{int(pf.autoprobe)}\n".encode(),
                   write=lambda data: k.set_autoprobe(pf, data), mode=0o664)
        self._file(f"{d}/sriov_vf_total_msix", str(k.totalvfs(pf) * 16))
        for vf in pf.vfs:
            self._link(f"{d}/virtfn{vf.index}", f"../{vf.bdf}")
        if k.ofed:
            def write_num(data, pf=pf):
                n = int(data.decode().strip() or "x") if data.decode().strip().isdigit() else -1
                if n < 0 or n > k.totalvfs(pf):
                    raise KernelError(errno.EINVAL)
                if pf.numvfs:
                    k.write_numvfs(pf, b"0")
                if n:
                    k.write_numvfs(pf, f"{n}".encode())
            self._file(f"{d}/mlx5_num_vfs", lambda: f"{pf.numvfs}\n".encode(), write=write_num, mode=0o600)
            for vf in pf.vfs:
                s = f"{d}/sriov/{vf.index}"
                self._file(f"{s}/mac", lambda vf=vf: f"{vf.mac}\n".encode())
                self._file(f"{s}/vlan", lambda vf=vf: f"{vf.vlan}:{vf.qos}\n".encode())
                self._file(f"{s}/trust", lambda vf=vf: f"{'ON' if vf.trust else 'OFF'}\n".encode())
                self._file(f"{s}/spoofcheck", lambda vf=vf: f"{'ON' if vf.spoofchk else 'OFF'}\n".encode())
                self._file(f"{s}/link_state", lambda vf=vf: f"{vf.link_state.capitalize()}\n".encode())

    def _netdev(self, pf: PF, vf: VF | None, d: str) -> None:
        k = self.k
        name = pf.spec.vf_netdev(vf.index) if vf else pf.netdev
        n = f"{d}/net/{name}"
        self._dir(n)
        mac = k.vf_netdev_mac(pf, vf) if vf else pf.spec.mac
        self._file(f"{n}/address", mac)
        self._file(f"{n}/broadcast", "ff:ff:ff:ff:ff:ff")
        self._file(f"{n}/addr_len", "6")

        def read_mtu(pf=pf, vf=vf):
            return f"{vf.mtu if vf else pf.mtu}\n".encode()

        def write_mtu(data, name=name):
            try:
                value = int(data.decode().strip())
            except ValueError:
                raise KernelError(errno.EINVAL) from None
            k.set_mtu(name, value)

        self._file(f"{n}/mtu", read_mtu, write=write_mtu)

        self._file(f"{n}/operstate", lambda pf=pf, vf=vf: f"{k.netdev_operstate(pf, vf)}\n".encode())
        # net-sysfs.c: carrier, speed and duplex of a netdev that is not
        # running are EINVAL; without its link mlx5e gives SPEED_UNKNOWN (-1
        # through fmt_dec) and DUPLEX_UNKNOWN
        speed = pf.spec.speed_mbps

        def running_only(read, pf=pf, vf=vf):
            def reader():
                if not k.running(pf, vf):
                    raise KernelError(errno.EINVAL)
                return read(pf, vf)
            return reader

        self._file(f"{n}/carrier", running_only(lambda pf, vf: b"1\n" if k.carrier(pf, vf) else b"0\n"))
        self._file(f"{n}/speed", running_only(lambda pf, vf: f"{speed if k.link_speed(pf, vf) else -1}\n".encode()))
        self._file(f"{n}/duplex", running_only(lambda pf, vf: b"full\n" if k.link_speed(pf, vf) else b"unknown\n"))
        self._file(f"{n}/type", "1" if pf.spec.link_type == "ETH" else "32")
        self._file(f"{n}/ifindex", lambda pf=pf, vf=vf: f"{k.ifindex(pf, vf)}\n".encode())
        self._file(f"{n}/dev_port", "0")
        if vf is None:
            self._file(f"{n}/phys_port_name", "p0")
        else:
            self._file(f"{n}/phys_port_name", _err(errno.EOPNOTSUPP))
        self._file(f"{n}/phys_switch_id", _err(errno.EOPNOTSUPP))
        self._link(f"{n}/device", f"../../../{vf.bdf if vf else pf.bdf}")
        self._link(f"{n}/subsystem", _to_root(n) + "class/net")
        self._link(f"/class/net/{name}", f"../../{n[len('/'):]}")
        if k.ofed and vf is None:
            self._ecn(pf, n)
            self._file(f"{n}/qos/trust", lambda pf=pf: f"{pf.trust}\n".encode(),
                       write=lambda data, pf=pf: self._write_trust(pf, data))
            self._file(f"{n}/qos/tc_num", "8")
        elif k.ofed and vf is not None:
            for proto in ("roce_rp", "roce_np"):
                for prio in range(8):
                    self._file(f"{n}/ecn/{proto}/enable/{prio}", lambda pf=pf, proto=proto, prio=prio:
                               f"{(pf.ecn_rp if proto == 'roce_rp' else pf.ecn_np)[prio]}\n".encode(), mode=0o444)

    def _write_trust(self, pf: PF, data: bytes) -> None:
        value = data.decode().strip()
        if value not in ("pcp", "dscp"):
            raise KernelError(errno.EINVAL)
        self.k.set_trust(pf, value)

    def _ecn(self, pf: PF, n: str) -> None:
        k = self.k
        for proto in ("roce_rp", "roce_np"):
            arr = pf.ecn_rp if proto == "roce_rp" else pf.ecn_np
            for prio in range(8):
                def rd(arr=arr, prio=prio):
                    return f"{arr[prio]}\n".encode()

                def wr(data, arr=arr, prio=prio):
                    v = data.decode().strip()
                    if v not in ("0", "1"):
                        raise KernelError(errno.EINVAL)
                    with k.lock:
                        arr[prio] = int(v)
                        k.generation += 1
                self._file(f"{n}/ecn/{proto}/enable/{prio}", rd, write=wr)
        for attr, top in (("cnp_dscp", 63), ("cnp_802p_prio", 7)):
            def wr_np(data, attr=attr, top=top):
                try:
                    v = int(data.decode().strip())
                except ValueError:
                    raise KernelError(errno.EINVAL) from None
                if not 0 <= v <= top:
                    raise KernelError(errno.EINVAL)
                with k.lock:
                    setattr(pf, attr, v)
                    k.generation += 1
            self._file(f"{n}/ecn/roce_np/{attr}", lambda pf=pf, attr=attr: f"{getattr(pf, attr)}\n".encode(),
                       write=wr_np)

    def _rdma(self, pf: PF, vf: VF | None, d: str) -> None:
        k = self.k
        name = k.rdma_name(pf, vf)
        r = f"{d}/infiniband/{name}"
        self._dir(r)
        self._file(f"{r}/node_type", "1: CA")
        self._file(f"{r}/node_guid", k.node_guid(pf, vf))
        self._file(f"{r}/sys_image_guid", k.node_guid(pf, None))
        fw = k.firmware[pf.bdf].get("running_fw_version", pf.spec.ids["fw"])
        self._file(f"{r}/fw_ver", fw)
        self._file(f"{r}/hca_type", pf.spec.ids["hca"])
        self._file(f"{r}/hw_rev", "0x0")
        self._file(f"{r}/board_id", pf.spec.ids["psid"])
        self._file(f"{r}/node_desc", f"{k.hw['name']} {name}", write=lambda data: None)
        self._link(f"{r}/device", f"../../../{vf.bdf if vf else pf.bdf}")
        self._link(f"/class/infiniband/{name}", f"../../{r[1:]}")
        p = f"{r}/ports/1"
        state, phys = k.port_state(pf, vf)
        self._file(f"{p}/state", state)
        self._file(f"{p}/phys_state", phys)
        eth = pf.spec.link_type == "ETH"
        self._file(f"{p}/link_layer", "Ethernet" if eth else "InfiniBand")
        gbps = pf.spec.speed_mbps // 1000
        self._file(f"{p}/rate", f"{gbps} Gb/sec (4X NDR)" if gbps >= 400 else f"{gbps} Gb/sec (4X HDR)")
        self._file(f"{p}/lid", "0x0" if eth else f"0x{k.hw['index']:x}")
        self._file(f"{p}/sm_lid", "0x0" if eth else "0x1")
        self._file(f"{p}/lid_mask_count", "0")
        self._file(f"{p}/cap_mask", "0x00010000" if eth else "0x2651e848")
        gids = k.gids(pf, vf)
        # a real RoCE port has 255 (gid_tbl_len); the twin writes the first 16,
        # and as many more as hold an entry (each a file built on every change)
        for i in range(max(GID_TABLE, len(gids))):
            if i < len(gids) and gids[i]:
                gid, gtype, ndev = gids[i]
                self._file(f"{p}/gids/{i}", gid)
                self._file(f"{p}/gid_attrs/types/{i}", gtype)
                self._file(f"{p}/gid_attrs/ndevs/{i}", ndev if ndev else _err(errno.EINVAL))
            else:
                self._file(f"{p}/gids/{i}", ZERO_GID)
                self._file(f"{p}/gid_attrs/types/{i}", _err(errno.EINVAL))
                self._file(f"{p}/gid_attrs/ndevs/{i}", _err(errno.EINVAL))
        self._file(f"{d}/infiniband_verbs/uverbs{vf.rdma_index if vf else pf.rdma_index}/ibdev", name)


# where pci_config puts the ACS control word (capability at 0x148, control at +6)
ACS_CTRL_AT = 0x14e


def pci_config(ids: dict, port_type: int, acs: tuple[int, int] | None = None) -> bytes:
    """A function's 4096-byte config space, as ``<bdf>/config`` reads for
    root: the type 1 (bridge) or type 0 header with the IDs and class, the
    PCI Express capability at 0x40 (``port_type``: 0 endpoint, 4 root port,
    5 switch upstream, 6 switch downstream port), and the extended
    capabilities from 0x100: AER, then ACS ``(cap, ctrl)`` where the function
    has it (include/uapi/linux/pci_regs.h)."""
    cfg = bytearray(4096)
    bridge = port_type in (4, 5, 6)
    cfg[0:2] = ids["vendor"].to_bytes(2, "little")
    cfg[2:4] = ids["device"].to_bytes(2, "little")
    cfg[4:6] = (0x0407 if bridge else 0x0406).to_bytes(2, "little")
    cfg[6:8] = (0x0010).to_bytes(2, "little")           # status: capabilities list
    cfg[8] = int(ids.get("revision", "0x00"), 16)
    cfg[9:12] = int(ids["class"], 16).to_bytes(3, "little") if "class" in ids else bytes(3)
    cfg[0x0e] = 0x01 if bridge else 0x00
    cfg[0x34] = 0x40
    cfg[0x40] = 0x10                                     # PCI_CAP_ID_EXP, no next
    cfg[0x42:0x44] = (0x0002 | (port_type << 4)).to_bytes(2, "little")
    aer_next = 0x148 if acs else 0
    cfg[0x100:0x104] = (0x0001 | (2 << 16) | (aer_next << 20)).to_bytes(4, "little")
    if acs:
        cfg[0x148:0x14c] = (0x000d | (1 << 16)).to_bytes(4, "little")
        cfg[0x14c:0x14e] = acs[0].to_bytes(2, "little")
        cfg[0x14e:0x150] = acs[1].to_bytes(2, "little")
    return bytes(cfg)


class _Groups:
    """IOMMU group numbers as the kernel hands them out: the functions found
    at boot first, in order, then each VF as SR-IOV adds it."""

    def __init__(self):
        self.by_bdf: dict[str, int] = {}
        self.next = 0

    def take(self, bdf: str) -> int:
        self.by_bdf[bdf] = self.next
        self.next += 1
        return self.by_bdf[bdf]

    def of(self, bdf: str) -> int:
        return self.by_bdf[bdf]

    def used(self) -> list[int]:
        return sorted(set(self.by_bdf.values()))
