# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 9, the RDMA fabric: every PF that rdma_check_nics selects with its
link up (netdev and RDMA port) and a RoCE v2 GID, and every ib_write_bw
pair the node sent on (as client, toward its ring successor by default) at
or above rdma_check_gate_share of the slower end's line rate. Read across
nodes by the role's tasks/doctor.yml through the gpufabric.stack.rdma_check
action: the node's links and GIDs (from its nic_facts reading), then the
pairs planned over the nodes whose lower layers passed and run round by
round, handed over as the reading ``{links, pairs, untested}``:

- ``links``: the node's rdma_pairs.link_check result ({node, errors, pfs});
- ``pairs``: the rdma_pairs.pair_result of every pair the node sent on;
- ``untested``: the plan's PFs left without a peer ({node, pf, reason})."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result

LAYER = 9
INTENT = ("rdma_check_gate_share", "rdma_check_doctor_bandwidth")
# the node's LLDP neighbours come in the doctor's one read of the node
# (the cabling check of tasks/doctor.yml takes them from doctor_node.reading)
NODE_READS = {"lldp": True, "pcie": {"topo": True}}

WARN_REMEDIATION = "the pairs named were not measured; fix the other end and run the check again"


def reads(intent, host):
    return {"fabric": "the node's PF links and RoCE v2 GIDs, then ib_write_bw between pairs of nodes "
                      "over the cabling plan (roles/rdma_check/tasks/doctor.yml)"}


def remediation(results):
    """What to do about the first failure of a node's ``summary``."""
    errors = [e for e in results.get("failures") or [] if "gpufabric_" in e]
    rail = next((p for p in results.get("links") or [] if p.get("kind") == "rail"), None)
    if errors and not (rail and rail["cause"] in errors[0]):
        return "fix gpufabric_nics / gpufabric_cabling for this host in the inventory"
    for p in results.get("links") or []:
        if p.get("kind") == "cabling":
            return "%s; then run validate.yml again (LLDP shows the cable as it is)" % p["cabling"]["fix"]
        if p.get("kind") == "rail":
            return ("in gpufabric_cabling give %s %s the GPU below its PCIe switch (gpu: <index>; layer 5's evidence "
                    "lists each GPU's rail), or move the NIC into the slot of the GPU the plan names; then site.yml "
                    "--tags layer14,layer15 numbers the rails and NCCL_IB_HCA from it" % (p["node"], p["pf"]))
        if p.get("kind") == "link":
            if "layer 5" in p["cause"] or "layer 4" in p["cause"]:
                return "the PF is not usable for RoCE: see the layer named in the reason and run its role"
            if (p.get("cabling") or {}).get("status") == "unverified" and "link down" in p["cause"]:
                return ("plug the cable of %s %s into %s: no carrier and no LLDP neighbour at either end, so the "
                        "cable is out or broken (else check the transceiver and that the switch port is up); "
                        "`ip link show %s` on %s" % (p["node"], p["pf"], rdma_pairs.cabled_port(p), p["pf"], p["node"]))
            return ("check the cable and transceiver of %s %s and the switch port %s (is it up, is it the "
                    "port the cabling plan names?); `ip link show %s` and `rdma link show` on %s" % (
                        p["node"], p["pf"], rdma_pairs.cabled_port(p), p["pf"], p["node"]))
        if p.get("kind") == "gid":
            return ("give %s an IPv4 address (RoCE v2 GIDs follow the netdev's addresses) or set "
                    "rdma_check_gid_index / rdma_check_addresses; `show_gids` lists the table" % p["pf"])
    for p in rdma_pairs.host_memory_first(results.get("pairs")):
        if p["status"] == "fail" and p.get("memory") == "cuda":
            c, s = p["client"], p["server"]
            return ("the GPU's own path onto the fabric: on %s and %s check GPUDirect RDMA (layer 5: the mode, "
                    "nvidia_peermem or the open driver's DMA-BUF) and ACS on the PCIe switch of GPU %s / %s (layer 3: "
                    "pci=disable_acs_redir=); validate.yml's layers 3 and 5 show both as evidence" % (
                        c["node"], s["node"], c["gpu"]["pci_address"], s["gpu"]["pci_address"]))
        if p["status"] == "fail" and p.get("bw_gbps") is not None:
            c, s = p["client"], p["server"]
            return ("the pair runs lossy: check the RoCE chain on both ends, host QoS of %s %s and %s %s "
                    "(layer 8: trust dscp, PFC on the RoCE priority; mlnx_qos -i <pf>) and switch ports %s %s "
                    "and %s %s (layer 7); validate.yml names the first link that differs" % (
                        c["node"], c["pf"], s["node"], s["pf"], c.get("switch"), c.get("port"),
                        s.get("switch"), s.get("port")))
        if p["status"] == "fail":
            return ("ib_write_bw could not run over the pair: check that perftest is installed on both nodes, "
                    "the server address is reachable, and the switch MTU fits the RoCE MTU (layer 7)")
    return ""


def verdict(results):
    """The layer 9 record of a node's ``summary`` (rdma_pairs.summary): its
    first own failure, else its first warning (a pair not measured because
    of the peer, a rail without a peer), else the PFs and pairs that passed."""
    evidence = []
    for p in results.get("links") or []:
        evidence += p.get("evidence") or []
    for p in results.get("pairs") or []:
        evidence.append(p["message"])
        evidence += p.get("evidence") or []
    evidence += results.get("warnings") or []
    if results.get("failures"):
        return result(LAYER, "fail", results["failures"][0], evidence, remediation(results))
    if results.get("warnings"):
        return result(LAYER, "warn", results["warnings"][0], evidence, WARN_REMEDIATION)
    links = results.get("links") or []
    pairs = [p for p in results.get("pairs") or [] if p["status"] == "pass"]
    reason = "%d PF(s) up with a RoCE v2 GID" % len(links)
    if results.get("bandwidth_tested", True):
        reason += "; %d pair(s) at or above %g%% of line rate" % (len(pairs), round(results["gate_share"] * 100, 2))
    else:
        reason += "; pairwise bandwidth not tested (turned off)"
    return result(LAYER, "pass", reason, evidence)


def check(reading, intent, host):
    links = reading.get("links")
    if not isinstance(links, dict) or "node" not in links:
        raise ValueError("%s: layer 9's reading has no links of the node (the rdma_check action's phase=links), got %r"
                         % (host, links))
    bandwidth = bool(intent.get("rdma_check_doctor_bandwidth", True))
    share = intent.get("rdma_check_gate_share")
    return verdict(rdma_pairs.summary(links, reading.get("pairs") or [] if bandwidth else [],
                                      reading.get("untested") or [] if bandwidth else [],
                                      rdma_pairs.DEFAULT_SHARE if share is None else share, bandwidth))
