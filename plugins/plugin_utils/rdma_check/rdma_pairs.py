# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 9, the RDMA fabric check: per-PF link and GID verdicts, the plan of
``ib_write_bw`` pairs over the cabling, the perftest command lines, the gate
and the messages.

* ``link_check``: which PFs of a node the inventory selects, where each is
  cabled, whether its link is up and it has a RoCE v2 GID (and which address
  and GID index the bandwidth test uses), from ``nic_facts`` and optionally
  ``rdma link show``.
* ``plan_pairs``: rails (PFs on one leaf, NIC k of each node) and rounds of
  pairs.  A round is a permutation of the rail's nodes (node i sends to node
  i+s), so every PF sends once and receives once per round and all pairs of
  a round run at the same time without sharing a link direction.  ``ring``
  is the one round s=1 (cost linear in the nodes, every node is the client
  of its ring successor); ``all`` adds s=2..n-1 (every ordered pair).
* ``perftest_argv``: the server and client command lines of one pair;
  ``round_pairs``, ``server_specs`` and ``client_specs``: what a node serves
  and sends in one round of the plan.
* ``pair_result``: parse the client's output, apply the gate (share of the
  slower end's line rate) and word the result naming both nodes, both PFs
  and the switch ports between them; ``gate_round``: that of every pair a
  node sent on in a round, from its own and its servers' results.
* ``summary``: a node's results (its PFs, the pairs it sent on, its own
  failures and warnings); the layer 9 verdict on them is
  checks/rdma_check.py.

Plain Python, no Ansible imports; results are JSON-serialisable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
except ImportError:  # pragma: no cover - imported outside a collection tree
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie
    from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import rdma_tools
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers

PAIR_MODES = ("ring", "all")
DEFAULT_SHARE = 0.90

_BDF_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class PlanError(ValueError):
    """Input the check cannot work with (named in the message)."""


# --------------------------------------------------------------------------
# selection and cabling
# --------------------------------------------------------------------------

def _norm_bdf(value):
    v = str(value or "").lower()
    return "0000:" + v if len(v) == 7 else v


def select_pfs(pfs, nics):
    """The PFs of ``pfs`` (a nic_facts ``nics`` list) that an entry of
    ``nics`` (gpufabric_nics) selects by ``match.name``, ``match.pci_address``
    or ``match.vendor_device`` (:func:`sriov.select_any`'s rule).  Returns ``(selected, unmatched)``: the PFs
    sorted by PCI address, and the match dicts that selected nothing."""
    matches = [(entry or {}).get("match") or {} for entry in nics or []]
    selected = sriov.selected_pfs(pfs or [], nics)
    return (sorted(selected, key=lambda p: p["pci_address"]),
            [m for m in matches if not sriov.select_any(pfs or [], [m])])


def cable_of(cabling, node, pf):
    """The gpufabric_cabling entry of ``pf`` (a nic_facts PF) on ``node``:
    matched by PCI address, else by netdev name."""
    mine = [c for c in cabling or [] if c.get("node") == node]
    for c in mine:
        if c.get("pci_address") and _norm_bdf(c["pci_address"]) == pf.get("pci_address"):
            return c
    for c in mine:
        if c.get("pf") and c["pf"] == pf.get("name"):
            return c
    return None


# --------------------------------------------------------------------------
# link and GID
# --------------------------------------------------------------------------

# sysfs spells a port's physical state as ib_core's phys_state_to_str does
# ("3: Disabled"), `rdma link show` as iproute2 does ("DISABLED"); the verdicts
# use iproute2's names whichever source they come from.
SYSFS_PHYS_STATE = {"Sleep": "SLEEP", "Polling": "POLLING", "Disabled": "DISABLED",
                    "PortConfigurationTraining": "ARMED", "LinkUp": "LINK_UP",
                    "LinkErrorRecovery": "LINK_ERROR_RECOVER", "Phy Test": "PHY_TEST"}


def _rdma_states(rdma_link_text):
    """{dev: link entry} from ``rdma link show`` text; {} when unreadable."""
    if not rdma_link_text or not str(rdma_link_text).strip():
        return {}
    try:
        links = rdma_tools.parse_rdma_link(rdma_link_text)
    except ValueError:
        return {}
    return dict((entry["dev"], entry) for entry in links if entry.get("port") == 1)


