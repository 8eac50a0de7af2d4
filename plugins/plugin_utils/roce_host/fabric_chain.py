# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cross-layer RoCE chain: for every cabled PF, the switch port it is
cabled to (layer 7, as ``gpufabric.stack.roce_switch`` ``state: gathered``
reads it) against the PF's host QoS and MTU (layer 8, as
``gpufabric.stack.roce_qos`` ``state: gathered`` reads it).

Along one cable the chain is switch port -> PF.  Both ends must agree on the
PFC priorities, the trust mode, the priority of the RoCE and CNP DSCPs and ECN
on the RoCE priority, and the switch port's MTU must carry the PF's.  Each
difference names both ends, like ``node03 ens2f0np1 PFC {3} vs leaf2
Ethernet1/7 PFC {}``, and which end departs from the intent: the switch port
is the first link of the chain, so differences where the switch departs come
first, then those where only the host does, each in cabling order.

Plain Python, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q

FIELD_ORDER = ("pfc", "trust", "dscp", "mtu", "ecn")


def port_key(name):
    """A port name in a form the NOSes' spellings share: ``Ethernet1/7``,
    ``Eth1/7``, ``ethernet 1/7`` -> ``1/7``; ``Ethernet7``, ``Et7`` -> ``7``;
    ``swp7`` -> ``swp7``."""
    s = re.sub(r"\s+", "", str(name)).lower()
    return re.sub(r"^(ethernet|eth|et|e)(?=\d)", "", s)


def _switch_model(data):
    """The gathered data model from a roce_switch result or the model itself;
    (model, error message)."""
    if not isinstance(data, dict):
        return None, "no data"
    if data.get("failed"):
        return None, "could not be read: %s" % data.get("msg", "unknown error")
    if isinstance(data.get("gathered"), dict):
        data = data["gathered"]
    if not isinstance(data.get("ports"), dict):
        return None, "no gathered port data"
    return data, None


def _host_states(data):
    """{pf name: state} from a roce_qos result or the mapping itself; (states, error)."""
    if not isinstance(data, dict):
        return None, "no data"
    if data.get("failed"):
        return None, "could not be read: %s" % data.get("msg", "unknown error")
    for key in ("gathered", "before"):
        if isinstance(data.get(key), dict):
            return data[key], None
    return data, None


def _find_pf(states, link):
    pci = str(link.get("pci_address") or "").lower()
    if pci:
        for st in states.values():
            if isinstance(st, dict) and str(st.get("pci_address") or "").lower() == pci:
                return st
    st = states.get(link.get("pf"))
    return st if isinstance(st, dict) else None


def _find_port(model, port):
    ports = model["ports"]
    if port in ports:
        return port, ports[port]
    key = port_key(port)
    for name, view in ports.items():
        if port_key(name) == key:
            return name, view
    return None, None


def _host_ecn(state, prio):
    ecn = state.get("ecn")
    if not ecn:
        return None
    vals = [(ecn.get(p) or [None] * 8)[prio] for p in Q.ECN_PROTOS]
    if None in vals:
        return None
    return "on" if all(v == 1 for v in vals) else "off"


def _switch_ecn(view, prio):
    e = view.get("ecn")
    return "on" if e and int(e.get("tc", -1)) == prio else "off"


