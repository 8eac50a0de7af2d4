# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 15, NCCL validation: the NCCL environment and the all-reduce job
derived from the fabric intent and nic_facts, the expected bus bandwidth,
the gate on a run's output, and which node of a run the log's lines
belong to.  The layer 15 verdict on a run is checks/nccl_validate.py.

Plain standard-library Python (the filters in plugins/filter/nccl.py call
it; unit tests call it without Ansible).  Results are JSON-serialisable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs.sriov import selected_pfs

MODES = ("hosts", "k8s", "render")
# ``timeout`` exits 124 when it stopped the command, 137 when it had to
# kill it after --kill-after.
TIMEOUT_EXIT_CODES = (124, 137)
# NCCL_IB_HCA when the RDMA device names are not known (rendering without
# nic_facts): the prefixes of both udev naming schemes of mlx5 devices.  In a
# pod with exclusive RDMA namespaces only the pod's VFs are visible.
FALLBACK_IB_HCA = "mlx5,roce"
# RoCE v2 GID index of an IPv4 address on a VF in a pod (0/1 link-local v1/v2,
# 2/3 the IPv4 address v1/v2).
POD_GID_INDEX = 3

DEFAULTS = {
    "mode": "hosts",
    "ib_hca": "",
    "gid_index": None,
    "tc": None,
    "ecn_capable": True,
    "socket_ifname": "",
    "debug": "INFO",
    "debug_subsys": "INIT,NET",
    "extra_env": {},
    "link_speed_gbps": None,
    "nics_per_node": None,
    "expected_busbw_gbs": None,
    "efficiency": 0.85,
    "gpus_per_node": 8,
    "gpus_per_process": 1,
    "min_bytes": "1G",
    "max_bytes": "8G",
    "step_factor": 2,
    "iters": 20,
    "warmup_iters": 5,
    "check": 1,
    "binary": "all_reduce_perf",
    "mpirun": "mpirun",
    "mpirun_args": ["--bind-to", "none"],
    "timeout": 600,
}


def _blank(v):
    return v is None or (isinstance(v, str) and not v.strip())


def select_pfs(pfs, nics, rails=None):
    """The PFs of one host that ``gpufabric_nics`` selects, in rail order:
    the NIC of GPU 0's rail first (``rails``: nic_facts' pcie rails, each
    GPU in PCI order with the NIC below its PCIe switch), then the others in
    PCI address order (the rail order of a rail-optimised node whose GPUs
    are not read)."""
    chosen = dict((p["pci_address"], p) for p in selected_pfs(pfs or [], nics))
    return [chosen[pci] for pci in pcie.rail_order(chosen, pcie.gpu_of_nic(rails, among=chosen))]


def rail_order_text(host, pfs, rails):
    """``node01: GPU2 -> mlx5_0, GPU4 -> mlx5_1`` for the evidence; None
    without rails."""
    gpu_of = pcie.gpu_of_nic(rails, among=[p["pci_address"] for p in pfs])
    named = ["GPU%d -> %s" % (gpu_of[p["pci_address"]]["index"], p.get("rdma_device") or p["pci_address"])
             for p in pfs if p["pci_address"] in gpu_of]
    return "%s: rail order %s" % (host, ", ".join(named)) if named else None


def traffic_class(dscp, ecn_capable=True):
    """NCCL_IB_TC for a DSCP: the TOS byte, DSCP << 2, with ECT(0) in the two
    ECN bits when ``ecn_capable`` (DSCP 26 gives 106)."""
    d = int(dscp)
    if not 0 <= d <= 63:
        raise ValueError("gpufabric_roce.dscp: %r is not a DSCP (0-63)" % (dscp,))
    return (d << 2) | (2 if ecn_capable else 0)


def _unique(seq):
    out = []
    for x in seq:
        if x not in out:
            out.append(x)
    return out


