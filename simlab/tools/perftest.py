"""``ib_write_bw`` twin (linux-rdma/perftest).

Accepted: ``-d <dev> [-i port] [-x gid_idx] [-s size] [-n iters] [-q qps]
[-D secs] [-R] [-F] [-T tos] [--tclass=<tc>] [--report_gbits] [-a] [-p port]
[--perform_warm_up] [--use_cuda=<gpu> | --use_cuda_bus_id=<bdf>]
[--use_cuda_dmabuf] [server_ip]``.

From GPU memory, both sides print perftest's GPU lines (the node's GPUs in
PCI order, the one picked, the buffer, DMA-BUF) and stop where perftest
does: DMA-BUF asked of the closed driver ("DMA-BUF is not supported on this
GPU"), GPU memory without nvidia_peermem or DMA-BUF ("Couldn't allocate MR
with error=14"). A run keeps ACS_REDIRECT_SHARE of its rate when ACS on the
GPU's or the NIC's switch port sends peer traffic up to the root complex.  As in perftest, ``-T``
is refused without ``-R`` (the traffic class of QPs connected without
rdma_cm is ``--tclass``, the GRH traffic class).

Server (no ``server_ip``): without ``-R`` it listens on TCP ``port`` on all
addresses, as perftest does for its out-of-band exchange (``Couldn't listen
to port <port>`` when taken), so a readiness check can look for the
listening socket.

The server also registers itself in the shared fabric directory
(``/run/simlab-fabric/perftest/server-<ip>-<port>.json``: node, device,
its IPv4 from the PF's GID table, port) and waits for a client (bounded by
``SIMLAB_PERFTEST_WAIT`` seconds, default 600, or ``-D`` + 30 when longer;
a real server waits in accept() for as long as it takes, and callers bound it
with ``timeout``);
it prints the server-side report when the client's result arrives.
Client: finds the server registration by address and port, claims it, runs
the fabric model (``simlab.fabric``) for the pair, writes the result for the
server and prints the client report.  Failures print perftest's error lines
on stderr and exit 1.

Nodes never exchange packets: the rack state under /var/lib/simlab/rack is
the whole truth.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys
import time
from pathlib import Path

from simlab.fabric.model import FabricError, Rack, rdma_path
from simlab.node.kernel import ACS_REDIRECT
from simlab.tools import formats

RACK = Path(os.environ.get("SIMLAB_RACK_DIR", "/var/lib/simlab/rack"))
FABRIC = Path(os.environ.get("SIMLAB_FABRIC_DIR", "/run/simlab-fabric"))
LAB = Path(os.environ.get("SIMLAB_LAB_DIR", "/var/lib/simlab/lab"))
DEFAULT_PORT = 18515
DEFAULT_SIZE = 65536
DEFAULT_ITERS = 5000
SMALL_MSG_KNEE = 256        # bytes at which per-message costs halve the bandwidth


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(1)


def parse(args, prog):
    p = _Parser(prog=prog, add_help=True, allow_abbrev=False)
    p.add_argument("-d", "--ib-dev", dest="dev")
    p.add_argument("-i", "--ib-port", dest="ib_port", type=int, default=1)
    p.add_argument("-x", "--gid-index", dest="gid_index", type=int)
    p.add_argument("-s", "--size", type=int, default=DEFAULT_SIZE)
    p.add_argument("-n", "--iters", type=int, default=DEFAULT_ITERS)
    p.add_argument("-q", "--qp", type=int, default=1)
    p.add_argument("-D", "--duration", type=int)
    p.add_argument("-R", "--rdma_cm", action="store_true")
    p.add_argument("-F", "--CPU-freq", dest="cpu_freq", action="store_true")
    p.add_argument("-T", "--tos", type=int)
    p.add_argument("--tclass", type=int)
    p.add_argument("-a", "--all", action="store_true")
    p.add_argument("-p", "--port", type=int, default=DEFAULT_PORT)
    p.add_argument("--report_gbits", action="store_true")
    p.add_argument("--perform_warm_up", action="store_true")
    p.add_argument("--use_cuda")
    p.add_argument("--use_cuda_bus_id")
    p.add_argument("--use_cuda_dmabuf", action="store_true")
    p.add_argument("server", nargs="?")
    return p.parse_args(args)


# ---------------------------------------------------------------- GPU memory
# What perftest prints while it sets up GPU memory (src/cuda_memory.c,
# src/perftest_resources.c, current wording; real runs in
# tests/unit/fixtures/perftest_cuda_real). The twin's GPUs are HGX H100s.
GPU_NAME = "NVIDIA H100 80GB HBM3"
# the share of the path's rate a run from GPU memory keeps when ACS sends the
# GPU/NIC peer traffic up to the root complex (NCCL's guide: "a significant
# performance reduction"; the twin's figure, not a measurement)
ACS_REDIRECT_SHARE = 0.3


class CudaFailure(Exception):
    def __init__(self, out: list[str], err: list[str]):
        super().__init__("; ".join(err))
        self.out, self.err = out, err


def cuda_setup(opts, summary: dict) -> tuple[list[str], float]:
    """The GPU part of a run from GPU memory on this node: the lines perftest
    prints, and the share of the path's rate the GPU's own path keeps;
    CudaFailure with what perftest prints where it stops."""
    from simlab.node.hardware import gpu_slots
    out: list[str] = ["initializing CUDA"]
    hw = summary.get("hw") or {}
    slots = gpu_slots(hw)
    if "nvidia" not in summary.get("modules", []) or not slots:
        raise CudaFailure(out + ["cuInit(0) returned 100"], ["Couldn't init GPU context: 1"])
    index = None
    if opts.use_cuda_bus_id:
        out.append(f"Finding PCIe BUS {opts.use_cuda_bus_id}")
        want = opts.use_cuda_bus_id.lower()
        want = want if want.count(":") == 2 else "0000:" + want
        index = next((i for i, x in enumerate(slots) if x.gpu_bdf == want), None)
        if index is None:
            raise CudaFailure(out, [f"cuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID "
                                    f"({opts.use_cuda_bus_id})"])
        out.append(f"Picking GPU number {index}")
    else:
        try:
            index = int(opts.use_cuda)
        except ValueError:
            raise CudaFailure(out, [f"No such device ID ({opts.use_cuda}) exists in system"]) from None
        if not 0 <= index < len(slots):
            raise CudaFailure(out, [f"No such device ID ({index}) exists in system"])
    out.append("Listing all CUDA devices in system:")
    for i, x in enumerate(slots):
        bus, dev = x.gpu_bdf.split(":")[1], x.gpu_bdf.split(":")[2].split(".")[0]
        out.append(f"CUDA device {i}: PCIe address is {bus.upper()}:{dev.upper()}")
    out += ["", f"Picking device No. {index}", f"[pid = {os.getpid()}, dev = {index}] device name = [{GPU_NAME}]",
            "creating CUDA Ctx", "making it the current CUDA Ctx"]
    driver = summary.get("gpu_driver") or {}
    if opts.use_cuda_dmabuf and not driver.get("open"):
        raise CudaFailure(out, ["DMA-BUF is not supported on this GPU", "Couldn't init GPU context: 1"])
    size = opts.size
    addr = 0x7f0000000000 | (hash((own_node(), index)) & 0xfffff) << 20
    out += ["CUDA device integrated: 0", f"allocated GPU buffer of a {size} address at {addr:#x} for type CUDA_MEM_DEVICE"]
    if opts.use_cuda_dmabuf:
        aligned = (size + 4095) & ~4095
        out.append(f"using DMA-BUF for GPU buffer address at {addr:#x} aligned at {addr:#x} with aligned size {aligned}")
    elif "nvidia_peermem" not in summary.get("modules", []):
        # ibv_reg_mr on GPU memory without a peer-memory client: EFAULT
        raise CudaFailure(out + ["destroying current CUDA Ctx"],
                          ["Couldn't allocate MR with error=14", "failed to create mr", "Failed to create MR",
                           " Couldn't create IB resources"])
    slot = slots[index]
    acs = summary.get("acs") or {}
    redirected = any(int(acs.get(port, 0)) & ACS_REDIRECT for port in (slot.gpu_port, slot.nic_port))
    return out, ACS_REDIRECT_SHARE if redirected else 1.0


def _gpu(opts):
    """The GPU part of this run (lines, share), None from host memory;
    perftest's parser error for --use_cuda_dmabuf alone."""
    if not (opts.use_cuda or opts.use_cuda_bus_id):
        if opts.use_cuda_dmabuf:
            raise CudaFailure([], ["CUDA DMA-BUF cannot be used without CUDA", " Parser function exited with Error"])
        return None
    from simlab.tools import agentclient
    return cuda_setup(opts, agentclient.summary("ib_write_bw"))