def _gid_pick(gids, gid_index, address):
    """(gid entry or None, cause or None) for the GID the test uses."""
    if gid_index is not None:
        g = [x for x in gids if x.get("index") == int(gid_index)]
        if not g:
            return None, "GID index %d is empty" % int(gid_index)
        if g[0].get("type") != "RoCE v2":
            return None, "GID index %d is %s, not RoCE v2" % (int(gid_index), g[0].get("type"))
        return g[0], None
    v2 = [x for x in gids if x.get("type") == "RoCE v2"]
    if not v2:
        kinds = sorted(set(str(x.get("type")) for x in gids))
        return None, "no RoCE v2 GID (GID types present: %s)" % (", ".join(kinds) or "none")
    with_ip = [x for x in v2 if x.get("ipv4")]
    if address:
        same = [x for x in with_ip if x.get("ipv4") == address]
        if same:
            return same[0], None
    if not with_ip:
        return None, ("no RoCE v2 GID with an IPv4 address (only %s): the PF has no IPv4 address"
                      % ", ".join(x["gid"] for x in v2))
    return with_ip[0], None


def _pf_label(p):
    return "%s %s" % (p["node"], p["pf"])


def cabled_port(p):
    """The switch port a PF (a link_check entry) is cabled to, or 'no cabling
    entry'."""
    if p.get("switch"):
        return "%s %s" % (p["switch"], p["port"])
    return "no cabling entry"


# cabling verdicts (plugin_utils/rdma_check/cabling.py) that fail the PF
CABLING_FAULTS = ("moved", "swapped", "stranger", "disagree")