def plan(hosts, roce, settings=None):
    """The NCCL run for a set of nodes.

    ``hosts``: ``{name: {pfs, nics, gpus, mpi_host}}`` in ring order, where
    ``pfs`` is the ``nics`` list of gpufabric.stack.nic_facts (``None`` when
    not gathered, e.g. when only rendering), ``nics`` the host's
    ``gpufabric_nics``, ``gpus`` its GPU count and ``mpi_host`` the name
    mpirun reaches it by.  ``roce`` is ``gpufabric_roce``.  ``settings``
    overrides ``DEFAULTS``.

    Returns ``{mode, hosts, selected, mpi_hosts, env, link_speed_gbps, nics_per_node,
    expected_busbw_gbs, efficiency, threshold, slots, np, argv, perf_args,
    problems, skip, evidence, rail_order}``: ``problems`` lists what stops a meaningful
    run (named by host and PF), ``skip`` says why there is nothing to run.
    ``argv`` is the hosts-mode command line (``timeout`` around ``mpirun``).
    """
    s = dict(DEFAULTS)
    s.update({k: v for k, v in (settings or {}).items() if v is not None})
    mode = s["mode"]
    if mode not in MODES:
        raise ValueError("nccl_validate_mode: %r is not one of %s" % (mode, ", ".join(MODES)))
    if not isinstance(roce, dict) or roce.get("dscp") is None:
        raise ValueError("gpufabric_roce: a mapping with 'dscp' is required, got %r" % (roce,))
    eff = float(s["efficiency"])
    if not 0 < eff <= 1.5:
        raise ValueError("nccl_validate_efficiency: %r is not in (0, 1.5]" % (s["efficiency"],))
    problems, evidence, rail_order = [], [], {}
    names = list(hosts or {})
    selected = {}
    have_facts = bool(names) and all((hosts[h] or {}).get("pfs") is not None for h in names)
    if have_facts:
        for h in names:
            sel = select_pfs(hosts[h]["pfs"], hosts[h].get("nics"), hosts[h].get("rails"))
            selected[h] = sel
            order = rail_order_text(h, sel, hosts[h].get("rails"))
            if order:
                rail_order[h] = order
            if not sel:
                problems.append("%s: no PF matches gpufabric_nics" % h)
            for pf in sel:
                label = "%s: pf %s (%s)" % (h, pf.get("name") or "-", pf["pci_address"])
                if not pf.get("rdma_device"):
                    problems.append("%s has no RDMA device (layer 5)" % label)
                if pf.get("speed_mbps") is None:
                    problems.append("%s: link down, no speed" % label)

    # ---- environment -------------------------------------------------------
    env = {}
    hca = s["ib_hca"]
    if _blank(hca):
        if have_facts and mode == "hosts":
            devs = _unique(pf["rdma_device"] for h in names for pf in selected[h] if pf.get("rdma_device"))
            hca = ("=" + ",".join("%s:1" % d for d in devs)) if devs else ""
        elif have_facts:
            devs = _unique(vf["rdma_device"] for h in names for pf in selected[h]
                           for vf in pf.get("vfs") or [] if vf.get("rdma_device"))
            hca = ("=" + ",".join("%s:1" % d for d in devs)) if devs else FALLBACK_IB_HCA
        else:
            hca = FALLBACK_IB_HCA
    if hca:
        env["NCCL_IB_HCA"] = str(hca)
    gid = s["gid_index"]
    if _blank(gid):
        gid = None
        if mode == "hosts" and have_facts:
            idx = {}
            for h in names:
                for pf in selected[h]:
                    i = (pf.get("rdma") or {}).get("roce_v2_gid_index")
                    if i is None and pf.get("rdma_device"):
                        problems.append("%s: pf %s (%s) has no RoCE v2 GID" % (h, pf.get("name"), pf["rdma_device"]))
                    elif i is not None:
                        idx.setdefault(int(i), []).append("%s:%s" % (h, pf["rdma_device"]))
            if len(idx) > 1:
                problems.append("RoCE v2 GID index differs between devices: %s" % "; ".join(
                    "%d on %s" % (i, ", ".join(v)) for i, v in sorted(idx.items())))
            if idx:
                gid = max(idx, key=lambda i: len(idx[i]))
        elif mode != "hosts":
            gid = POD_GID_INDEX
    if gid is not None:
        env["NCCL_IB_GID_INDEX"] = str(int(gid))
    tc = s["tc"]
    env["NCCL_IB_TC"] = str(int(tc) if not _blank(tc) else traffic_class(roce["dscp"], s["ecn_capable"]))
    ifname = s["socket_ifname"]
    if _blank(ifname):
        if mode == "hosts":
            rail0 = _unique(selected[h][0]["name"] for h in names if selected.get(h) and selected[h][0].get("name"))
            ifname = ("=" + ",".join(rail0)) if rail0 else ""
        else:
            ifname = "eth0"
    if ifname:
        env["NCCL_SOCKET_IFNAME"] = str(ifname)
    if not _blank(s["debug"]):
        env["NCCL_DEBUG"] = str(s["debug"])
    if not _blank(s["debug_subsys"]):
        env["NCCL_DEBUG_SUBSYS"] = str(s["debug_subsys"])
    for k, v in sorted((s["extra_env"] or {}).items()):
        env[str(k)] = str(v)

    # ---- expected bus bandwidth ------------------------------------------------
    link = s["link_speed_gbps"]
    if _blank(link) and have_facts:
        speeds = [pf["speed_mbps"] for h in names for pf in selected[h] if pf.get("speed_mbps")]
        link = min(speeds) / 1000.0 if speeds else None
        if link is not None:
            evidence.append("link speed %g Gb/s (the slowest selected PF, from nic_facts)" % link)
    elif not _blank(link):
        link = float(link)
        evidence.append("link speed %g Gb/s (nccl_validate_link_speed_gbps)" % link)
    nics = s["nics_per_node"]
    counts = [len(selected[h]) for h in names] if have_facts else []
    if _blank(nics):
        nics = min(counts) if counts else None
    else:
        nics = int(nics)
        short = ["%s has %d" % (h, len(selected[h])) for h in names if have_facts and len(selected[h]) < nics]
        if short:
            problems.append("NICs per node is %d but %s selected PF(s)" % (nics, ", ".join(short)))
    expected = s["expected_busbw_gbs"]
    if not _blank(expected):
        expected = float(expected)
        evidence.append("expected busbw %.2f GB/s (nccl_validate_expected_busbw_gbs)" % expected)
    elif link and nics:
        expected = perf_parsers.expected_busbw_gbs(link, nics)
        evidence.append("expected busbw %.2f GB/s = %g Gb/s / 8 x %d NICs per node" % (expected, link, nics))
    else:
        expected = None
        if mode != "render":
            problems.append("no expected bus bandwidth: set nccl_validate_link_speed_gbps and "
                            "nccl_validate_nics_per_node (or gather nic_facts)")

    # ---- the job ---------------------------------------------------------------
    slots = {}
    for h in names:
        g = (hosts[h] or {}).get("gpus")
        slots[h] = int(g if not _blank(g) else s["gpus_per_node"]) // max(int(s["gpus_per_process"]), 1) or 1
    np_ = sum(slots.values())
    perf_args = ["-b", str(s["min_bytes"]), "-e", str(s["max_bytes"]), "-f", str(s["step_factor"]),
                 "-g", str(s["gpus_per_process"]), "-c", str(s["check"]), "-n", str(s["iters"]),
                 "-w", str(s["warmup_iters"])]
    argv = ["timeout", "--kill-after=30", str(int(s["timeout"])), str(s["mpirun"]), "-np", str(np_),
            "-H", ",".join("%s:%d" % ((hosts[h] or {}).get("mpi_host") or h, slots[h]) for h in names)]
    argv += [str(a) for a in (s["mpirun_args"] or [])]
    for k, v in env.items():
        argv += ["-x", "%s=%s" % (k, v)]
    argv += [str(s["binary"])] + perf_args
    skip = None
    if len(names) < 2:
        skip = ("an all-reduce on %s measures NVLink, not the fabric: layer 15 needs at least 2 nodes"
                % (names[0] if names else "no node"))
    threshold = round(expected * eff, 4) if expected else None
    return {
        "mode": mode, "hosts": names, "selected": {h: [pf["pci_address"] for pf in selected.get(h, [])] for h in names},
        "mpi_hosts": {h: (hosts[h] or {}).get("mpi_host") or h for h in names},
        "env": env, "link_speed_gbps": link, "nics_per_node": nics, "expected_busbw_gbs": expected,
        "efficiency": eff, "threshold": threshold, "slots": slots, "np": np_, "argv": argv,
        "perf_args": perf_args, "timeout": int(s["timeout"]), "problems": problems, "skip": skip,
        "evidence": evidence,
        # per node, its NICs in rail order (each node's record shows its own)
        "rail_order": rail_order,
    }


