"""Twin of the NVIDIA driver's ``nvidia-smi topo -m``: the matrix of the
node's GPUs and NICs in the words of its legend, from the twin's hardware
(simlab/node/hardware.py: one PCIe switch per slot, a GPU and at most one
NIC below each; slots on two sockets).

    nvidia-smi topo -m

The layout is a real driver's (tests/unit/fixtures/pcie_real: tab-separated
cells, `` X `` on the diagonal, ``NV18`` between H100 SXM GPUs, the NIC
columns as ``NIC<n>`` with the NIC Legend naming their RDMA devices, CPU
Affinity / NUMA Affinity / GPU NUMA ID on the GPU rows only, the legend
block); tests/unit/test_pcie.py holds it to them and to the sysfs path the
collection reads. Without the driver loaded it fails as nvidia-smi does.
Anything but ``topo -m`` answers as an unknown option."""

from __future__ import annotations

import sys

from simlab.node.hardware import gpu_slots, pcie_slots
from simlab.tools import agentclient

NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
             "latest NVIDIA driver is installed and running.")
# NVLink between the H100 SXM5 GPUs of an HGX board (18 links, as real
# 8x H100 SXM outputs show)
GPU_LINK = "NV18"
LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""
CPUS = {0: "0-31,64-95", 1: "32-63,96-127"}     # the twin's local_cpulist per NUMA node


def matrix(hw: dict, rdma: dict[int, str]) -> str:
    """``nvidia-smi topo -m`` of a node: ``rdma`` names NIC i's RDMA device."""
    slots = pcie_slots(hw)
    gpus = gpu_slots(hw)
    nics = sorted((s for s in slots if s.nic is not None), key=lambda s: s.nic)
    names = [f"GPU{i}" for i in range(len(gpus))] + [f"NIC{i}" for i in range(len(nics))]
    devices = [("gpu", s) for s in gpus] + [("nic", s) for s in nics]

    def cell(a, b) -> str:
        (ka, sa), (kb, sb) = a, b
        if a is b:
            return " X "
        if ka == kb == "gpu":
            return GPU_LINK
        if sa.index == sb.index:
            return "PIX"
        return "NODE" if sa.numa_node == sb.numa_node else "SYS"

    lines = ["\t" + "\t".join(names + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for name, dev in zip(names, devices):
        cells = [cell(dev, other) for other in devices]
        if dev[0] == "gpu":
            cells += [CPUS.get(dev[1].numa_node, "0-127"), str(dev[1].numa_node), "N/A"]
        else:
            cells += ["", ""]
        lines.append(name + "\t" + "\t".join(cells))
    out = "\n".join(lines) + "\n" + LEGEND
    if nics:
        out += "\nNIC Legend:\n\n" + "".join(f"  NIC{i}: {rdma.get(s.nic, f'mlx5_{i}')}\n"
                                            for i, s in enumerate(nics))
    return out


def main(argv: list[str]) -> int:
    if argv[:2] != ["topo", "-m"]:
        print("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.", file=sys.stderr)
        return 2
    s = agentclient.summary("nvidia-smi")
    if "nvidia" not in s.get("modules", []) or not int(s["hw"].get("gpus", 0) or 0):
        print(NO_DRIVER)
        return 9
    sys.stdout.write(matrix(s["hw"], {p["index"]: p["rdma"] for p in s["pfs"] if p.get("rdma")}))
    return 0
