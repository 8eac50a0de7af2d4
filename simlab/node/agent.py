"""The node agent: boots the twin kernel, serves its sysfs over FUSE at
/run/simlab/sys and answers the tool twins on /run/simlab/agent.sock.

Run by systemd inside the node (``simlab-node.service``) as
``python3 -m simlab.node.agent``.  The control protocol is one JSON object
per line each way: ``{"op": ..., ...}`` -> ``{"ok": true, ...}`` or
``{"ok": false, "errno": N, "error": "..."}``.
"""

from __future__ import annotations

import errno
import json
import os
import socketserver
import subprocess
import sys
import threading
from pathlib import Path

from . import boot, kmod
from .kernel import VFIO_MODULE, Kernel, KernelError
from .sysfs import Tree
from ..tools import forkserver

SOCK = boot.RUN / "agent.sock"
MOUNT = boot.RUN / "sys"
TOOLS = ["mlxconfig", "mstconfig", "mstflint", "flint", "mstfwreset", "mlxfwreset", "ibv_devinfo", "show_gids",
         "rdma", "ip", "dcb", "ib_write_bw", "all_reduce_perf", "mpirun", "update-grub", "grubby", "modprobe",
         "modinfo", "nmcli", "sysctl", "lldpcli", "lldpctl", "nvidia-smi"]
# mlnx-tools: DOCA-OFED ships them; an inbox node has them unless its stack is upstream
MLNX_TOOLS = ["mlnx_qos", "cma_roce_mode", "cma_roce_tos"]
# ofed-scripts' ofed_info comes with DOCA-OFED only
OFED_TOOLS = ["ofed_info"]
TOOL_DIR = Path("/usr/local/sbin")


