"""``mpirun`` (Open MPI) and nccl-tests ``all_reduce_perf`` twins.

``mpirun -np N -H node01:8,node02:8 [-x VAR[=value] ...] [--allow-run-as-root]
[--bind-to X] [--map-by X] [--mca K V] [-N n] all_reduce_perf -b 8 -e 8G -f 2
-g 1 [-c 0] [-n iters] [-w warmup]`` places the ranks on the hosts' slots in
order and prints the output of the whole job: nccl-tests header, one
``# Using devices`` line per rank, the NCCL INFO transport lines when
``NCCL_DEBUG=INFO``, a row per message size and the footer.  The bus
bandwidth comes from the fabric model (``simlab.fabric.nccl_busbw``).  NCCL
settings are the launcher's environment plus the ``-x`` variables (the twin
forwards both).  ``all_reduce_perf`` alone runs the ``-g`` GPUs of this node
in one process: NVLink-bound, a fixed bus bandwidth per GPU family.

Honoured: ``NCCL_IB_HCA``, ``NCCL_IB_DISABLE``, ``NCCL_IB_GID_INDEX``,
``NCCL_IB_TC``, ``NCCL_DEBUG``, ``NCCL_SOCKET_IFNAME``, ``NCCL_TESTS_MIN_BW``.

As NCCL, each node's ranks print the network they picked with their own
``<host>:<pid>:<tid>`` prefix: ``NET/IB : Using [0]...`` where RDMA works,
``NET/IB : No device found.`` and ``NET/Socket : Using`` where it does not.
A job with nodes on both networks fails while connecting (the fabric
model's ``mixed``): the nodes that accept a connection from the other
network print ``NCCL WARN socketFinalizeAccept: wrong type`` and nccl-tests'
``Test NCCL failure ... 'internal error ...'``; no row is printed.
"""

from __future__ import annotations

import hashlib
import os
import sys

from simlab.fabric.model import DEFAULT_GPU, NCCL_SOCKET_TYPE, FabricError, Rack, nccl_busbw
from simlab.tools import formats
from simlab.tools.perftest import RACK, own_node

LATENCY_US = {"IB": 22.0, "Socket": 60.0, "NVLink": 12.0}
DASHES = "-" * 74
ROOT_MSG = """--------------------------------------------------------------------------
mpirun has detected an attempt to run as root.

Running as root is *strongly* discouraged as any mistake (e.g., in
defining TMPDIR) or bug can result in catastrophic damage to the OS
file system, leaving your system in an unusable state.

We strongly suggest that you run mpirun as a non-root user.

You can override this protection by adding the --allow-run-as-root option
to the cmd line or by setting two environment variables in the following way:
the variable OMPI_ALLOW_RUN_AS_ROOT=1 to indicate the desire to override this
protection, and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 to confirm the choice and
add one more level of protection.

--------------------------------------------------------------------------"""


def parse_size(text: str) -> int:
    """nccl-tests ``parsesize``: K, M, G suffixes are powers of 1024."""
    t = text.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:].upper(), 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def parse_perf_args(args: list[str]) -> dict:
    o = {"b": 32 * 1024 * 1024, "e": 32 * 1024 * 1024, "f": 2, "i": 0, "g": 1, "t": 1, "c": 1, "n": 20,
         "w": 1, "d": "float", "o": "sum", "m": 1, "G": 0, "z": 0}
    longs = {"--minbytes": "b", "--maxbytes": "e", "--stepfactor": "f", "--stepbytes": "i", "--ngpus": "g",
             "--nthreads": "t", "--check": "c", "--iters": "n", "--warmup_iters": "w", "--datatype": "d",
             "--op": "o", "--agg_iters": "m", "--cudagraph": "G", "--blocking": "z"}
    i = 0
    while i < len(args):
        a = args[i]
        key, val = None, None
        if a.startswith("--"):
            name, _, val = a.partition("=")
            key = longs.get(name)
            if key is None:
                raise ValueError(f"invalid option '{a}'")
            val = val or None
        elif a.startswith("-") and len(a) >= 2:
            key, val = a[1], a[2:] or None
            if key not in o:
                raise ValueError(f"invalid option -- '{key}'")
        else:
            raise ValueError(f"unexpected argument '{a}'")
        if val is None:
            i += 1
            if i >= len(args):
                raise ValueError(f"option requires an argument -- '{key}'")
            val = args[i]
        if key in ("b", "e", "i"):
            o[key] = parse_size(val)
        elif key in ("d", "o"):
            o[key] = val
        else:
            o[key] = int(val)
        i += 1
    return o


