"""What a twin node is made of: its NICs, their PCI placement and names.

A node's hardware is described by a small JSON document (written by
``simlab up`` into the lab directory and mounted into the node), so the same
description drives the FUSE sysfs inside the node, the fabric model on the
host and the generated inventory.  Stdlib only: this runs with Debian's python3
inside the node.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

# PCI ids (host-interfaces.md section 0 and 2.1): PF device -> (VF device,
# mlxconfig "Device type", hca_type / mst name, firmware train, part id).
MODELS = {
    "cx5ex": {"device": 0x1019, "vf_device": 0x101a, "device_type": "ConnectX5",
              "hca": "MT4121", "fw": "16.35.2000", "part": "MCX516A-CDAT", "psid": "MT_0000000012"},
    "cx6dx": {"device": 0x101d, "vf_device": 0x101e, "device_type": "ConnectX6DX",
              "hca": "MT4125", "fw": "22.39.1002", "part": "MCX623106AN-CDAT", "psid": "MT_0000000359"},
    "cx7": {"device": 0x1021, "vf_device": 0x101e, "device_type": "ConnectX7",
            "hca": "MT4129", "fw": "28.39.1002", "part": "MCX75310AAS-NEAT", "psid": "MT_0000000838"},
    "cx8": {"device": 0x1023, "vf_device": 0x101e, "device_type": "ConnectX8",
            "hca": "MT4131", "fw": "40.44.1036", "part": "C8180", "psid": "MT_0000001080"},
}
VENDOR = 0x15b3
# Buses a 2-socket GPU server typically puts its NICs on (one per PCIe switch).
NIC_BUSES = [0x3b, 0x86, 0x5e, 0xd8, 0x18, 0xaf, 0x2b, 0x9a]
DEFAULT_TOTALVFS = 16
# The GPUs of an HGX H100 8-GPU board (pci.ids: 10de:2330 "GH100 [H100 SXM5
# 80GB]", class 0x0302 3D controller) and the PCIe switches that carry them
# (pci.ids: 1000:c030 "PEX890xx PCIe Gen 5 Switch", subsystem 1000:0088
# PEX89088): on an XE9680 each GPU sits below one switch with one NIC.
GPU = {"vendor": 0x10de, "device": 0x2330, "class": "0x030200", "subsystem_vendor": 0x10de,
       "subsystem_device": 0x16c1, "revision": "0xa1"}
PCIE_SWITCH = {"vendor": 0x1000, "device": 0xc030, "class": "0x060400", "subsystem_vendor": 0x1000,
               "subsystem_device": 0x0088, "revision": "0xb0"}
# The ACS capability of the switch's downstream ports (PCIe base spec 6.12;
# the bits of include/uapi/linux/pci_regs.h): every control a PEX switch port
# offers, as lspci prints a PLX downstream port's ACSCap (SrcValid+ TransBlk+
# ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+; the capture is
# in tests/unit/fixtures/pcie_real). The upstream port has none.
SWITCH_ACS_CAP = 0x7f


@dataclass
class NicSpec:
    index: int
    model: str
    bus: int
    numa_node: int
    link_type: str          # "ETH" or "IB"
    speed_mbps: int
    totalvfs: int
    mac: str
    ipv4: str | None

    @property
    def bdf(self) -> str:
        return f"0000:{self.bus:02x}:00.0"

    @property
    def ids(self) -> dict:
        return MODELS[self.model]

    @property
    def netdev(self) -> str:
        # systemd's predictable name for a PCI netdev with phys_port_name p0.
        prefix = "ib" if self.link_type == "IB" else "en"
        return f"{prefix}p{self.bus}s0f0np0" if self.link_type == "ETH" else f"ibp{self.bus}s0f0"

    def vf_netdev(self, n: int) -> str:
        prefix = "ib" if self.link_type == "IB" else "en"
        return f"{prefix}p{self.bus}s0f0v{n}"


@dataclass
class Slot:
    """One PCIe switch below a root port, as an XE9680 has eight: the root
    port on bus B-4, the switch's upstream port on B-3, its two downstream
    ports on B-2 (function 00.0 leads to the GPU on bus B-1, 01.0 to the NIC
    on bus B).  ``nic`` / ``gpu`` are indexes, or None for an empty port."""
    index: int
    bus: int
    numa_node: int
    nic: int | None
    gpu: int | None

    @property
    def host_bridge(self) -> str:
        return f"pci0000:{self.bus - 4:02x}"

    @property
    def root_port(self) -> str:
        return f"0000:{self.bus - 4:02x}:01.0"

    @property
    def upstream(self) -> str:
        return f"0000:{self.bus - 3:02x}:00.0"

    @property
    def gpu_port(self) -> str:
        return f"0000:{self.bus - 2:02x}:00.0"

    @property
    def nic_port(self) -> str:
        return f"0000:{self.bus - 2:02x}:01.0"

    @property
    def gpu_bdf(self) -> str:
        return f"0000:{self.bus - 1:02x}:00.0"


def pcie_slots(hw: dict) -> list[Slot]:
    """The node's PCIe switches: slot i holds NIC i (at its own bus) and GPU
    i, for as many slots as the node has NICs or GPUs; slots without a NIC
    take the next bus of NIC_BUSES that no NIC uses.  A GPU is on its NIC's
    NUMA node; a GPU without a NIC alternates sockets as NIC_BUSES do."""
    nics = nic_specs(hw)
    gpus = int(hw.get("gpus", 0) or 0)
    numa_nodes = max(1, int(hw.get("numa_nodes", 1) or 1))
    count = max(len(nics), gpus)
    spare = [b for b in NIC_BUSES if b not in {n.bus for n in nics}]
    if count > len(nics) + len(spare):
        raise ValueError(f"{hw.get('name')}: {gpus} GPUs need more PCIe switches than the twin has buses for "
                         f"({len(nics) + len(spare)})")
    slots = []
    for i in range(count):
        if i < len(nics):
            bus, numa = nics[i].bus, nics[i].numa_node
        else:
            bus, numa = spare.pop(0), i % numa_nodes
        slots.append(Slot(index=i, bus=bus, numa_node=numa, nic=i if i < len(nics) else None,
                          gpu=i if i < gpus else None))
    return slots


def gpu_slots(hw: dict) -> list[Slot]:
    """The slots that hold a GPU, in the order nvidia-smi and CUDA (with
    CUDA_DEVICE_ORDER=PCI_BUS_ID) number the GPUs: by PCI address; GPU k is
    the k-th."""
    return sorted((s for s in pcie_slots(hw) if s.gpu is not None), key=lambda s: s.gpu_bdf)


def gpu_of_nic(hw: dict) -> dict[int, int]:
    """``{NIC index: GPU index}``: the GPU below each NIC's PCIe switch, by
    its index in gpu_slots; a NIC without a GPU in its slot is left out."""
    return {s.nic: k for k, s in enumerate(gpu_slots(hw)) if s.nic is not None}


def default_spec(name: str, index: int, nics: int = 2, model: str = "cx7", totalvfs: int = DEFAULT_TOTALVFS,
                 link_type: str = "ETH", driver: str = "inbox", speed_gbps: int = 400, gpus: int = 8,
                 numa_nodes: int = 2) -> dict:
    """The hardware document of one node (index counts from 1 across the lab)."""
    if model not in MODELS:
        raise ValueError(f"unknown NIC model {model!r}; known: {', '.join(sorted(MODELS))}")
    if not 1 <= nics <= len(NIC_BUSES):
        raise ValueError(f"nics must be 1..{len(NIC_BUSES)}, got {nics}")
    nic_list = []
    for i in range(nics):
        nic_list.append({
            "model": model,
            "bus": NIC_BUSES[i],
            "numa_node": (i * numa_nodes) // nics,
            "link_type": link_type,
            "speed_mbps": speed_gbps * 1000,
            "totalvfs": totalvfs,
            # Locally administered, unique per node and NIC.
            "mac": f"0c:42:a1:{index >> 8 & 0xff:02x}:{index & 0xff:02x}:{i * 16:02x}",
            # The RoCE address the OS install gave the PF (rail i, host index).
            "ipv4": f"172.30.{i}.{index}" if link_type == "ETH" else None,
        })
    return {
        "name": name,
        "index": index,
        **stack_fields(driver),         # driver: inbox (upstream mlx5) or ofed (MLNX_OFED / DOCA-OFED)
        "gpus": gpus,
        "numa_nodes": numa_nodes,
        "cpu_vendor": "intel",
        "nics": nic_list,
    }


# The NVIDIA driver of a node with GPUs: its version, and whether its kernel
# modules are the open ones (MODULE_LICENSE "Dual MIT/GPL": DMA-BUF) or the
# closed ones (MODULE_LICENSE "NVIDIA", which the kernel taints with P)
GPU_DRIVER = {"version": "550.127.05", "open": True}


def gpu_driver(hw: dict) -> dict | None:
    """The node's NVIDIA driver (None without GPUs); a hardware document
    written before the field has the default one."""
    if not int(hw.get("gpus", 0) or 0):
        return None
    return dict(GPU_DRIVER, **(hw.get("gpu_driver") or {}))


# What a DOCA-OFED node's modules say of themselves (modinfo, sysfs module/),
# after real MLNX_OFED 24.10 modinfo output (tests/unit/fixtures/driver_stack_real)
OFED_MODULE = {"version": "24.10-2.1.8", "basedon": "Korg 6.8-rc4", "srcversion": "78352976D87E8F24553D352",
               "ofed_info": "OFED-internal-24.10-2.1.8.0"}
# the modules DOCA-OFED ships (the rest are the kernel's)
OFED_MODULES = ("mlx5_core", "mlx5_ib", "ib_core", "ib_uverbs", "rdma_ucm", "rdma_cm", "ib_cm", "mlx_compat")
# mlx-tools are installed on OFED nodes (DOCA-OFED ships them) and on inbox
# nodes unless the rack spec says the node runs upstream tools only
STACKS = ("inbox", "ofed", "upstream")


def stack_fields(stack: str) -> dict:
    """The hardware fields of a node's driver stack: ``ofed`` (DOCA-OFED
    modules and mlnx-tools), ``inbox`` (inbox mlx5 with mlnx-tools installed)
    or ``upstream`` (inbox mlx5, upstream rdma-core and iproute2 only)."""
    if stack not in STACKS:
        raise ValueError(f"unknown driver stack {stack!r}; known: {', '.join(STACKS)}")
    driver = "ofed" if stack == "ofed" else "inbox"
    return {"driver": driver, "rdma_naming": "kernel" if driver == "ofed" else "pci",
            "mlnx_tools": stack != "upstream"}


def nic_specs(hw: dict) -> list[NicSpec]:
    return [NicSpec(index=i, model=n["model"], bus=n["bus"], numa_node=n["numa_node"],
                    link_type=n["link_type"], speed_mbps=n["speed_mbps"], totalvfs=n["totalvfs"],
                    mac=n["mac"], ipv4=n.get("ipv4"))
            for i, n in enumerate(hw["nics"])]


def factory_firmware(hw: dict) -> dict:
    """mlxconfig parameters per NIC as the card ships: SR-IOV off."""
    fw = {}
    for nic in nic_specs(hw):
        params = {
            "SRIOV_EN": 0,
            "NUM_OF_VFS": 0,
            "LINK_TYPE_P1": 2 if nic.link_type == "ETH" else 1,
            "ROCE_CC_PRIO_MASK_P1": 255,
            "CNP_DSCP_P1": 48,
            "CNP_802P_PRIO_P1": 6,
            "ATS_ENABLED": 0,
        }
        fw[nic.bdf] = {"default": dict(params), "current": dict(params), "next": dict(params),
                       "fw_version": nic.ids["fw"], "running_fw_version": nic.ids["fw"]}
    return fw


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def dump(hw: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(hw, indent=2, sort_keys=True) + "\n")


def clone(hw: dict) -> dict:
    return copy.deepcopy(hw)
