# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 8, the host RoCE QoS: every selected PF as the RoCE intent wants
(trust DSCP, PFC, ECN, RoCE v2, TOS, MTU), its settings kept across a boot,
and, when the switches were checked in the same run, each cabled PF against
its switch port (plugin_utils/roce_host/fabric_chain.py). Reads roce_qos' gathered
answer from the node's nic_facts (its qos option) and the boot unit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import cabling as cabling_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.roce_host import fabric_chain
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result

LAYER = 8
INTENT = ("roce_host_pfs", "roce_host_roce", "roce_host_roce_mode", "roce_host_tos", "roce_host_rdma_port",
          "roce_host_firmware_query", "roce_host_sysfs_root", "roce_host_persist", "roce_host_unit_name",
          "roce_host_chain", "roce_host_cabling", "roce_host_qos_tool", "roce_host_boot_paths", "roce_host_boot_units")


def options(intent, host):
    """roce_qos' options for the node, as the role's converge passes them."""
    return {"node": host, "pfs": list(intent.get("roce_host_pfs") or []), "config": intent.get("roce_host_roce"),
            "roce_mode": intent.get("roce_host_roce_mode"), "tos": intent.get("roce_host_tos"),
            "config_name": "gpufabric_roce",
            "rdma_port": int(intent.get("roce_host_rdma_port") or 1),
            "firmware_query": bool(intent.get("roce_host_firmware_query", True)),
            "qos_tool": intent.get("roce_host_qos_tool") or "auto"}


def reads(intent, host):
    """The node's QoS as roce_qos gathers it, and the boot unit. Also the
    boot files as the role's QoS call inspects them (role vars), so that a
    site run whose first read carries this layer's (nic_facts also_layers)
    answers the role's call as well (plugins/action/roce_qos.py)."""
    want = {"sysfs_root": intent["roce_host_sysfs_root"], "qos": options(intent, host)}
    if intent.get("roce_host_persist", True):
        want["units"] = [intent["roce_host_unit_name"] + ".service"]
        want["inspect_files"] = list(intent.get("roce_host_boot_paths") or [])
        want["inspect_units"] = list(intent.get("roce_host_boot_units") or [])
    return {"nic_facts": want, "switches": True}


def check(reading, intent, host):
    """``reading``: {nic_facts, switches}; ``switches``: the registered
    roce_switch gathered answers of the leaf switches checked earlier in
    this run, by name (the chain compares each cabled PF with its port)."""
    qos = _qos(reading)
    persist = bool(intent.get("roce_host_persist", True))
    unit = intent["roce_host_unit_name"]
    enabled = (((reading.get("nic_facts") or {}).get("units") or {}).get(unit + ".service") == "enabled"
               if persist else None)
    try:
        chain = _chain(reading, intent, host, qos)
    except roce_qos.RoceQosError as exc:
        return result(LAYER, "fail", "gpufabric_roce: %s" % exc, [], "fix gpufabric_roce in the inventory")
    return layer_result(host, qos, enabled, persist, unit, chain)


def details(reading, intent, host):
    """What the check saw beyond its record: the chain of this node
    ({differences, unchecked, checked}, None without roce_host_chain)."""
    try:
        return {"chain": _chain(reading, intent, host, _qos(reading))}
    except roce_qos.RoceQosError as exc:
        return {"chain": None, "error": str(exc)}


def _qos(reading):
    return (reading.get("nic_facts") or {}).get("qos") or {"failed": True, "msg": "the node's read has no QoS answer"}


def _chain(reading, intent, host, qos):
    """Each PF of ``host`` cabled to a switch read in this run against that
    switch port (fabric_chain.compare); links to other switches are listed
    as unchecked."""
    if not intent.get("roce_host_chain", True):
        return None
    cabling = intent.get("roce_host_cabling") or []
    # each cable where LLDP shows it (the leaves' tables and the node's own
    # neighbours, as this run read them), so that the PF is compared with
    # the port its cable really reaches
    cabling = cabling_check.as_found(cabling, {host: reading.get("nic_facts") or {}}, reading.get("switches") or {})
    cabled = set(c.get("switch") for c in cabling if c.get("node") == host)
    switches = dict((k, v) for k, v in (reading.get("switches") or {}).items() if k in cabled)
    return fabric_chain.compare(intent.get("roce_host_roce") or {}, cabling, switches, {host: qos}, [host])