def link_check(node, pfs, nics, cabling, rdma_link_text=None, gid_index=None, addresses=None,
               line_rate_mbps=None, cabled=None, rails=None, gpudirect=None, pcie_reading=None):
    """Layer 9 link and GID verdict of one node.

    ``pfs`` is the nic_facts ``nics`` list, ``nics`` the node's
    gpufabric_nics, ``cabling`` gpufabric_cabling, ``rdma_link_text`` the
    output of ``rdma link show`` (optional: its port state is preferred to
    sysfs when present), ``gid_index`` forces a GID index, ``addresses``
    maps a PF netdev (or PCI address) to the IPv4 address peers connect to
    (default: the IPv4 of the PF's RoCE v2 GID), ``line_rate_mbps`` the rate
    the bandwidth gate takes as the line rate instead of the PF's link speed
    (a link whose speed is not what it carries: an emulated or a shaped one),
    ``cabled`` the cabling check's verdicts of the node's PFs by PF name
    (cabling.judge; None when LLDP is not checked): a cable that LLDP shows
    elsewhere fails the PF (``kind`` ``cabling``), one that LLDP cannot
    verify is a ``warning`` of it; ``rails`` the node's GPU rails (nic_facts'
    pcie rails: each GPU, in PCI order, with the NIC below its switch) and
    ``gpudirect`` the node's GPUDirect RDMA mode (``dmabuf``, ``peermem``;
    None where there is none): a PF that is a GPU's rail carries that GPU
    (``gpu``: {pci_address, index}) and the mode, for the runs from GPU
    memory; ``pcie_reading`` the node's nic_facts pcie reading, against
    which a cabling entry's ``gpu`` is held: a PF the plan gives to a GPU
    that reaches it only above a PCIe switch (another socket, the root
    complex) fails (``kind`` ``rail``).

    Returns ``{node, errors, pfs}``: ``errors`` are inventory problems
    (nothing selected, a PF without a cabling entry); each PF entry is
    ``{node, pf, pci_address, rdma_device, switch, port, link_ok, gid_ok,
    ok, cause, kind, gid_index, gid, ipv4, speed_mbps, evidence}`` where
    ``kind`` is ``link``, ``gid``, ``cabling`` or ``None``, and with
    ``cabled`` also ``cabling`` (the verdict) and ``warning``.
    """
    addresses = addresses or {}
    if line_rate_mbps not in (None, ""):
        try:
            line_rate_mbps = int(line_rate_mbps)
        except (TypeError, ValueError):
            line_rate_mbps = 0
        if line_rate_mbps <= 0:
            raise PlanError("%s: rdma_check_line_rate_mbps is %r; it must be a positive number of Mb/s or null"
                            % (node, line_rate_mbps))
    else:
        line_rate_mbps = None
    selected, unmatched = select_pfs(pfs, nics)
    errors = []
    for m in unmatched:
        errors.append("%s: no PF matches gpufabric_nics entry %s (PFs: %s)" % (
            node, ", ".join("%s=%s" % kv for kv in sorted(m.items()) if kv[1]) or "{}",
            ", ".join("%s %s" % (p.get("name"), p.get("pci_address")) for p in pfs) or "none"))
    states = _rdma_states(rdma_link_text)
    gpu_of = pcie.gpu_of_nic(rails, among=[p["pci_address"] for p in selected])
    out = []
    for pf in selected:
        name = pf.get("name") or pf["pci_address"]
        cable = cable_of(cabling, node, pf)
        if cable is None:
            errors.append("%s: PF %s (%s) has no entry in gpufabric_cabling" % (node, name, pf["pci_address"]))
        rdma = pf.get("rdma") or {}
        dev = pf.get("rdma_device")
        entry = {
            "node": node, "pf": name, "pci_address": pf["pci_address"], "rdma_device": dev,
            "switch": cable.get("switch") if cable else None, "port": cable.get("port") if cable else None,
            "link_ok": False, "gid_ok": False, "ok": False, "cause": None, "kind": None,
            "gid_index": None, "gid": None, "ipv4": None,
            "speed_mbps": pf.get("speed_mbps"), "mtu": pf.get("mtu"), "evidence": [],
            "gpu": gpu_of.get(pf["pci_address"]), "gpudirect": gpudirect if gpudirect in GPU_MODES else None,
        }
        ev = entry["evidence"]
        link = states.get(dev) if dev else None
        port_state = link.get("state") if link else rdma.get("state")
        phys = link.get("physical_state") if link else SYSFS_PHYS_STATE.get(rdma.get("phys_state"), rdma.get("phys_state"))
        ev.append("%s %s (%s, %s, cabled to %s): operstate %s, speed %s, RDMA port %s/%s" % (
            node, name, pf["pci_address"], dev or "no RDMA device", cabled_port(entry), pf.get("operstate"),
            "%d Mb/s" % pf["speed_mbps"] if pf.get("speed_mbps") else "unknown", port_state, phys))
        if line_rate_mbps and cause_is_link_up(pf):
            ev.append("%s %s: gated against rdma_check_line_rate_mbps %d Mb/s, not the link speed" % (
                node, name, line_rate_mbps))
            entry["speed_mbps"] = line_rate_mbps
        if link:
            ev.append("rdma link: link %s/1 state %s physical_state %s netdev %s" % (
                dev, link.get("state"), link.get("physical_state"), link.get("netdev")))
        cause = None
        if not pf.get("bound", pf.get("driver") is not None):
            cause = "no driver bound (layer 5)"
        elif not pf.get("name"):
            cause = "no netdev"
        elif not dev:
            cause = "no RDMA device (mlx5_ib not loaded? layer 5)"
        elif (rdma.get("link_layer") or "Ethernet") != "Ethernet":
            cause = "link layer %s, RoCE needs Ethernet (LINK_TYPE_P1=ETH, layer 4)" % rdma.get("link_layer")
        elif pf.get("operstate") != "up" or str(port_state or "").upper() != "ACTIVE":
            cause = "link down (netdev operstate %s, RDMA port %s, physical state %s)" % (
                pf.get("operstate"), port_state, phys)
        elif not entry["speed_mbps"]:
            cause = "link up but its speed is unknown (speed reads %s)" % pf.get("speed_mbps")
        if cause:
            entry.update(cause=cause, kind="link")
        else:
            entry["link_ok"] = True
        if dev:
            address = addresses.get(name) or addresses.get(pf["pci_address"])
            gid, gcause = _gid_pick(rdma.get("gids") or [], gid_index, address)
            if gid:
                entry.update(gid_ok=True, gid_index=gid["index"], gid=gid["gid"],
                             ipv4=address or gid.get("ipv4"))
                ev.append("%s %s: RoCE v2 GID %d %s %s" % (node, name, gid["index"], gid["gid"], gid.get("ipv4") or ""))
                if not entry["ipv4"]:
                    gcause = "RoCE v2 GID %d has no IPv4 address and rdma_check_addresses has none for %s" % (
                        gid["index"], name)
                    entry["gid_ok"] = False
            if gcause:
                ev.append("%s %s: %s" % (node, name, gcause))
                if entry["cause"] is None:
                    entry.update(cause=gcause, kind="gid")
        row = (cabled or {}).get(name) if cabled is not None else None
        if row is not None:
            entry["cabling"] = dict((k, row.get(k)) for k in ("status", "found", "message", "fix", "seen_by",
                                                              "swapped_with") if k in row)
            if row["status"] == "unverified" and entry["kind"] == "link" and "link down" in (entry["cause"] or ""):
                ev.append("LLDP: %s %s: no LLDP neighbour at either end and no carrier: the cable to %s is out or "
                          "broken" % (node, name, cabled_port(entry)))
            else:
                ev.append("LLDP: %s" % row["message"])
            if row["status"] in CABLING_FAULTS and entry["kind"] != "link":
                # the cable goes elsewhere: that explains a GID or pair problem too
                entry.update(cause=row["message"], kind="cabling")
            elif row["status"] == "unverified" and entry["link_ok"]:
                entry["warning"] = row["message"]
        planned = (cable or {}).get("gpu")
        if planned is not None and pcie_reading and entry["kind"] != "link":
            index = pcie.gpu_index(planned)
            problem = pcie.planned_gpu_problem(pcie_reading, pf["pci_address"], index) if index is not None else None
            if index is None:
                errors.append("%s: gpufabric_cabling gpu %r of PF %s is not a GPU index (0, 1, ... as nvidia-smi "
                              "numbers the node's GPUs)" % (node, planned, name))
            if problem:
                msg = "gpufabric_cabling makes it GPU%d's rail, but %s" % (index, problem)
                ev.append("%s %s: %s" % (node, name, msg))
                if entry["cause"] is None:
                    # the link itself works: the PF still takes part in the pairs
                    entry.update(cause=msg, kind="rail")
        entry["ok"] = entry["link_ok"] and entry["gid_ok"] and cable is not None and entry["kind"] != "cabling"
        out.append(entry)
    return {"node": node, "errors": errors, "pfs": out}