class Agent:
    def __init__(self, state: dict):
        self.kernel = Kernel(state["hw"], state["firmware"], state["cmdline"], state["bios"], state["faults"])
        self.tree = Tree(self.kernel)
        self.fw_lock = threading.Lock()

    # ------------------------------------------------------------ ops
    def op_ping(self, req):
        return {"name": self.kernel.hw["name"]}

    def op_summary(self, req):
        """Everything the tool twins print, in one snapshot."""
        k = self.kernel
        with k.lock:
            pfs = []
            for pf in k.pfs:
                vfs = []
                for vf in pf.vfs:
                    vfs.append({
                        "vf": vf.index, "bdf": vf.bdf, "mac": vf.mac, "vlan": vf.vlan, "qos": vf.qos,
                        "spoofchk": vf.spoofchk, "trust": vf.trust, "link_state": vf.link_state,
                        "node_guid": vf.node_guid, "port_guid": vf.port_guid, "mtu": vf.mtu,
                        "max_tx_rate": vf.max_tx_rate, "min_tx_rate": vf.min_tx_rate,
                        "netdev": pf.spec.vf_netdev(vf.index), "rdma": k.rdma_name(pf, vf),
                        "ifindex": k.ifindex(pf, vf), "carrier": k.carrier(pf, vf), "link": k.vf_link(pf, vf),
                        "opened": vf.opened,
                        "netdev_mac": k.vf_netdev_mac(pf, vf), "admin_up": vf.admin_up,
                        "ready": vf.probed_at <= k.clock() and vf.on_kernel_driver,
                        "driver": vf.driver, "driver_override": vf.driver_override,
                        "gids": k.gids(pf, vf), "addrs": k.addresses(pf, vf),
                    })
                pfs.append({
                    "index": pf.spec.index, "bdf": pf.bdf, "netdev": pf.netdev, "rdma": k.rdma_name(pf),
                    "ifindex": k.ifindex(pf), "carrier": k.carrier(pf), "opened": pf.opened,
                    "model": pf.spec.model, "device_type": pf.spec.ids["device_type"],
                    "hca": pf.spec.ids["hca"], "psid": pf.spec.ids["psid"], "part": pf.spec.ids["part"],
                    "mac": pf.spec.mac, "link_type": pf.spec.link_type,
                    # the address RoCE uses: the netdev's first global IPv4 address
                    "ipv4": next((a["local"] for a in k.addresses(pf) if a["scope"] == "global"), None),
                    "addrs": k.addresses(pf),
                    "speed_mbps": pf.spec.speed_mbps, "numa_node": pf.spec.numa_node,
                    "bound": pf.bound, "admin_up": pf.admin_up, "operstate": pf.operstate, "mtu": pf.mtu,
                    "numvfs": pf.numvfs,
                    "trust": pf.trust, "pfc": pf.pfc, "dscp2prio": {str(d): p for d, p in pf.dscp2prio.items()},
                    "app_dscp": sorted(pf.app_dscp),
                    "cable_len": pf.cable_len, "ecn_rp": pf.ecn_rp, "ecn_np": pf.ecn_np,
                    "cnp_dscp": pf.cnp_dscp, "roce_mode": pf.roce_mode, "roce_tos": pf.roce_tos,
                    "node_guid": k.node_guid(pf, None), "gids": k.gids(pf, None),
                    "firmware": k.firmware[pf.bdf], "vfs": vfs,
                })
            return {"name": k.hw["name"], "hw": k.hw, "pfs": pfs, "ofed": k.ofed, "gpu_driver": k.gpu_driver,
                    "cmdline": k.cmdline, "faults": k.faults, "modules": sorted(k.modules),
                    # the ACS control word of each PCIe switch's downstream ports, as the kernel left it
                    "acs": {port: self.tree._acs_ctrl(port) for slot in self.tree._slots()
                            for port in (slot.gpu_port, slot.nic_port)}}

    def op_set_vf(self, req):
        self.kernel.set_vf(req["dev"], int(req["vf"]), **req["settings"])
        return {}

    def op_set_link(self, req):
        if "mtu" in req:
            self.kernel.set_mtu(req["dev"], int(req["mtu"]))
        if "up" in req:
            self.kernel.set_admin(req["dev"], bool(req["up"]))
        return {}

    def op_set_addr(self, req):
        """``ip addr add`` / ``ip addr del`` of an IPv4 address (of an IPv6
        one: the kernel's refusal)."""
        if req.get("family") == "inet6":
            self.kernel.inet6_refused(req["dev"], bool(req["add"]))
        if req["add"]:
            self.kernel.inet_add(req["dev"], req["local"], int(req["prefixlen"]), req.get("broadcast"),
                                 req.get("scope", "global"))
        else:
            self.kernel.inet_del(req["dev"], req["local"], req.get("prefixlen"))
        return {}

    def _pf_by_netdev(self, dev: str):
        d = self.kernel.netdevs().get(dev)
        if d is None:
            raise KernelError(errno.ENODEV, f"Device {dev} not found")
        return d

    def op_set_qos(self, req):
        """mlnx_qos: trust, pfc, dscp2prio, cable_len on a PF."""
        pf, vf = self._pf_by_netdev(req["dev"])
        if vf is not None:
            raise KernelError(errno.EOPNOTSUPP, "Operation not supported on a VF")
        k = self.kernel
        with k.lock:
            for d, p in req.get("dscp2prio", {}).items():
                pf.dscp2prio[int(d)] = int(p)
            if "trust" in req:
                k.set_trust(pf, req["trust"])
            if "pfc" in req:
                pf.pfc = [int(x) for x in req["pfc"]]
            if "cable_len" in req:
                pf.cable_len = int(req["cable_len"])
            k.generation += 1
        return {}

    def op_dcb_app(self, req):
        """dcb app add / del / replace / flush of DSCP entries on a PF
        (``add``/``del``: [[dscp, prio], ...], applied in order, as dcb sends
        them one attribute at a time: an error stops at that entry)."""
        pf, vf = self._pf_by_netdev(req["dev"])
        if vf is not None:
            raise KernelError(errno.EOPNOTSUPP, "Operation not supported")
        k = self.kernel
        for d, p in req.get("del", []):
            k.app_del(pf, int(d), int(p))
        for d, p in req.get("add", []):
            k.app_set(pf, int(d), int(p))
        return {}

    def op_set_roce(self, req):
        """cma_roce_mode / cma_roce_tos on an RDMA device."""
        k = self.kernel
        dev = k.rdma_devices().get(req["rdma"])
        if dev is None:
            raise KernelError(errno.ENODEV, f"no RDMA device {req['rdma']}")
        pf, vf = dev
        if vf is not None:
            raise KernelError(errno.EOPNOTSUPP, "Operation not supported on a VF")
        with k.lock:
            if "mode" in req:
                pf.roce_mode = req["mode"]
            if "tos" in req:
                pf.roce_tos = int(req["tos"])
        return {}

    def op_fw_set(self, req):
        """mlxconfig set: stores next-boot values."""
        k = self.kernel
        with self.fw_lock, k.lock:
            state = k.firmware[req["bdf"]]
            state["next"].update({name: int(v) for name, v in req["params"].items()})
            boot.write_json(boot.LAB / "firmware.json", k.firmware)
        return {}

    def op_fw_reset(self, req):
        """mstfwreset reset: the firmware reloads; next-boot becomes current,
        the driver re-probes and every VF of the card is gone."""
        k = self.kernel
        with self.fw_lock, k.lock:
            pf = k.pf_by_bdf(req["bdf"])
            if pf is None:
                raise KernelError(errno.ENODEV, f"no device {req['bdf']}")
            state = k.firmware[pf.bdf]
            state["current"] = dict(state["next"])
            state["running_fw_version"] = state["fw_version"]
            pf.vfs = []
            pf.numvfs = 0
            k.generation += 1
            boot.write_json(boot.LAB / "firmware.json", k.firmware)
        return {}

    def op_modules(self, req):
        k = self.kernel
        with k.lock:
            for m in req.get("load", []):
                k.modules.add(m)
            for m in req.get("unload", []):
                k.modules.discard(m)
            k.generation += 1
        return {"modules": sorted(k.modules)}

    def op_reload_faults(self, req):
        faults = boot.read_json(boot.LAB / "faults.json", {})
        self.kernel.set_faults(faults)
        return {"faults": faults}

    def op_fw_activate(self, req):
        """mstfwreset level 0 (live patch): the burned image starts running;
        the NV configuration, the driver and the VFs stay as they are."""
        k = self.kernel
        with self.fw_lock, k.lock:
            pf = k.pf_by_bdf(req["bdf"])
            if pf is None:
                raise KernelError(errno.ENODEV, f"no device {req['bdf']}")
            state = k.firmware[pf.bdf]
            state["running_fw_version"] = state["fw_version"]
            k.generation += 1
            boot.write_json(boot.LAB / "firmware.json", k.firmware)
        return {}

    def op_dcb(self, req):
        """DCB settings mlnx_qos reads and writes that the kernel model does
        not carry (ETS prio->tc map, TSA, TC bandwidth, rate limits, receive
        buffers), per PF netdev; ``set`` merges values in.  Returns them with
        the mlx5 defaults filled in."""
        pf, vf = self._pf_by_netdev(req["dev"])
        if vf is not None:
            raise KernelError(errno.EOPNOTSUPP, "Operation not supported on a VF")
        store = self.__dict__.setdefault("_dcb", {})
        # mlx5e_ets_init: vendor TSA everywhere, priority 0 on TC 1 and 1 on TC 0
        cur = store.setdefault(pf.bdf, {"prio_tc": [1, 0, 2, 3, 4, 5, 6, 7], "tsa": ["vendor"] * 8,
                                        "tcbw": [0] * 8, "ratelimit": [0] * 8,
                                        "prio2buffer": None, "buffer_size": None, "dcbx": "os"})
        with self.kernel.lock:
            for key, value in (req.get("set") or {}).items():
                if key not in cur:
                    raise KernelError(errno.EINVAL, f"unknown DCB setting {key}")
                cur[key] = value
        return {"dcb": dict(cur)}

    def op_driver_modules(self, req):
        """modprobe / modprobe -r of the mlx5, RDMA and VFIO modules.
        Unloading mlx5_core removes its PCI driver: every PF is unbound
        (SR-IOV is disabled first); loading it probes the PFs again.  RDMA
        devices exist only while mlx5_ib is loaded (the sysfs tree follows
        ``modules``).  Loading vfio_pci registers vfio-pci, which takes every
        unbound VF whose driver_override names it; unloading it leaves its
        VFs unbound."""
        k = self.kernel
        with k.lock:
            for m in req.get("unload", []):
                if m == "mlx5_core":
                    for pf in k.pfs:
                        if pf.bound:
                            k.unbind(pf.bdf)
                if m == VFIO_MODULE:
                    k.vfio_unloaded()
                k.modules.discard(m)
            for m in req.get("load", []):
                if m == "mlx5_core" and m not in k.modules:
                    for pf in k.pfs:
                        if not pf.bound:
                            k.bind(pf.bdf)
                k.modules.add(m)
                if m == VFIO_MODULE:
                    k.vfio_loaded()
            k.sync_module_sysctls()
            k.generation += 1
        return {"modules": sorted(k.modules)}

    def op_sysctl(self, req):
        """sysctl twin: {"set": {key: value}} then {"get": [key]}; ENOENT for
        a key the kernel does not have (br_netfilter not loaded), EINVAL for a
        value proc_dointvec() refuses (kernel.proc_int)."""
        k = self.kernel
        with k.lock:
            for key, value in (req.get("set") or {}).items():
                k.sysctl_set(key, value)
            return {"values": {key: k.sysctl_get(key) for key in req.get("get") or []}}

    def apply_boot_config(self) -> None:
        """What systemd-modules-load and systemd-sysctl do at boot on a host
        (in a container both units are skipped): load the modules listed in
        modules-load.d that the twin models, then apply sysctl.d to the
        sysctls it models."""
        order: list[str] = []
        for name in boot.boot_modules():
            if kmod.norm(name) in kmod.MODULES_DEP:
                kmod.load_order(kmod.norm(name), order)
        if order:
            self.op_driver_modules({"load": [m for m in order if m not in self.kernel.modules]})
        with self.kernel.lock:
            for key, value in boot.boot_sysctls():
                try:
                    self.kernel.sysctl_set(key, value)
                except KernelError:
                    pass

    def handle(self, req: dict) -> dict:
        fn = getattr(self, "op_" + str(req.get("op", "")), None)
        if fn is None:
            return {"ok": False, "errno": errno.EINVAL, "error": f"unknown op {req.get('op')!r}"}
        try:
            out = fn(req)
        except KernelError as exc:
            return {"ok": False, "errno": exc.errno, "error": exc.strerror}
        except (KeyError, ValueError, TypeError) as exc:
            return {"ok": False, "errno": errno.EINVAL, "error": f"bad request: {exc}"}
        return {"ok": True, **out}


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            try:
                req = json.loads(line)
            except json.JSONDecodeError:
                resp = {"ok": False, "errno": errno.EINVAL, "error": "bad json"}
            else:
                resp = self.server.agent.handle(req)
            self.wfile.write(json.dumps(resp).encode() + b"\n")
            self.wfile.flush()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True


