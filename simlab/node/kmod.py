"""The kernel modules a twin node has, as kmod sees them on disk: one table
that the ``modprobe`` and ``modinfo`` twins and the kernel model's boot-time
module set all read.

``MODULES_DEP`` is modules.dep of Debian 12's 6.1 kernel for the modules the
twin models (recorded on the VM image's own kmod 30, kernel 6.1.0-50-amd64:
tests/unit/fixtures/kmod_modules.json and kmod_vfio_pci.json): each module's
file under ``/lib/modules/<release>/`` and every module it needs, in the
order modules.dep lists them (depmod writes them so that read backwards they
load in order, which is what ``modprobe -D`` prints).  The NVIDIA driver's
modules are not in Debian's kernel: their entries are where its DKMS
package installs them (``updates/dkms/``).

The release is the one the node's ``uname -r`` and /proc/sys/kernel/osrelease
give (the host kernel's, in a container): kmod looks under
``/lib/modules/$(uname -r)``, and the doctor compares a module's vermagic
with the running release.

Stdlib only: it runs inside the node with Debian's python3.
"""

from __future__ import annotations

import os

from .hardware import OFED_MODULES

MODULES_DEP = {
    # the ConnectX driver and what it needs
    "psample": ("kernel/net/psample/psample.ko", []),
    "mlxfw": ("kernel/drivers/net/ethernet/mellanox/mlxfw/mlxfw.ko", []),
    "pci_hyperv_intf": ("kernel/drivers/pci/controller/pci-hyperv-intf.ko", []),
    "mlx5_core": ("kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko",
                  ["mlxfw", "psample", "pci_hyperv_intf"]),
    # RDMA: verbs, the connection managers, mlx5's IB driver
    "configfs": ("kernel/fs/configfs/configfs.ko", []),
    "ib_core": ("kernel/drivers/infiniband/core/ib_core.ko", []),
    "ib_uverbs": ("kernel/drivers/infiniband/core/ib_uverbs.ko", ["ib_core"]),
    "ib_cm": ("kernel/drivers/infiniband/core/ib_cm.ko", ["ib_core"]),
    "iw_cm": ("kernel/drivers/infiniband/core/iw_cm.ko", ["ib_core"]),
    "rdma_cm": ("kernel/drivers/infiniband/core/rdma_cm.ko", ["iw_cm", "ib_cm", "ib_core", "configfs"]),
    "rdma_ucm": ("kernel/drivers/infiniband/core/rdma_ucm.ko",
                 ["ib_uverbs", "rdma_cm", "iw_cm", "ib_cm", "ib_core", "configfs"]),
    "mlx5_ib": ("kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko",
                ["mlx5_core", "mlxfw", "psample", "ib_uverbs", "ib_core", "pci_hyperv_intf"]),
    # what containerd and Kubernetes networking need (layer 10)
    "overlay": ("kernel/fs/overlayfs/overlay.ko", []),
    "llc": ("kernel/net/llc/llc.ko", []),
    "stp": ("kernel/net/802/stp.ko", ["llc"]),
    "bridge": ("kernel/net/bridge/bridge.ko", ["stp", "llc"]),
    "br_netfilter": ("kernel/net/bridge/br_netfilter.ko", ["bridge", "stp", "llc"]),
    # VFIO, for VFs handed to VMs (layer 6)
    "irqbypass": ("kernel/virt/lib/irqbypass.ko", []),
    "vfio": ("kernel/drivers/vfio/vfio.ko", []),
    "vfio_virqfd": ("kernel/drivers/vfio/vfio_virqfd.ko", []),
    "vfio_iommu_type1": ("kernel/drivers/vfio/vfio_iommu_type1.ko", ["vfio"]),
    "vfio_pci_core": ("kernel/drivers/vfio/pci/vfio-pci-core.ko", ["vfio_virqfd", "vfio", "irqbypass"]),
    "vfio_pci": ("kernel/drivers/vfio/pci/vfio-pci.ko", ["vfio_pci_core", "vfio_virqfd", "vfio", "irqbypass"]),
    # the NVIDIA driver (DKMS; a GPU node loads nvidia at boot) and its
    # GPUDirect RDMA module, which needs the peer-memory API of DOCA-OFED's ib_core
    "nvidia": ("updates/dkms/nvidia.ko", []),
    "nvidia_peermem": ("updates/dkms/nvidia-peermem.ko", ["nvidia", "ib_core"]),
}
# modinfo -F softdep: vfio loads an IOMMU backend after itself (spapr_tce is
# not built for x86: kmod skips a softdep it cannot find)
SOFTDEP_POST = {"vfio": ["vfio_iommu_type1", "vfio_iommu_spapr_tce"]}
# what a node has loaded once it has booted: mlx5_core for its PFs, and
# rdma-core's udev rules load mlx5_ib and the RDMA-CM user access module
BOOT_MODULES = ("mlx5_ib", "rdma_ucm")


def norm(name: str) -> str:
    """A module name as kmod compares it: ``-`` and ``_`` are the same."""
    return name.replace("-", "_")


def release() -> str:
    """The running kernel's release, as ``uname -r`` gives it on the node."""
    return os.uname().release


def path(module: str, ofed: bool = False) -> str:
    """The module's file, as modinfo's ``filename:`` and modprobe's insmod
    line give it; on a DOCA-OFED node (``ofed``) the modules it ships are
    DKMS's, under ``updates/dkms/``."""
    if ofed and module in OFED_MODULES:
        return f"/lib/modules/{release()}/updates/dkms/{module}.ko"
    return f"/lib/modules/{release()}/{MODULES_DEP[module][0]}"


def chain(module: str) -> list[str]:
    """The modules ``modprobe --show-depends`` prints for ``module``, one line
    each, as libkmod's __kmod_module_get_probe_list() builds them: for a
    module not yet visited, its modules.dep list read backwards, then the
    module itself, each of these followed by the chains of its post softdeps
    (__kmod_module_fill_softdep()).  A dependency comes again each time it
    is met; a softdep's chain only once, and not for the module asked for."""
    out: list[str] = []
    visited: set[str] = set()

    def fill(m: str) -> None:
        out.append(m)
        for soft in SOFTDEP_POST.get(m, []):
            if soft in MODULES_DEP:
                probe(soft)

    def probe(m: str) -> None:
        if m in visited:
            return
        visited.add(m)
        for dep in reversed(MODULES_DEP[m][1]):
            fill(dep)
        fill(m)

    probe(module)
    return out


def load_order(module: str, out: list[str] | None = None) -> list[str]:
    """``out`` extended by what loading ``module`` loads, in kmod's order
    (its chain, each module once)."""
    out = [] if out is None else out
    for m in chain(module):
        if m not in out:
            out.append(m)
    return out


# modules a booted node keeps in use without another module: systemd mounts
# configfs at /sys/kernel/config (sys-kernel-config.mount), which holds it
PINNED = {"configfs": "the configfs mount at /sys/kernel/config"}


def holders(module: str, loaded) -> list[str]:
    """What keeps ``module`` in use: the loaded modules that need it
    directly or through another, or the mount that pins it."""
    pinned = [PINNED[module]] if module in PINNED and module in loaded else []
    return pinned + [m for m in loaded if module in MODULES_DEP.get(m, ("", []))[1]]