def gate_output(text, expected_busbw_gbs, efficiency=0.85, require_ib=True, exit_code=None,
                timed_out=None, timeout_s=None, require_gdr=False):
    """Parse an all_reduce_perf run's output and gate it (perf_parsers.nccl_gate).

    ``exit_code`` of the command: 124/137 (``timeout``) count as timed out
    unless ``timed_out`` says otherwise.  Text that is not nccl-tests output
    (mpirun could not start, the binary is missing) gives ``kind``
    ``no_output`` with the last line of the text as the reason; a result row
    it cannot read (not the text's last line) gives ``unreadable`` with the
    row quoted.  The gate's
    result carries ``parsed`` (the parse, or ``None``)."""
    if timed_out is None:
        timed_out = exit_code in TIMEOUT_EXIT_CODES
    try:
        parsed = perf_parsers.parse_all_reduce_perf(text or "")
    except ValueError as exc:
        last = [ln.strip() for ln in (text or "").replace("\r", "\n").split("\n") if ln.strip()]
        if isinstance(exc, perf_parsers.UnreadableRowError):
            why, kind = str(exc), "unreadable"
        elif timed_out:
            why = "all_reduce_perf timed out%s before printing any output" % (
                (" after %s s" % timeout_s) if timeout_s is not None else "")
            kind = "timeout"
        else:
            why = "no nccl-tests output (exit status %s)%s" % (exit_code, (": " + last[-1]) if last else "")
            kind = "no_output"
        return {"passed": False, "kind": kind, "reason": why, "largest_size": None, "busbw": None,
                "busbw_oop": None, "busbw_ip": None, "threshold": round(float(expected_busbw_gbs) * float(efficiency), 4),
                "expected_busbw_gbs": float(expected_busbw_gbs), "efficiency": float(efficiency),
                "transport": None, "parsed": None, "output_tail": last[-5:]}
    g = perf_parsers.nccl_gate(parsed, expected_busbw_gbs, efficiency, require_ib=require_ib,
                               timed_out=timed_out, timeout_s=timeout_s, exit_code=exit_code, require_gdr=require_gdr)
    g["parsed"] = parsed
    return g