def node_tools(hw: dict, faults: dict | None = None) -> list[str]:
    """The tool twins of this node: its driver stack decides the vendor ones
    (the fault ofed-userspace-over-inbox leaves DOCA-OFED's ofed_info on an
    inbox node)."""
    ofed_userspace = hw.get("driver") == "ofed" or (faults or {}).get("ofed-userspace-over-inbox")
    return (TOOLS + (MLNX_TOOLS if hw.get("mlnx_tools", True) else [])
            + (OFED_TOOLS if ofed_userspace else []))


# Where a tool twin's Python keeps the twin's compiled code: /opt/simlab is
# mounted read-only, so without it every call compiled the modules it imports
# again (about a third of a call's CPU time)
PYCACHE = "/var/cache/simlab-pycache"


# How a wrapper starts a tool twin in an interpreter of its own: -c and not -m
# (runpy and the imports it needs cost about 5 ms of a 25 ms call), -S (no
# site: the twins use the standard library and /opt/simlab only)
ENTRY = forkserver.ENTRY
# The tool twins' fork server (simlab.tools.forkserver): a wrapper's call costs
# a small client and a fork instead of an interpreter importing the twin
TOOLS_SOCK = boot.RUN / "tools.sock"
# Tools that keep a process of their own, started on ENTRY: the NCCL launcher
# and test run for as long as the test. ib_write_bw goes through the server:
# the collection's perftest round finds and stops a server by the session and
# command line of the process it started, the client, whose end stops the tool
# (forkserver.wait_tool)
DIRECT_TOOLS = ("mpirun", "all_reduce_perf")