# --------------------------------------------------------------------------

def layer_result(host, check, unit_enabled=None, persist=True, unit_name="gpufabric-roce-qos", chain=None):
    """Layer 8 for the doctor: ``{layer, name, status, reason, evidence,
    remediation}``.

    ``check``: the registered result of ``roce_qos`` with ``state: gathered``
    and a config (``failed``/``msg``, ``drift``, ``not_settable``,
    ``notes``); ``unit_enabled``: whether the boot unit is enabled;
    ``chain``: this host's part of :func:`fabric_chain.compare` (its
    differences between the PF and the cabled switch port).

    The order of causes: the host cannot be read; the PF differs from the
    intent (the reason is the first difference); a difference along the
    cabling (switch port vs PF: the switch side is the first link, and the
    remediation names the layer that repairs it); the QoS would be lost at
    the next boot; warnings (inbox firmware ECN off on the priority); pass.

    The layer is ConnectX's: when ``check`` says every selected PF is of
    another vendor (``not_applicable``, from roce_qos) it is 'skipped' with
    that reason (the report shows ``-``); PFs left out of a mixed selection
    (``left_out_text``) are named in the evidence, and in the reason of a
    pass."""
    layer, name = LAYER, "roce_host"
    fix_host = "run roce_host (tag layer08) on %s; use --check --diff to see the commands first" % host
    if check.get("not_applicable") and not check.get("failed"):
        # every selected PF is of another vendor than ConnectX: shown as '-'
        return result(layer, "skipped", check["not_applicable"],
                      ["%s (%s): not a ConnectX, this layer does not apply" % (p["pci_address"], p.get("vendor_device"))
                       for p in check.get("left_out") or []])
    res = _layer_result(host, check, unit_enabled, persist, unit_name, chain, layer, fix_host)
    if check.get("left_out_text") and not check.get("failed"):
        res["evidence"] = list(res["evidence"]) + [check["left_out_text"]]
        if res["status"] == "pass":
            res["reason"] = "%s (%s)" % (res["reason"], check["left_out_text"])
    return res


def _layer_result(host, check, unit_enabled, persist, unit_name, chain, layer, fix_host):
    if check.get("failed"):
        return result(layer, "fail", "%s: host QoS could not be read: %s" % (host, check.get("msg", "unknown error")),
                      [], "fix the cause above (mlnx-tools installed, RDMA device present: layer 5), then run "
                      "roce_host (tag layer08)")
    drift = list(check.get("drift") or [])
    chain = chain or {}
    all_chain = list(chain.get("differences") or [])
    chain_diffs = [d for d in all_chain if d.get("severity", "fail") == "fail"]
    evidence = (["%s %s" % (host, d) for d in drift] + [d["text"] for d in all_chain]
                + list(chain.get("unchecked") or []) + list(check.get("notes") or []))
    warnings = (["%s %s" % (host, t) for t in check.get("not_settable") or []]
                + [d["text"] for d in all_chain if d.get("severity") == "warn"])
    evidence += [w for w in warnings if w not in evidence]
    if drift:
        cmds = list(check.get("fix_commands") or [])
        if cmds:
            fix_host = "%s; it runs (%s): %s" % (fix_host, check.get("qos_tool") or "mlnx_qos", "; ".join(cmds))
        return result(layer, "fail", "%s %s" % (host, drift[0]), evidence, fix_host)
    if chain_diffs:
        first = chain_diffs[0]
        return result(layer, "fail", first["text"], evidence, first.get("remediation") or fix_host)
    if persist and unit_enabled is False:
        return result(layer, "fail", "%s: host QoS will be lost at the next boot: %s.service is not enabled"
                      % (host, unit_name), evidence, fix_host + " (installs and enables the unit)")
    pfs = check.get("gathered") or {}
    if warnings:
        return result(layer, "warn", warnings[0], evidence,
                      "set ROCE_CC_PRIO_MASK_P1, CNP_DSCP_P1 and CNP_802P_PRIO_P1 with mlxconfig (layer 4: "
                      "nic_firmware_extra_params) and reboot")
    ports = " and their switch ports" if chain.get("checked") else ""
    return result(layer, "pass", "%d PF(s) match the RoCE intent%s" % (len(pfs), ports), evidence)