def _short(name):
    return str(name).split(".")[0]


def log_host(host, run_plan, logged):
    """The name ``host``'s ranks print in their NCCL_DEBUG prefix (the
    node's hostname): the inventory name, the name mpirun reaches it by, or
    either without its domain.  ``None`` when the log has no line of it."""
    names = [host, (run_plan.get("mpi_hosts") or {}).get(host) or host]
    for n in names:
        if n in logged:
            return n
    short = set(_short(n) for n in names)
    return next((k for k in logged if _short(k) in short), None)


def socket_hosts(host, run_plan, by_host):
    """``(own, peers)``: whether ``host``'s ranks used NET/Socket (``None``
    when the log does not show its ranks), and the other nodes of the run
    whose ranks did, by inventory name (a logged name that is no node of
    the plan as printed)."""
    nodes = run_plan.get("hosts") or []
    keys = dict((h, log_host(h, run_plan, by_host)) for h in nodes)
    mine = keys.get(host) if host in keys else log_host(host, run_plan, by_host)
    own = None if mine is None else "Socket" in by_host[mine]
    named = dict((k, h) for h, k in keys.items() if k is not None)
    peers = [named.get(k, k) for k, seen in by_host.items() if "Socket" in seen and k != mine]
    return own, peers


def vf_resources(nics, nics_per_node=None, domain="openshift.io", pfs=None, namespace=None, rails=None):
    """The SR-IOV VF resources a worker pod requests, one VF per rail, and the
    NetworkAttachmentDefinition of each: ``[{rail, resource, network}]``.

    As layer 14 names them: rail ``r`` of an entry of ``gpufabric_nics`` with
    ``resource_prefix`` ``p`` is the extended resource ``<domain>/<p><r>``,
    and a tenant namespace ``ns`` gets the network ``<ns>-<p><r>`` spelt as
    a Kubernetes name (lower case, ``_`` as ``-``).  Rails are counted over
    the selected PFs in rail order (``select_pfs``: GPU order where
    ``rails``, the node's pcie rails, are given): from ``pfs`` (one node's
    nic_facts) when given, else one rail per ``name``/``pci_address`` entry and the rest of
    ``nics_per_node`` for a ``vendor_device`` entry."""
    entries = [e for e in (nics or []) if (e or {}).get("resource_prefix")]
    out = []
    if pfs is not None:
        rail = 0
        for pf in select_pfs(pfs, entries, rails):
            entry = next(e for e in entries if selected_pfs([pf], [e]))
            out.append(_rail(rail, entry["resource_prefix"], domain, namespace))
            rail += 1
        return out
    fixed = sum(1 for e in entries if not (e.get("match") or {}).get("vendor_device"))
    rest = max(int(nics_per_node or 0) - fixed, 1)
    rail = 0
    for e in entries:
        count = rest if (e.get("match") or {}).get("vendor_device") else 1
        for _ in range(count):
            out.append(_rail(rail, e["resource_prefix"], domain, namespace))
            rail += 1
    return out


def k8s_name(text):
    """A resource name as an object name: lower case, anything else than
    [a-z0-9.-] as '-' (layer 14 names the SriovNetworks so)."""
    return re.sub(r"[^a-z0-9.-]", "-", str(text).lower()).strip("-.")


def _rail(rail, prefix, domain, namespace=None):
    name = "%s%d" % (prefix, rail)
    net = k8s_name(name)
    return {"rail": rail, "resource": "%s/%s" % (domain, name) if domain else name,
            "network": ("%s-%s" % (namespace, net)) if namespace else net}