def traffic_class(opts):
    """The TOS byte of the test traffic: ``-T`` with rdma_cm, ``--tclass``
    (GRH traffic class) otherwise; None when neither is given."""
    return opts.tos if opts.rdma_cm else opts.tclass


def own_node() -> str:
    if os.environ.get("SIMLAB_NODE"):
        return os.environ["SIMLAB_NODE"]
    try:
        return json.loads((LAB / "live.json").read_text())["name"]
    except (OSError, ValueError, KeyError):
        return os.uname().nodename


def perftest_gid(gid: str) -> str:
    """perftest prints the 16 GID bytes as ``%02d`` decimals."""
    h = gid.replace(":", "")
    return ":".join("%02d" % int(h[i:i + 2], 16) for i in range(0, 32, 2))


def _addr(seed: str, gid: str, qps: int) -> list[dict]:
    h = hashlib.sha256(seed.encode()).digest()
    out = []
    for q in range(qps):
        out.append({"lid": 0, "qpn": 0x100 + h[0] + q, "psn": int.from_bytes(h[1:4], "big") ^ q,
                    "rkey": 0x1f0000 | h[4] << 4 | q, "vaddr": 0x7f0000000000 | int.from_bytes(h[5:9], "big") << 4,
                    "gid": perftest_gid(gid)})
    return out