def cause_is_link_up(pf):
    """The PF's netdev is up (so a line rate applies to it)."""
    return pf.get("operstate") == "up"


# --------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------

_END_KEYS = ("node", "pf", "pci_address", "rdma_device", "switch", "port", "gid_index", "ipv4", "speed_mbps",
             "ok", "cause", "gpu", "gpudirect")
# the GPUDirect RDMA modes under which a NIC reads and writes GPU memory
GPU_MODES = ("dmabuf", "peermem")


def _end(p):
    return dict((k, p.get(k)) for k in _END_KEYS)


def rails(nodes_links):
    """``[{name, switch, members: [PF entry per node, in node order]}]``.

    A rail is NIC k of every node on one leaf: PFs cabled to the same switch,
    the k-th of its node's PFs on that switch (PCI address order).  PFs
    without a cabling entry belong to no rail."""
    by_key, order = {}, []
    for nl in nodes_links:
        per_switch = {}
        for p in sorted(nl.get("pfs") or [], key=lambda x: x["pci_address"]):
            if not p.get("switch"):
                continue
            k = per_switch.get(p["switch"], 0)
            per_switch[p["switch"]] = k + 1
            key = (p["switch"], k)
            if key not in by_key:
                by_key[key] = []
                order.append(key)
            by_key[key].append(p)
    multi = set(sw for sw, k in order if k > 0)
    out = []
    for key in sorted(order):
        sw, k = key
        out.append({"name": "%s/%d" % (sw, k) if sw in multi else sw, "switch": sw, "members": by_key[key]})
    return out


def plan_pairs(nodes_links, mode="ring", port_base=18515, gpu_memory=True):
    """Rounds of ``ib_write_bw`` pairs over the rails of ``nodes_links`` (the
    ``link_check`` results of the nodes taking part, in play order).

    Returns ``{mode, rails, rounds, untested}``: ``rounds`` is a list of
    rounds, each a list of pairs ``{id, round, rail, port, client, server,
    blocked}``; ``port`` is the server's TCP port (``port_base`` + rail
    index, unique per server within a round); ``blocked`` names the end whose
    link or GID check failed (the pair is not run).  ``untested`` lists the
    rails with a single node.

    With ``gpu_memory``, a pair whose two ends are each a GPU's rail on a
    node with GPUDirect RDMA runs from GPU memory (``memory`` ``cuda``, its
    id ending ``:gpu``) in place of host memory: each end reads and writes
    its own GPU, so one run covers the GPU's path and the fabric beyond it.
    Only a pair that falls short from GPU memory runs again from host memory
    (``recheck_rounds``), which tells the GPU's path from the fabric; a pair
    from host memory that falls short runs once more (its id ending
    ``:again``) before the node fails on it."""
    if mode not in PAIR_MODES:
        raise PlanError("rdma_check_pairs must be one of %s, got %r" % (", ".join(PAIR_MODES), mode))
    try:
        port_base = int(port_base)
    except (TypeError, ValueError):
        raise PlanError("rdma_check_port_base must be an integer, got %r" % (port_base,))
    rl = rails(nodes_links)
    if not 1024 <= port_base <= 65535 - len(rl):
        raise PlanError("rdma_check_port_base %d leaves no room for %d rail ports below 65536" % (port_base, len(rl)))
    rounds, untested = [], []
    for idx, rail in enumerate(rl):
        members = rail["members"]
        n = len(members)
        if n < 2:
            for m in members:
                untested.append({"node": m["node"], "pf": m["pf"], "rail": rail["name"],
                                 "reason": "no other node on %s in this run: bandwidth not tested" % rail["name"]})
            continue
        shifts = [1] if mode == "ring" else list(range(1, n))
        for r, s in enumerate(shifts):
            while len(rounds) <= r:
                rounds.append([])
            for i, client in enumerate(members):
                server = members[(i + s) % n]
                blocked = None
                for role, end in (("client", client), ("server", server)):
                    if not end.get("ok"):
                        blocked = "%s %s %s: %s" % (role, end["node"], end["pf"], end.get("cause") or "not usable")
                        break
                rounds[r].append({
                    "id": "%d:%s:%s>%s" % (r + 1, rail["name"], client["node"], server["node"]),
                    "round": r + 1, "rail": rail["name"], "port": port_base + idx,
                    "client": _end(client), "server": _end(server), "blocked": blocked,
                })
    if gpu_memory:
        # a pair not run (an end failed its link check) is named as from host memory
        rounds = [[dict(p, id=p["id"] + ":gpu", memory="cuda") if _on_gpus(p) and not p["blocked"] else p
                   for p in pairs]
                  for pairs in rounds]
    return {"mode": mode, "rails": [{"name": x["name"], "switch": x["switch"],
                                     "nodes": [m["node"] for m in x["members"]]} for x in rl],
            "rounds": rounds, "untested": untested}