def compare(intent, cabling, switches, hosts, nodes=None):
    """Walk the cabling plan.

    ``intent``: the inventory's ``gpufabric_roce``; ``cabling``: its
    ``gpufabric_cabling`` (node, pf, pci_address, switch, port), or the
    cables as LLDP found them (rdma_check/cabling.py ``as_found``: an entry
    that moved has ``planned_switch`` and ``planned_port``, and its texts
    say so);
    ``switches``: {switch: roce_switch gathered result or its ``gathered``
    model}; ``hosts``: {node: roce_qos gathered result or {pf: state}};
    ``nodes``: only links of these nodes (default every node).

    Returns ``{"differences": [...], "unchecked": [...], "checked": N}``:
    differences ordered first link first (see the module docstring), each
    ``{node, pf, switch, port, field, host, switch_value, departs, layer,
    severity, text, remediation}`` where ``departs`` is ``switch``, ``host``, ``both`` or
    ``neither`` (which end differs from the intent), ``layer`` is 7 when the
    switch end departs, else 8, and ``severity`` is ``warn`` for ECN the inbox
    driver leaves to the firmware (it cannot be set at run time), else ``fail``; ``unchecked`` names links with an end that was
    not read; ``checked`` counts the links compared."""
    want = Q.normalise_intent(intent, "gpufabric_roce")
    prio = want["priority"]
    host_mtu = want["mtu"]
    dscps = sorted(set([want["dscp"], want["cnp_dscp"]]))
    intent_dscp = {want["dscp"]: prio, want["cnp_dscp"]: want["cnp_priority"]}
    intent_ecn = "on" if want["ecn"] else "off"
    diffs, unchecked, checked = [], [], 0
    switches = switches or {}
    hosts = hosts or {}
    for index, link in enumerate(cabling or []):
        node, pf, sw, port = link.get("node"), link.get("pf"), link.get("switch"), link.get("port")
        if nodes is not None and node not in nodes:
            continue
        label = "%s %s -> %s %s" % (node, pf, sw, port)
        if link.get("planned_port") is not None:
            label += " (where LLDP finds the cable; the plan says %s %s)" % (link.get("planned_switch"),
                                                                             link.get("planned_port"))
        states, err = _host_states(hosts.get(node)) if node in hosts else (None, "was not read in this run")
        if states is None:
            unchecked.append("%s: %s %s" % (label, node, err))
            continue
        state = _find_pf(states, link)
        if state is None:
            unchecked.append("%s: %s has no data for %s (%s)" % (label, node, pf, link.get("pci_address")))
            continue
        model, err = _switch_model(switches.get(sw)) if sw in switches else (None, "was not read in this run")
        if model is None:
            unchecked.append("%s: %s %s" % (label, sw, err))
            continue
        port_name, view = _find_port(model, port)
        if view is None:
            unchecked.append("%s: %s has no data for port %s (not among its GPU-facing ports%s)" % (
                label, sw, port, ": layer 7 sets no RoCE QoS there" if link.get("planned_port") is not None else ""))
            continue
        checked += 1
        pf_name = state.get("name") or pf
        g = model.get("global") or {}
        items = []
        # PFC
        sprio = g.get("pfc_priority")
        s_pfc = [int(sprio)] if view.get("pfc") and sprio is not None else []
        h_pfc = sorted(state.get("pfc_priorities") or [])
        if h_pfc != s_pfc:
            items.append(("pfc", Q.fmt_set(h_pfc), Q.fmt_set(s_pfc), h_pfc != [prio], s_pfc != [prio],
                          "PFC %s" % Q.fmt_set(h_pfc), "PFC %s" % Q.fmt_set(s_pfc)))
        # trust
        h_trust, s_trust = state.get("trust"), view.get("trust")
        if h_trust and s_trust and h_trust != s_trust:
            items.append(("trust", h_trust, s_trust, h_trust != want["trust"], s_trust != want["trust"],
                          "trust %s" % h_trust, "trust %s" % s_trust))
        # DSCP -> priority, where both ends classify by DSCP
        if h_trust == "dscp" and s_trust in ("dscp", "both"):
            smap = g.get("dscp_map") or {}
            for d in dscps:
                hp = Q.dscp_priority(state, d)
                sp = smap.get(str(d), smap.get(d))
                if hp is None or sp is None or int(hp) == int(sp):
                    continue
                items.append(("dscp", hp, sp, hp != intent_dscp[d], int(sp) != intent_dscp[d],
                              "DSCP %d -> priority %s" % (d, hp), "DSCP %d -> priority %s" % (d, sp)))
        # MTU: the switch port must carry the PF's frames
        h_mtu, s_mtu = state.get("mtu"), view.get("mtu")
        if h_mtu is not None and s_mtu is not None and int(s_mtu) < int(h_mtu):
            items.append(("mtu", h_mtu, s_mtu, host_mtu is not None and h_mtu != host_mtu,
                          host_mtu is not None and int(s_mtu) < host_mtu, "MTU %s" % h_mtu, "MTU %s" % s_mtu))
        # ECN on the RoCE priority
        h_ecn, s_ecn = _host_ecn(state, prio), _switch_ecn(view, prio)
        if h_ecn is not None and h_ecn != s_ecn:
            items.append(("ecn", h_ecn, s_ecn, h_ecn != intent_ecn, s_ecn != intent_ecn,
                          "ECN on priority %d %s" % (prio, h_ecn), "ECN marking on TC %d %s" % (prio, s_ecn)))
        # ECN the inbox driver leaves to the firmware cannot be set at run time: a warning
        firmware_ecn = (state.get("ecn") or {}).get("source") == "firmware"
        for field, hv, sv, host_bad, sw_bad, htext, stext in items:
            departs = "both" if host_bad and sw_bad else "switch" if sw_bad else "host" if host_bad else "neither"
            fixes = []
            if sw_bad:
                fixes.append("run roce_switch (tag layer07) on %s" % sw)
            if host_bad or not sw_bad:
                fixes.append("run roce_host (tag layer08) on %s" % node)
            diffs.append({
                "node": node, "pf": pf_name, "switch": sw, "port": port_name, "field": field,
                "host": hv, "switch_value": sv, "departs": departs, "layer": 7 if sw_bad else 8,
                "text": "%s %s %s vs %s %s %s%s" % (node, pf_name, htext, sw, port_name, stext,
                                                    " (its cable is there by LLDP; the plan says %s %s)"
                                                    % (link.get("planned_switch"), link.get("planned_port"))
                                                    if link.get("planned_port") is not None else ""),
                "remediation": " and ".join(fixes),
                "severity": "warn" if field == "ecn" and firmware_ecn and host_bad and not sw_bad else "fail",
                "_order": (0 if sw_bad else 1, index, FIELD_ORDER.index(field)),
            })
    diffs.sort(key=lambda d: d["_order"])
    for d in diffs:
        del d["_order"]
    return {"differences": diffs, "unchecked": unchecked, "checked": checked}