def _die(*lines) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return 1


def _sizes(opts) -> list[int]:
    return [2 ** i for i in range(1, 24)] if opts.all else [opts.size]


def rows_for(bw_gbps: float, opts, key: str) -> list[dict]:
    rows = []
    h = int(hashlib.sha256(key.encode()).hexdigest()[:4], 16) / 65536
    for size in _sizes(opts):
        avg = bw_gbps * size / (size + SMALL_MSG_KNEE)
        peak = avg * (1.001 + 0.003 * h)
        iters = opts.iters if not opts.duration else max(1, int(avg * 1e9 / 8 * opts.duration / size))
        conv = 1.0 if opts.report_gbits else 1e9 / 8 / 2 ** 20
        rows.append({"bytes": size, "iterations": iters, "bw_peak": peak * conv, "bw_average": avg * conv,
                     "msg_rate": avg * 1e9 / 8 / size / 1e6})
    return rows


def _header(opts, ep, mtu, machine, local, remote) -> dict:
    h = {"device": ep.dev, "num_qps": opts.qp, "mtu": mtu, "machine": machine, "rdma_cm": opts.rdma_cm,
         "local": local, "remote": remote, "link_type": "Ethernet" if ep.pf.get("link_type", "ETH") == "ETH"
         else "IB"}
    if opts.gid_index is not None:
        h["gid_index"] = opts.gid_index
    if opts.rdma_cm and opts.tos is not None:
        h["tos"] = opts.tos
    return h


def _local_endpoint(rack: Rack, node: str, opts):
    devs = rack.devices(node)
    dev = opts.dev or (devs[0] if devs else None)
    if dev is None or dev not in devs:
        return None, _die(f"IB device {opts.dev} not found", " Unable to find the Infiniband/RoCE device")
    ep = rack.endpoint(node, dev)
    if opts.ib_port != 1:
        return None, _die(f" Invalid port {opts.ib_port} requested", " Couldn't get context for the device")
    if not ep.port_up:
        return None, _die(f" Port number {opts.ib_port} state is Down", " Couldn't set the link layer")
    return ep, 0


def _gid_of(ep, index):
    i = index if index is not None else ep.best_gid_index()
    if i is None or i >= len(ep.gids) or i < 0 or not ep.gids[i]:
        return None
    return ep.gids[i][0]