def sizes(o: dict) -> list[int]:
    out, s = [], o["b"]
    while s <= o["e"]:
        out.append(s)
        nxt = s + o["i"] if o["i"] else s * max(o["f"], 2)
        if nxt <= s:
            break
        s = nxt
    return out or [o["b"]]


def _pid(host: str, rank: int) -> int:
    return 10000 + int(hashlib.sha256(host.encode()).hexdigest()[:3], 16) + rank


def _rows(o, busbw, nranks, transport):
    wrong = None if o["c"] == 0 else 0
    if nranks >= 2 and busbw > 0:
        return formats.nccl_rows(sizes(o), busbw, nranks, dtype=o["d"], redop=o["o"],
                                 latency_us=LATENCY_US[transport], wrong=wrong)
    # one rank: nothing crosses a bus, busbw is 0 by definition (factor 2(n-1)/n)
    rows = []
    for s in sizes(o):
        t = 2.0 + s / 1.5e6
        half = {"time_us": t, "algbw": s / (t * 1e3), "busbw": 0.0, "wrong": wrong}
        rows.append({"size": s, "count": s // 4, "type": o["d"], "redop": o["o"], "root": -1,
                     "oop": dict(half), "ip": dict(half)})
    return rows


def _oob(summary: dict, env: dict) -> str:
    pfs = summary.get("pfs", []) if summary else []
    want = env.get("NCCL_SOCKET_IFNAME", "")
    for pf in pfs:
        if not want or pf["netdev"].startswith(want.lstrip("=^")) != want.startswith("^"):
            return "%s:%s<0>" % (pf["netdev"], pf.get("ipv4") or "0.0.0.0")
    return "eth0:10.0.0.1<0>"


def gpudirect(summary: dict | None) -> bool:
    """Whether NCCL on the node gets GPUDirect RDMA (its channel lines say
    /GDRDMA), as NCCL's IB transport decides (src/transport/net_ib/gdr.cc):
    DMA-BUF with the open GPU kernel modules (the twin's kernel is the host's,
    past 5.12), or nvidia_peermem loaded."""
    drv = (summary or {}).get("gpu_driver") or {}
    return bool(drv.get("open")) or "nvidia_peermem" in ((summary or {}).get("modules") or [])