def _on_gpus(pair):
    """Both ends of ``pair`` a GPU's rail on a node with GPUDirect RDMA."""
    return bool(pair["client"].get("gpu") and pair["server"].get("gpu")
                and pair["client"].get("gpudirect") and pair["server"].get("gpudirect"))


AGAIN = ":again"


def recheck_rounds(plan, gated):
    """The rounds after ``plan``'s that run again the pairs of its rounds
    that fell short (status ``fail`` in ``gated``, the ``pair_result`` of
    every node's pairs of this plan): a pair from GPU memory, whatever made
    it fail, from host memory (its id ending ``:host``), which tells the
    GPU's path from the fabric; a pair from host memory that ran and measured
    under the gate, once more as it ran (``again``, its id ending
    ``:again``), so that one stall of a node or a link does not fail the
    node (``summary`` fails it when the second run falls short too). A pair
    that could not run or whose run failed is not run again: its error
    repeats. Each pair is in a round of its own round's number among these,
    so that no NIC sends or receives twice at once as in the plan's rounds.
    ``[]`` when every pair met the gate (a healthy rack runs each pair
    once)."""
    planned = dict((p["id"], p) for pairs in plan.get("rounds") or [] for p in pairs)
    by_round = {}
    for g in gated or []:
        first = planned.get(g.get("id"))
        if first is None or g.get("status") != "fail":
            continue
        if first.get("memory") == "cuda":
            pair = dict((k, v) for k, v in first.items() if k != "memory")
            pair["id"] = first["id"][:-len(":gpu")] + ":host"
        elif g.get("bw_gbps") is not None:
            pair = dict(first, id=first["id"] + AGAIN, again=True)
        else:
            continue
        by_round.setdefault(pair["round"], {})[pair["id"]] = pair
    start = len(plan.get("rounds") or []) + 1
    out = []
    for i, number in enumerate(sorted(by_round)):
        out.append([dict(p, round=start + i) for _pid, p in sorted(by_round[number].items())])
    return out


# --------------------------------------------------------------------------
# command lines
# --------------------------------------------------------------------------

# the ib_write_bw settings (rdma_check_perftest) and the inventory variable
# each comes from, with the least value it takes
PERFTEST_INPUTS = (("size", "rdma_check_message_size", 1), ("duration", "rdma_check_duration", 0),
                   ("iterations", "rdma_check_iterations", 1), ("qps", "rdma_check_qps", 1))