def server(opts, prog) -> int:
    node = own_node()
    rack = Rack.load(RACK)
    ep, rc = _local_endpoint(rack, node, opts)
    if ep is None:
        return rc
    gid = _gid_of(ep, opts.gid_index)
    if gid is None:
        return _die(f"can't read sgid of index {opts.gid_index}")
    try:
        gpu = _gpu(opts)
    except CudaFailure as exc:
        gpu_failure = exc
        gpu = None
    else:
        gpu_failure = None
    ip = ep.ipv4
    sock = None
    if not opts.rdma_cm:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", opts.port))
        except OSError:
            sock.close()
            return _die(f"Couldn't listen to port {opts.port}")
    d = FABRIC / "perftest"
    d.mkdir(parents=True, exist_ok=True)
    reg = d / f"server-{ip}-{opts.port}.json"
    result = d / f"result-{ip}-{opts.port}.json"
    result.unlink(missing_ok=True)
    tmp = reg.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"node": node, "dev": ep.dev, "ipv4": ip, "port": opts.port, "pid": os.getpid(),
                               "gid_index": opts.gid_index, "gid": gid, "rdma_cm": opts.rdma_cm,
                               "started": time.time(), "gpu_share": gpu[1] if gpu else None,
                               "gpu_failed": gpu_failure is not None}))
    os.replace(tmp, reg)
    if sock is not None:
        sock.listen(1)          # listening means registered: a client that sees the port finds the server
    if not opts.rdma_cm:
        print("\n************************************\n* Waiting for client to connect... *\n"
              "************************************", flush=True)
    if gpu is not None:
        print("\n".join(gpu[0]), flush=True)
    wait = float(os.environ.get("SIMLAB_PERFTEST_WAIT", 600))
    if opts.duration:
        wait = max(wait, opts.duration + 30)
    deadline = time.monotonic() + wait
    conn = ()
    try:
        res = None
        while res is None:
            if time.monotonic() > deadline:
                return _die(f" No client connected within {wait:g} s (twin wait limit)")
            if sock is not None and not reg.exists():
                # the client took the registration: perftest accepts its
                # connection and closes the listener; the node shows the same
                # (an established socket on the port, no listener)
                conn = _accept_own(sock, opts.port)
                sock = None
            try:
                res = json.loads(result.read_text())
            except (FileNotFoundError, ValueError):
                time.sleep(0.1)
    finally:
        reg.unlink(missing_ok=True)
        result.unlink(missing_ok=True)
        if sock is not None:
            sock.close()
        for end in conn:
            end.close()
    if gpu_failure is not None:
        # perftest sets up GPU memory once a client connected; it stops there
        print("\n".join(gpu_failure.out), flush=True)
        return _die(*gpu_failure.err)
    if res.get("error") in ("mtu",):
        print(formats.ib_write_bw(_header(opts, ep, res["mtu"], "server", res["server_addr"],
                                          res["client_addr"]), [], gbits=opts.report_gbits, closed=False), end="")
        return _die(" Failed to exchange data between server and clients")
    if not res.get("ok"):
        return _die(" Failed to exchange data between server and clients")
    print(formats.ib_write_bw(_header(opts, ep, res["mtu"], "server", res["server_addr"], res["client_addr"]),
                              res["rows"], gbits=opts.report_gbits), end="")
    return 0


def _accept_own(sock: socket.socket, port: int) -> tuple:
    """Accept a connection on the listener, from this process, and close
    the listener: the established socket on the port stands for the
    client's out-of-band connection (which the twin carries in files)."""
    try:
        peer = socket.create_connection(("127.0.0.1", port), timeout=2)
        conn, _ = sock.accept()
    except OSError:
        sock.close()
        return ()
    sock.close()
    return (conn, peer)


def _claim(d: Path, ip: str, port: int) -> dict | None:
    """The server registered on ip:port, taken by this client; None when no
    server listens there: perftest's client does not wait for one, it fails
    (``Couldn't connect to``) at once."""
    reg = d / f"server-{ip}-{port}.json"
    claimed = d / f"claimed-{ip}-{port}.{os.getpid()}.json"
    try:
        os.rename(reg, claimed)
        data = json.loads(claimed.read_text())
    except FileNotFoundError:
        return None
    claimed.unlink(missing_ok=True)
    return data