def wrapper(tool: str) -> str:
    """The text of a tool twin's wrapper in TOOL_DIR: the fork server's
    client, which runs ENTRY itself where no server answers."""
    code = ENTRY if tool in DIRECT_TOOLS else forkserver.client(str(TOOLS_SOCK))
    return ("#!/bin/sh\n# simlab tool twin (see docs/simlab.md)\n"
            f"PYTHONPATH=/opt/simlab PYTHONPYCACHEPREFIX={PYCACHE} "
            f"exec /usr/bin/python3 -S -c '{code}' {tool} \"$@\"\n")


def start_tool_server() -> subprocess.Popen:
    """The fork server, as a child of this agent (it stops when the agent
    is gone); its compiled code in PYCACHE as the wrappers' is."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=PYCACHE)
    return subprocess.Popen([sys.executable, "-S", "-m", "simlab.tools.forkserver", str(TOOLS_SOCK), str(os.getpid())],
                            env=env, stdin=subprocess.DEVNULL)


def install_tools(hw: dict, faults: dict | None = None) -> None:
    TOOL_DIR.mkdir(parents=True, exist_ok=True)
    wanted = node_tools(hw, faults)
    for tool in MLNX_TOOLS + OFED_TOOLS:
        if tool not in wanted:
            (TOOL_DIR / tool).unlink(missing_ok=True)
    for tool in wanted:
        path = TOOL_DIR / tool
        path.write_text(wrapper(tool))
        path.chmod(0o755)


def publish_live(agent: "Agent", path: Path, interval: float = 0.3) -> None:
    """Keep ``live.json`` in this node's lab directory equal to the agent's
    summary, so the fabric model (which runs in other nodes' tool twins and on
    the host) sees this node's PFs, VFs, QoS and link state."""
    import time as _time
    last = None
    while True:
        k = agent.kernel
        key = (k.generation, tuple(vf.probed_at <= k.clock() for pf in k.pfs for vf in pf.vfs))
        if key != last:
            try:
                boot.write_json(path, agent.op_summary({}))
                last = key
            except OSError:
                pass
        _time.sleep(interval)


def main() -> int:
    state = boot.boot()
    agent = Agent(state)
    agent.apply_boot_config()
    start_tool_server()
    install_tools(agent.kernel.hw, agent.kernel.faults)
    threading.Thread(target=publish_live, args=(agent, boot.LAB / "live.json"), daemon=True).start()
    try:
        SOCK.unlink()
    except FileNotFoundError:
        pass
    server = _Server(str(SOCK), _Handler)
    server.agent = agent
    threading.Thread(target=server.serve_forever, daemon=True).start()
    from .fusefs import serve
    if os.path.ismount(MOUNT):
        os.system(f"fusermount3 -u {MOUNT} 2>/dev/null")
    serve(agent.tree, str(MOUNT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