def _whole(value):
    """``value`` as a whole number (an int or its digits, a sign allowed),
    else None; booleans are not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() and text.count("-") <= 1 and not text.endswith("-") else None


def input_problems(perftest, share):
    """Layer 9's test settings, each named by its variable with its value,
    before any pair runs: ``[]`` when they hold. ``perftest`` is the role's
    rdma_check_perftest (size, duration, iterations, qps, traffic_class),
    ``share`` rdma_check_gate_share."""
    o = perftest or {}
    problems = []
    try:
        check_share(share)
    except PlanError:
        problems.append("rdma_check_gate_share is %r, not a number in (0, 1]" % (share,))
    for key, name, least in PERFTEST_INPUTS:
        if key not in o:
            continue
        n = _whole(o[key])
        if n is None or n < least:
            problems.append("%s is %r, not a whole number >= %d" % (name, o[key], least))
    tc = o.get("traffic_class")
    if tc is not None and str(tc) != "":
        n = _whole(tc)
        if n is None or not 0 <= n <= 255:
            problems.append("rdma_check_traffic_class is %r, not null or 0-255" % (tc,))
    return problems


def perftest_options(perftest):
    """``perftest`` with its numbers as ints, for every round; a setting that
    :func:`input_problems` rejects raises :class:`PlanError` naming it."""
    problems = input_problems(perftest, DEFAULT_SHARE)
    if problems:
        raise PlanError("; ".join(problems))
    o = dict(perftest or {})
    for key, _name, _least in PERFTEST_INPUTS:
        if key in o:
            o[key] = _whole(o[key])
    if o.get("traffic_class") is not None and str(o["traffic_class"]) != "":
        o["traffic_class"] = _whole(o["traffic_class"])
    else:
        o["traffic_class"] = None
    return o


def perftest_argv(pair, side, options):
    """The ``ib_write_bw`` argv of one side (``server`` or ``client``) of a
    pair.  ``options``: ``command`` (default ib_write_bw), ``size``,
    ``duration`` (``-D`` seconds; 0 uses ``iterations``), ``iterations``,
    ``qps``, ``traffic_class`` (``--tclass``, or ``-T`` with rdma_cm;
    None omits it), ``rdma_cm``, ``extra_args``."""
    if side not in ("server", "client"):
        raise PlanError("side must be server or client, got %r" % (side,))
    end = pair[side]
    o = options or {}
    argv = [str(o.get("command") or "ib_write_bw"), "-d", str(end["rdma_device"]), "-i", "1"]
    if not o.get("rdma_cm"):
        argv += ["-x", str(end["gid_index"])]
    argv += ["-s", str(int(o.get("size") or 65536))]
    if int(o.get("duration") or 0) > 0:
        argv += ["-D", str(int(o["duration"]))]
    else:
        argv += ["-n", str(int(o.get("iterations") or 5000))]
    if int(o.get("qps") or 1) > 1:
        argv += ["-q", str(int(o["qps"]))]
    # perftest's own unit (MiB/s, two decimals): --report_gbits prints Gb/s to
    # two decimals, 10 Mb/s steps, too coarse to gate a link of a few tens of Mb/s
    argv += ["-F", "-p", str(int(pair["port"]))]
    tc = o.get("traffic_class")
    if tc is not None and str(tc) != "":
        argv += (["-R", "-T", str(int(tc))] if o.get("rdma_cm") else ["--tclass=%d" % int(tc)])
    elif o.get("rdma_cm"):
        argv += ["-R"]
    if pair.get("memory") == "cuda":
        # the end's own GPU by its bus address (CUDA's numbering of the GPUs
        # need not be nvidia-smi's); DMA-BUF where that is the node's way
        argv.append("--use_cuda_bus_id=%s" % end["gpu"]["pci_address"])
        if end.get("gpudirect") == "dmabuf":
            argv.append("--use_cuda_dmabuf")
    argv += [str(a) for a in (o.get("extra_args") or [])]
    if side == "client":
        argv.append(str(pair["server"]["ipv4"]))
    return argv


def round_pairs(plan, index, node):
    """``(serving, sending)``: the pairs of round ``index`` (from 0) of
    ``plan`` that ``node`` serves and that it sends on (as client), blocked
    ones included."""
    rounds = (plan or {}).get("rounds") or []
    if not 0 <= int(index) < len(rounds):
        raise PlanError("round %r is not in the plan (%d rounds)" % (index, len(rounds)))
    pairs = rounds[int(index)]
    return ([p for p in pairs if p["server"]["node"] == node],
            [p for p in pairs if p["client"]["node"] == node])


def server_specs(serving, options):
    """The servers of a node's pairs that run: ``[{port, argv}]``."""
    return [{"port": p["port"], "argv": perftest_argv(p, "server", options)} for p in serving if not p.get("blocked")]


def client_specs(sending, options, not_listening=None):
    """The clients of a node's pairs that run: ``[{id, argv}]``; with
    ``not_listening`` (server node to the ports that did not listen), not
    those whose server did not."""
    skip = not_listening or {}
    return [{"id": p["id"], "argv": perftest_argv(p, "client", options)} for p in sending
            if not p.get("blocked") and p["port"] not in skip.get(p["server"]["node"], ())]


def gate_round(sending, clients, servers_of, share=DEFAULT_SHARE):
    """The ``pair_result`` of each pair a node sent on in one round.
    ``clients`` is the node's client results (``[{id, rc, stdout, ...}]``);
    ``servers_of(node)`` gives the server node's ``(not_listening,
    servers)`` of the round: the ports that did not listen and the servers'
    results (``[{port, rc, stderr, ...}]``)."""
    by_id = dict((c.get("id"), c) for c in clients or [])
    out = []
    for pair in sending:
        not_listening, servers = servers_of(pair["server"]["node"])
        server_job = next((s for s in servers or [] if s.get("port") == pair["port"]), None)
        listening = pair["port"] not in [x.get("port") for x in not_listening or []]
        out.append(pair_result(pair, by_id.get(pair["id"]), server_job, share, listening))
    return out


# --------------------------------------------------------------------------
# the gate
# --------------------------------------------------------------------------

def check_share(share):
    try:
        s = float(share)
    except (TypeError, ValueError):
        raise PlanError("rdma_check_gate_share must be a number in (0, 1], got %r" % (share,))
    if not 0 < s <= 1:
        raise PlanError("rdma_check_gate_share must be in (0, 1], got %r" % (share,))
    return s


