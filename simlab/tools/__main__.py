"""Entry point of the tool twins: ``python3 -m simlab.tools <tool> [args]``
(the wrappers call ``main()`` through ``python3 -S -c``, simlab.node.agent.ENTRY).

The node agent installs a wrapper per tool in /usr/local/sbin, ahead of the
real binaries in PATH; the wrappers land here."""

import importlib
import sys

MODULES = {
    "ip": "simlab.tools.ip",
    "update-grub": "simlab.tools.grub",
    "mlxconfig": "simlab.tools.mlxconfig",
    "mstconfig": "simlab.tools.mlxconfig",
    "mstflint": "simlab.tools.mstflint",
    "flint": "simlab.tools.mstflint",
    "mstfwreset": "simlab.tools.mstfwreset",
    "mlxfwreset": "simlab.tools.mstfwreset",
    "mlnx_qos": "simlab.tools.mlnx_qos",
    "cma_roce_mode": "simlab.tools.cma_roce",
    "cma_roce_tos": "simlab.tools.cma_roce",
    "ibv_devinfo": "simlab.tools.rdma",
    "show_gids": "simlab.tools.rdma",
    "rdma": "simlab.tools.rdma",
    "modprobe": "simlab.tools.modprobe",
    "modinfo": "simlab.tools.modinfo",
    "ofed_info": "simlab.tools.modinfo",
    "dcb": "simlab.tools.dcb",
    "sysctl": "simlab.tools.sysctl",
    "grubby": "simlab.tools.grubby",
    "nmcli": "simlab.tools.nmcli",
    "ib_write_bw": "simlab.tools.perftest",
    "mpirun": "simlab.tools.nccl",
    "all_reduce_perf": "simlab.tools.nccl",
    "lldpcli": "simlab.tools.lldpcli",
    "lldpctl": "simlab.tools.lldpcli",
    "nvidia-smi": "simlab.tools.nvidia_smi",
}


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: python3 -m simlab.tools <tool> [args...]", file=sys.stderr)
        return 2
    tool, args = sys.argv[1], sys.argv[2:]
    modname = MODULES.get(tool)
    if modname is None:
        print(f"{tool}: not available in this twin node", file=sys.stderr)
        return 127
    mod = importlib.import_module(modname)
    return int(mod.main(args, prog=tool) if "prog" in mod.main.__code__.co_varnames else mod.main(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
