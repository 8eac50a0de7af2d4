"""Twins of mlnx-tools' ``cma_roce_mode`` and ``cma_roce_tos``.

``cma_roce_mode [-d dev] [-p port] [-m 1|2]`` prints ``RoCE v2`` or
``IB/RoCE v1``; ``cma_roce_tos [-d dev] [-p port] [-t tos]`` prints the ToS.
Defaults are ``-d mlx5_0 -p 1``, as in the scripts.  The scripts write the
rdma_cm configfs (``/sys/kernel/config/rdma_cm/<dev>/ports/<port>/``); here
the values live in the node agent's kernel model (``set_roce``).  Their
checks and messages are the scripts': root only, rdma_cm loaded, the device
must exist (configfs ``mkdir`` fails with ENODEV), the port must exist.
"""

from __future__ import annotations

import getopt
import os
import sys

from simlab.tools.agentclient import call, summary
from simlab.tools.twin import rdma_devices

USAGE = {
    "cma_roce_mode": """Set/Show RoCE default mode of RDMA_CM applications

Usage:
\tcma_roce_mode OPTIONS
Options:
\t-h              show this help
\t-d <dev>        use IB device <dev> (default mlx5_0)
\t-p <port>       use port <port> of IB device (default 1)
\t-m <roce_mode>  set RoCE mode of RDMA_CM applications (1 or 2)""",
    "cma_roce_tos": """Set/Show RoCE default ToS of RDMA_CM applications

Usage:
\tcma_roce_tos OPTIONS
Options:
\t-h              show this help
\t-d <dev>        use IB device <dev> (default mlx5_0)
\t-p <port>       use port <port> of IB device (default 1)
\t-t <tos>        set ToS of RoCE RDMA_CM applications (0)""",
}


def main(argv: list[str], prog: str = "cma_roce_mode") -> int:
    tos_tool = prog == "cma_roce_tos"
    device, port, value = "mlx5_0", "1", None
    try:
        opts, _ = getopt.getopt(argv, "d:t:hp:" if tos_tool else "d:m:hp:")
    except getopt.GetoptError as exc:
        # bash getopts reports and goes on
        print(f"{prog}: {exc.msg}", file=sys.stderr)
        opts = []
    for flag, arg in opts:
        if flag == "-h":
            print(USAGE[prog])
            return 0
        if flag == "-d":
            device = arg
        elif flag == "-p":
            port = arg
        else:
            value = arg
    if os.geteuid() != 0:
        print("You must be root to run this")
        return 1
    s = summary(prog)
    if "rdma_cm" not in s.get("modules", []):
        print("Module rdma_cm is not loaded or does not support configfs")
        return 1
    devs = {name: (pf, vf) for name, pf, vf in rdma_devices(s)}
    if device not in devs:
        print(f"mkdir: cannot create directory '{device}': No such device", file=sys.stderr)
        print(f"Failed to create configuration for {device}")
        return 1
    if port != "1":
        print(f"Device {device} port {port} does not exist")
        return 1
    pf, vf = devs[device]
    req = {"op": "set_roce", "rdma": device}
    if tos_tool:
        if value is not None and value.lstrip("-").isdigit() and int(value) >= 0:
            if int(value) > 255:
                print(f"/usr/sbin/{prog}: line 97: echo: write error: Invalid argument", file=sys.stderr)
            else:
                req["tos"] = int(value)
    elif value in ("1", "2"):
        req["mode"] = "IB/RoCE v1" if value == "1" else "RoCE v2"
    if len(req) > 2:
        reply = call(req, prog)
        if not reply.get("ok"):
            print(f"/usr/sbin/{prog}: line 97: echo: write error: {reply.get('error')}", file=sys.stderr)
        s = summary(prog)
        pf = next(p for p in s["pfs"] if p["bdf"] == pf["bdf"])
    if vf is not None:
        # a VF's rdma_cm defaults are its own; the model keeps the PF's
        print(0 if tos_tool else "RoCE v2")
        return 0
    print(pf["roce_tos"] if tos_tool else pf["roce_mode"])
    return 0