def gate(bw_gbps, client_speed_mbps, server_speed_mbps, share=DEFAULT_SHARE):
    """``{line_gbps, threshold_gbps, passed}``: the line rate is the slower
    end's link speed; the pair passes at ``bw >= line x share``."""
    s = check_share(share)
    speeds = [float(x) for x in (client_speed_mbps, server_speed_mbps) if x]
    if not speeds:
        raise PlanError("no link speed known for either end")
    line = min(speeds) / 1000.0
    # kept to 0.1 Mb/s: links of a few tens of Mb/s (emulated ones) are gated too
    threshold = round(line * s, 4)
    return {"line_gbps": line, "threshold_gbps": threshold, "passed": float(bw_gbps) >= threshold}


def rate_text(gbps):
    """A rate as people read it: Gb/s with two decimals, or Mb/s below 1 Gb/s."""
    return "%.2f Gb/s" % gbps if gbps >= 1 else "%.1f Mb/s" % (gbps * 1000)


def pair_label(pair):
    c, s = pair["client"], pair["server"]
    if pair.get("memory") == "cuda":
        return "%s GPU %s via %s -> %s GPU %s via %s (%s %s <-> %s %s, from GPU memory)" % (
            c["node"], c["gpu"]["pci_address"], c["pf"], s["node"], s["gpu"]["pci_address"], s["pf"],
            c.get("switch"), c.get("port"), s.get("switch"), s.get("port"))
    return "%s %s -> %s %s (%s %s <-> %s %s%s)" % (
        c["node"], c["pf"], s["node"], s["pf"], c.get("switch"), c.get("port"), s.get("switch"), s.get("port"),
        ", run again" if pair.get("again") else "")


def _tail(text, n=3):
    lines = [x.strip() for x in str(text or "").splitlines() if x.strip()]
    return lines[-n:]


def _job(job):
    """(finished, rc, stdout, stderr) of an async_status or command result."""
    job = job or {}
    if job.get("skipped"):
        return False, None, "", ""
    finished = bool(job.get("finished", "rc" in job))
    rc = job.get("rc")
    return finished, rc, job.get("stdout") or "", job.get("stderr") or job.get("msg") or ""


def pair_result(pair, client_job, server_job=None, share=DEFAULT_SHARE, listening=True):
    """The result of one pair from the client's (and server's) job results.

    Returns the pair with ``status`` (``pass``, ``fail`` or ``blocked``),
    ``bw_gbps``, ``line_gbps``, ``threshold_gbps``, ``share``, ``message``
    and ``evidence`` (stderr lines of both sides)."""
    s = check_share(share)
    res = dict(pair)
    res.update(status="fail", bw_gbps=None, line_gbps=None, threshold_gbps=None, share=s, evidence=[])
    label = pair_label(pair)
    if pair.get("blocked"):
        res.update(status="blocked", message="%s: not tested, %s" % (label, pair["blocked"]))
        return res
    sfin, src, sout, serr = _job(server_job)
    snode = pair["server"]["node"]
    if server_job is not None and (server_job.get("stderr") or "").strip():
        res["evidence"] += ["server %s: %s" % (snode, x) for x in _tail(server_job["stderr"])]
    elif server_job is not None and sfin and src not in (0, None):
        res["evidence"].append("server %s: exited rc %s%s" % (snode, src, " (timeout)" if src in (124, 137) else ""))
    elif server_job is not None and not sfin and not server_job.get("skipped"):
        res["evidence"].append("server %s: still running at the end of the round (stopped)" % snode)
    if not listening:
        res["message"] = "%s: the ib_write_bw server on %s did not listen on port %d%s" % (
            label, pair["server"]["node"], pair["port"], (": " + "; ".join(_tail(serr, 2))) if serr.strip() else "")
        return res
    fin, rc, out, err = _job(client_job)
    if err.strip():
        res["evidence"] += ["client %s: %s" % (pair["client"]["node"], x) for x in _tail(err)]
    if not fin:
        res["message"] = "%s: ib_write_bw did not finish in time" % label
        return res
    if rc == 124:
        res["message"] = "%s: ib_write_bw timed out (killed by timeout)" % label
        return res
    if rc != 0:
        gpu = None
        if pair.get("memory") == "cuda":
            for side, node, text in (("client", pair["client"]["node"], out + "\n" + err),
                                     ("server", snode, sout + "\n" + serr)):
                try:
                    said = perf_parsers.cuda_error_text(perf_parsers.parse_perftest_cuda(text))
                except ValueError as exc:
                    said = str(exc)
                if said:
                    gpu = "%s %s: %s" % (side, node, said)
                    break
        res["message"] = "%s: ib_write_bw failed (rc %s): %s" % (
            label, rc, gpu or "; ".join(_tail(err, 2)) or "no error output")
        return res
    try:
        parsed = perf_parsers.parse_ib_write_bw(out)
    except ValueError as exc:
        res["message"] = "%s: cannot read the ib_write_bw output: %s" % (label, exc)
        return res
    row = parsed.get("last")
    if not row:
        res["message"] = "%s: ib_write_bw printed no result row" % label
        return res
    # at the precision perftest printed it (0.01 MiB/s is 0.08 Mb/s)
    bw = round(perf_parsers.perftest_to_gbps(row["bw_average"], parsed["units"]), 6)
    g = gate(bw, pair["client"].get("speed_mbps"), pair["server"].get("speed_mbps"), s)
    res.update(bw_gbps=bw, line_gbps=g["line_gbps"], threshold_gbps=g["threshold_gbps"],
               mtu=parsed.get("mtu"), status="pass" if g["passed"] else "fail")
    res["message"] = "%s: %s %s the gate of %s (%g%% of %s line rate)" % (
        label, rate_text(bw), "meets" if g["passed"] else "is under", rate_text(g["threshold_gbps"]),
        round(s * 100, 2), rate_text(g["line_gbps"]).replace(".00 Gb/s", " Gb/s"))
    return res