def client(opts, prog) -> int:
    node = own_node()
    rack = Rack.load(RACK)
    ep, rc = _local_endpoint(rack, node, opts)
    if ep is None:
        return rc
    if _gid_of(ep, opts.gid_index) is None:
        return _die(f"can't read sgid of index {opts.gid_index}")
    try:
        gpu = _gpu(opts)
    except CudaFailure as exc:
        print("\n".join(exc.out), flush=True)
        return _die(*exc.err)
    if gpu is not None:
        print("\n".join(gpu[0]), flush=True)

    def no_connect():
        if opts.rdma_cm:
            return _die(" Unable to perform rdma_client function", " Unable to init the socket connection")
        return _die(f"Couldn't connect to {opts.server}:{opts.port}",
                    "Unable to open file descriptor for socket connection Unable to init the socket connection")

    try:
        remote = rack.by_ipv4(opts.server)
    except FabricError:
        return no_connect()
    d = FABRIC / "perftest"
    d.mkdir(parents=True, exist_ok=True)
    path = rdma_path(rack, ep, remote, gid_index=opts.gid_index, tos=traffic_class(opts), rdma_cm=opts.rdma_cm)
    if not path.ok and path.error in ("unreachable",):
        # the out-of-band connection (TCP or rdma_cm) needs the same path
        return no_connect()
    reg = _claim(d, opts.server, opts.port)
    if reg is None or reg.get("dev") != remote.dev or reg.get("rdma_cm", False) != opts.rdma_cm:
        return no_connect()
    rack = Rack.load(RACK)       # the server side may have changed while it waited
    ep, remote = rack.endpoint(node, ep.dev), rack.endpoint(reg["node"], reg["dev"])
    path = rdma_path(rack, ep, remote, gid_index=opts.gid_index, remote_gid_index=reg.get("gid_index"),
                     tos=traffic_class(opts), rdma_cm=opts.rdma_cm)
    result = d / f"result-{opts.server}-{opts.port}.json"
    if not path.ok and path.error in ("unreachable", "local-port-down"):
        _write(result, {"ok": False, "error": path.error})
        return no_connect()
    if not path.ok and path.error == "gid":
        _write(result, {"ok": False, "error": "gid"})
        return _die(" Failed to modify QP to RTR", " Unable to Connect the HCA's through the link")
    if reg.get("gpu_failed"):
        # the server stopped setting up its GPU memory after the connection
        _write(result, {"ok": False, "error": "server-gpu"})
        return _die(" Failed to exchange data between server and clients")
    local_gid = _gid_of(ep, opts.gid_index)
    caddr = _addr(f"{node}/{ep.dev}/{os.getpid()}", local_gid, opts.qp)
    saddr = _addr(f"{reg['node']}/{reg['dev']}/{reg['pid']}", reg["gid"], opts.qp)
    header = _header(opts, ep, path.mtu, "client", caddr, saddr)
    if not path.ok:             # MTU: every full-size packet is dropped on the path
        _write(result, {"ok": False, "error": "mtu", "mtu": path.mtu, "server_addr": saddr, "client_addr": caddr})
        out = formats.ib_write_bw(header, [], gbits=opts.report_gbits, closed=False)
        print(out, end="", flush=True)
        return _die(" Completion with error at client", " Failed status 12: wr_id 0 syndrom 0x81",
                    "scnt=128, ccnt=0")
    share = min(gpu[1] if gpu else 1.0, reg.get("gpu_share") or 1.0)
    rows = rows_for(path.bw_gbps * share, opts, f"{ep.name}|{remote.name}")
    _write(result, {"ok": True, "mtu": path.mtu, "rows": rows, "server_addr": saddr, "client_addr": caddr,
                    "lossless": path.lossless, "reasons": path.reasons})
    print(formats.ib_write_bw(header, rows, gbits=opts.report_gbits), end="")
    return 0


def _write(path: Path, data: dict) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def warm() -> None:
    """Parse the rack's files in the node's fork server before it forks a
    call (simlab.fabric.model._PARSED): the call inherits them and parses only
    what changed since."""
    Rack.load(RACK)


def main(args, prog="ib_write_bw") -> int:
    opts = parse(args, prog)
    if opts.tos is not None and not opts.rdma_cm:
        print(" TOS only valid for rdma_cm based QP and RawEth QP ", flush=True)
        return 1
    try:
        return server(opts, prog) if opts.server is None else client(opts, prog)
    except FabricError as exc:
        return _die(f" {exc}")