def run_job(rack: Rack, hosts: list[tuple[str, int]], o: dict, env: dict, out=sys.stdout) -> int:
    """``hosts``: ``[(node, ranks on it)]`` in rank order.  Prints the job's
    output; returns its exit status."""
    nodes = [h for h, n in hosts if n > 0]
    ppn = max(n for _, n in hosts)
    nranks = sum(n for _, n in hosts) * o["g"] * o["t"]
    gpu = DEFAULT_GPU
    res = nccl_busbw(rack, nodes, ppn * o["g"] * o["t"], env, gpu)
    devices = []
    rank = 0
    for host, n in hosts:
        for local in range(n * o["g"] * o["t"]):
            devices.append({"rank": rank, "group": 0, "pid": _pid(host, local // o["g"]), "host": host,
                            "device": local % 8, "bus_id": "0000:%02x:00" % (0x18 + (local % 8) * 0x10),
                            "gpu": gpu})
            rank += 1
    lines = []
    debug = str(env.get("NCCL_DEBUG", "")).upper() in ("INFO", "TRACE")
    if debug and res.transport != "NVLink":
        # every node's ranks print the network they picked; the twin prints
        # the lines of each node's first process
        ib_disabled = str(env.get("NCCL_IB_DISABLE", "0")).strip() == "1"
        for host in nodes:
            pid = _pid(host, 0)
            oob = _oob(rack.live.get(host), env)
            if res.transports.get(host, res.transport) == "IB":
                lines += formats.nccl_net_info_lines(host, pid, "IB", res.devices.get(host) or ["mlx5_0"], oob)
            else:
                lines += formats.nccl_net_info_lines(host, pid, "Socket", oob=oob, ib_disabled=ib_disabled)
        # the ring: each node's last rank sends to the next node's first,
        # over the sender's network
        first, start = {}, 0
        for host, n in hosts:
            if n > 0:
                first[host] = (start, n * o["g"] * o["t"])
            start += n * o["g"] * o["t"]
        for i, host in enumerate(nodes):
            nxt = nodes[(i + 1) % len(nodes)]
            ib = res.transports.get(host, res.transport) == "IB"
            via = ("NET/IB/%d/GDRDMA" if gpudirect(rack.live.get(host)) else "NET/IB/%d") if ib else "NET/Socket/%d"
            nch = max(len(res.devices.get(host) or []), 1) if ib else 1
            local = first[host][1] - 1
            pid = _pid(host, local // o["g"])
            for c in range(nch):
                lines.append(formats.nccl_channel_line(host, pid, local % 8, c, first[host][0] + local,
                                                       first[nxt][0], via % c))
    if not res.ok and res.transport == "mixed":
        _mixed_failure(o, devices, nranks, nodes, res, lines, out)
        return 1
    if not res.ok:
        h0 = nodes[0]
        pre = "%s:%d:%d [0] " % (h0, _pid(h0, 0), _pid(h0, 0))
        text = formats.all_reduce_perf(_header(o, devices, nranks), [], transport_lines=lines, nranks=nranks)
        out.write(text[:text.rfind("\n", 0, text.find("out-of-place")) + 1])
        out.write(pre + "NCCL WARN NET/IB : Got completion from peer with status=12(transport retry counter "
                  "exceeded) opcode=1 len=0 vendor err 129 (Send)\n")
        out.write(pre + "NCCL WARN %s\n" % res.error)
        out.write("%s: Test NCCL failure common.cu:1279 'remote process exited or there was a network error "
                  "/ ' \n .. %s pid %d: Test failure common.cu:1144\n" % (h0, h0, _pid(h0, 0)))
        out.flush()
        return 1
    rows = _rows(o, res.busbw_gbs, nranks, res.transport)
    min_bw = env.get("NCCL_TESTS_MIN_BW")
    min_bw = float(min_bw) if min_bw else None
    text = formats.all_reduce_perf(_header(o, devices, nranks), rows, transport_lines=lines, nranks=nranks,
                                   min_bw=min_bw)
    out.write(text)
    out.flush()
    avg = formats.nccl_avg_busbw(rows)
    return 1 if (min_bw is not None and avg < 0.9 * min_bw) else 0


def _mixed_failure(o, devices, nranks, nodes, res, lines, out):
    """Some nodes on NET/IB, others on NET/Socket: the job dies in
    ncclCommInitRank.  Each node that accepts a connection from a peer on
    the other network refuses it (the socket type differs) and fails with an
    internal error; nothing is measured."""
    text = formats.all_reduce_perf(_header(o, devices, nranks), [], transport_lines=lines, nranks=nranks)
    out.write(text[:text.rfind("\n", 0, text.find("out-of-place")) + 1])
    failed = []
    for i, host in enumerate(nodes):
        prev = nodes[i - 1]
        mine, theirs = res.transports[host], res.transports[prev]
        if mine == theirs:
            continue
        pid = _pid(host, 0)
        msg = "socketFinalizeAccept: wrong type %d != %d" % (NCCL_SOCKET_TYPE[theirs], NCCL_SOCKET_TYPE[mine])
        pre = "%s:%d:%d [0] " % (host, pid, pid + 40)
        out.write(pre + "misc/socket.cc:484 NCCL WARN %s\n" % msg)
        out.write(pre + "NCCL INFO misc/socket.cc:564 -> 3\n")
        failed.append((host, pid, msg))
    for host, pid, msg in failed:
        out.write("%s: Test NCCL failure common.cu:1099 'internal error - please report this issue to the NCCL "
                  "developers / %s'\n .. %s pid %d: Test failure common.cu:1144\n" % (host, msg, host, pid))
    out.flush()


def _header(o, devices, nranks):
    return {"nthread": o["t"], "ngpus": o["g"], "min_bytes": o["b"], "max_bytes": o["e"],
            "step": ("%d(bytes)" % o["i"]) if o["i"] else ("%d(factor)" % o["f"]),
            "warmup_iters": o["w"], "iters": o["n"], "agg_iters": o["m"], "validation": 1 if o["c"] else 0,
            "graph": o["G"], "unalign": 0, "devices": devices}


def _perf_main(args, env, hosts) -> int:
    try:
        o = parse_perf_args(args)
    except ValueError as exc:
        print(f"all_reduce_perf: {exc}", file=sys.stderr)
        return 1
    rack = Rack.load(RACK)
    return run_job(rack, hosts, o, env)


def mpirun(args: list[str]) -> int:
    np_, hosts, xs, allow_root = None, None, [], False
    per_node = None
    i = 0
    takes_value = {"--bind-to", "-bind-to", "--map-by", "-map-by", "--rank-by", "-rank-by", "--report-bindings"}
    while i < len(args):
        a = args[i]
        if not a.startswith("-"):
            break
        if a in ("-np", "-n", "--np", "-c"):
            np_ = int(args[i + 1]); i += 2
        elif a in ("-H", "-host", "--host"):
            hosts = args[i + 1]; i += 2
        elif a in ("-N", "-npernode", "--npernode"):
            per_node = int(args[i + 1]); i += 2
        elif a == "-x":
            xs.append(args[i + 1]); i += 2
        elif a in ("--allow-run-as-root", "-allow-run-as-root"):
            allow_root = True; i += 1
        elif a in ("--mca", "-mca", "--gmca"):
            i += 3
        elif a in takes_value:
            i += 2
        elif a in ("-hostfile", "--hostfile", "-machinefile", "--machinefile", "--default-hostfile"):
            try:
                lines = open(args[i + 1]).read().split("\n")
            except OSError as exc:
                print(f"mpirun: cannot open hostfile {args[i + 1]}: {exc.strerror}", file=sys.stderr)
                return 1
            spec = []
            for line in lines:
                f = line.split("#")[0].split()
                if f:
                    slots = next((x.split("=")[1] for x in f[1:] if x.startswith("slots=")), "1")
                    spec.append(f"{f[0]}:{slots}")
            hosts = ",".join(spec); i += 2
        elif a in ("--oversubscribe", "-oversubscribe", "--tag-output", "--verbose", "-v", "--quiet", "-q",
                   "--display-map", "--prefix"):
            i += 2 if a == "--prefix" else 1
        else:
            print(f"mpirun: Error: unknown option \"{a}\"\nType 'mpirun --help' for usage.", file=sys.stderr)
            return 1
    prog_args = args[i:]
    if not prog_args:
        print("mpirun: No executable was specified on the mpirun command line.", file=sys.stderr)
        return 1
    env = dict(os.environ)
    if os.geteuid() == 0 and not allow_root and not (env.get("OMPI_ALLOW_RUN_AS_ROOT") == "1" and
                                                    env.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM") == "1"):
        print(ROOT_MSG, file=sys.stderr)
        return 1
    for x in xs:
        name, eq, val = x.partition("=")
        if eq:
            env[name] = val
    exe = os.path.basename(prog_args[0])
    if exe != "all_reduce_perf":
        print(f"{DASHES}\nmpirun was unable to launch the specified application as it could not access\n"
              f"or execute an executable:\n\nExecutable: {prog_args[0]}\nNode: {own_node()}\n\n"
              f"while attempting to start process rank 0.\n{DASHES}", file=sys.stderr)
        return 1
    rack = Rack.load(RACK)
    slots = []
    for h in (hosts or own_node()).split(","):
        name, _, n = h.partition(":")
        slots.append((name, int(n) if n else 1))
    for name, _ in slots:
        if name not in rack.nodes:
            print(f"ssh: Could not resolve hostname {name}: Name or service not known\n{DASHES}\n"
                  "ORTE was unable to reliably start one or more daemons.", file=sys.stderr)
            return 1
        if rack.node_fault(name, "node-unreachable"):
            print(f"ssh: connect to host {name} port 22: No route to host\n{DASHES}\n"
                  "ORTE was unable to reliably start one or more daemons.", file=sys.stderr)
            return 1
    if per_node:
        slots = [(n, per_node) for n, _ in slots]
    total = sum(n for _, n in slots)
    if np_ is None:
        np_ = total
    if np_ > total:
        print(f"{DASHES}\nThere are not enough slots available in the system to satisfy the {np_}\n"
              f"slots that were requested by the application:\n\n  {prog_args[0]}\n\n"
              f"Either request fewer slots for your application, or make more slots\navailable for use.\n{DASHES}",
              file=sys.stderr)
        return 1
    placed, left = [], np_
    for name, n in slots:
        take = min(n, left)
        placed.append((name, take))
        left -= take
    return _perf_main(prog_args[1:], env, [p for p in placed if p[1] > 0])


def main(args, prog="all_reduce_perf") -> int:
    try:
        if prog == "mpirun":
            return mpirun(args)
        return _perf_main(args, dict(os.environ), [(own_node(), 1)])
    except FabricError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