# --------------------------------------------------------------------------
# results and the doctor
# --------------------------------------------------------------------------

def _pf_failure(p):
    return "%s (%s, %s, cabled to %s): %s" % (_pf_label(p), p["pci_address"], p.get("rdma_device") or "no RDMA device",
                                              cabled_port(p), p["cause"])


def _ends(pair):
    return (pair["client"]["node"], pair["client"]["pci_address"], pair["server"]["node"],
            pair["server"]["pci_address"])


def host_memory_first(pairs):
    """``pairs`` with those from host memory first, each part in its order:
    a fabric problem explains the runs from GPU memory too."""
    pairs = pairs or []
    return [p for p in pairs if p.get("memory") != "cuda"] + [p for p in pairs if p.get("memory") == "cuda"]


def _same_pair_from_host_memory(host):
    """What the same pair did from host memory, which tells the GPU path
    from the fabric."""
    if host is None:
        return "the same pair did not run from host memory"
    if host["status"] == "pass":
        return ("from host memory the same pair gives %s, meeting the gate: the GPU's path (GPUDirect RDMA, layer 5; "
                "ACS on the PCIe switch, layer 3), not the fabric" % rate_text(host["bw_gbps"]))
    return "from host memory the same pair fails too: the fabric first (%s)" % host.get("message")


def summary(links, pairs=None, untested=None, share=DEFAULT_SHARE, bandwidth=True):
    """A node's layer 9 results (the fact ``rdma_check_results``).

    ``links`` is the node's ``link_check`` result; ``pairs`` the
    ``pair_result`` of every pair the node ran as client; ``untested`` the
    plan's entries for this node.  ``failures`` are the node's own: PFs
    whose link or GID check failed, pairs it sent on that failed; pairs not
    run because of the peer, and rails without a peer, are ``warnings``.
    A pair from host memory that fell short and ran again (``recheck_rounds``)
    fails only when its second run falls short too, naming both; when the
    second meets the gate the pair passes, both runs kept in ``pairs``."""
    node = links["node"]
    failures = list(links.get("errors") or [])
    failures += [_pf_failure(p) for p in links.get("pfs") or [] if p.get("cause")]
    warnings = []
    host_runs = dict((_ends(p), p) for p in pairs or [] if p.get("memory") != "cuda" and not p.get("again"))
    again = dict((p["id"][:-len(AGAIN)], p) for p in pairs or [] if p.get("again"))
    for p in host_memory_first(pairs):
        if p.get("again"):
            continue   # judged with the run it repeats
        if p["status"] == "fail" and p.get("memory") == "cuda":
            failures.append("%s; %s" % (p["message"], _same_pair_from_host_memory(host_runs.get(_ends(p)))))
        elif p["status"] == "fail" and p.get("id") in again:
            # short once and met the gate on its second run: the pair passes, both runs in its pairs
            if again[p["id"]]["status"] != "pass":
                failures.append("%s; %s" % (p["message"], again[p["id"]]["message"]))
        elif p["status"] == "fail":
            failures.append(p["message"])
        elif p["status"] == "blocked" and p["client"]["ok"]:
            warnings.append(p["message"])
    warnings += ["%s %s: %s" % (u["node"], u["pf"], u["reason"]) for u in untested or [] if u["node"] == node]
    warnings += [p["warning"] for p in links.get("pfs") or [] if p.get("warning")]
    return {
        "node": node, "gate_share": check_share(share), "bandwidth_tested": bool(bandwidth),
        "links": links.get("pfs") or [], "pairs": pairs or [], "failures": failures, "warnings": warnings,
        "passed": not failures,
    }
