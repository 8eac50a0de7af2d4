# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The platform-neutral RoCE data model of one switch, intent validation and the
diff between two models.

Data model (what ``parsed``/``gathered`` return and what the intent becomes)::

    {"global": {"pfc_priority": 3, "trust": "dscp", "dscp_map": {26: 3, 48: 6},
                "ecn": {"tc": 3, "min_bytes": 150000, "max_bytes": 1500000, "probability": 100},
                "cnp": {"priority": 6, "strict": True}},
     "ports": {"Ethernet1/1": {"mtu": 9216, "pfc": True, "trust": "dscp",
                               "ecn": {...same shape as global ecn...}, "cnp_strict": True}}}

Per port the values are the effective ones (a port inherits switch-wide
settings where the NOS keeps them switch-wide).  ``pfc`` means PFC is active on
the port for ``global.pfc_priority``.  ECN thresholds are bytes with
1 KB = 1000 bytes whatever unit the NOS uses.  Switch priority N is traffic
class N on every NOS (the default SP->TC mapping)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

TRUSTS = ("dscp", "pcp", "both")
STATES = ("merged", "replaced", "overridden", "deleted", "gathered", "rendered", "parsed")
PORT_KEYS = ("mtu", "pfc", "trust", "ecn", "cnp_strict")
GLOBAL_KEYS = ("pfc_priority", "trust", "dscp_map", "ecn", "cnp")
DEFAULT_DSCPS = (26, 48)


class RoceSwitchError(Exception):
    """Bad input or a switch failure; the message names switch and value."""


def default_dscp_map():
    return dict((d, d >> 3) for d in range(64))


def _int(value, what, lo, hi, switch):
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise RoceSwitchError("%s: %s %r is not an integer" % (switch, what, value))
    if isinstance(value, bool) or not lo <= v <= hi:
        raise RoceSwitchError("%s: %s %s is outside %d-%d" % (switch, what, value, lo, hi))
    return v


def _bytes(ecn, key, switch):
    """ECN threshold in bytes from <key>_bytes or <key>_kbytes."""
    if ecn.get(key + "_bytes") is not None:
        return _int(ecn[key + "_bytes"], "ECN %s threshold" % key, 1, 10 ** 9, switch)
    if ecn.get(key + "_kbytes") is not None:
        return _int(ecn[key + "_kbytes"], "ECN %s threshold (KB)" % key, 1, 10 ** 6, switch) * 1000
    raise RoceSwitchError("%s: ECN needs %s_kbytes or %s_bytes" % (switch, key, key))


def normalise_intent(config, driver, ports, switch="switch"):
    """Validate the intent for ``driver`` and return it as a data model.

    ``config``: pfc_priority, trust, dscp_map, ecn {tc, min_kbytes|min_bytes,
    max_kbytes|max_bytes, probability}, cnp {priority, strict}, mtu,
    mtu_per_nos {nos: mtu}, pfc_watchdog (the PFC watchdog on every port with
    PFC: true, false, or absent for the NOS's own practice); ``ports``: names,
    or dicts with name and optional mtu/pfc.  Raises RoceSwitchError naming the
    switch and the value."""
    config = config or {}
    prio = config.get("pfc_priority")
    prio = None if prio is None else _int(prio, "PFC priority", 0, 7, switch)
    trust = config.get("trust", "dscp")
    if trust not in TRUSTS:
        raise RoceSwitchError("%s: trust %r is not one of %s" % (switch, trust, ", ".join(TRUSTS)))
    dmap = {}
    for d, p in (config.get("dscp_map") or {}).items():
        dmap[_int(d, "DSCP", 0, 63, switch)] = _int(p, "priority of DSCP %s" % d, 0, 7, switch)
    ecn = None
    if config.get("ecn"):
        e = config["ecn"]
        ecn = {"tc": _int(e.get("tc", prio if prio is not None else 3), "ECN traffic class", 0, 7, switch),
               "min_bytes": _bytes(e, "min", switch), "max_bytes": _bytes(e, "max", switch),
               "probability": _int(e.get("probability", 100), "ECN probability", 1, 100, switch)}
        if ecn["min_bytes"] > ecn["max_bytes"]:
            raise RoceSwitchError("%s: ECN minimum %d bytes is above the maximum %d bytes"
                                  % (switch, ecn["min_bytes"], ecn["max_bytes"]))
    cnp = None
    if config.get("cnp"):
        c = config["cnp"]
        cnp = {"priority": _int(c.get("priority", 6), "CNP priority", 0, 7, switch),
               "strict": bool(c.get("strict", True))}
    wd = config.get("pfc_watchdog")
    if wd is not None and not isinstance(wd, bool):
        if str(wd).lower() not in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            raise RoceSwitchError("%s: pfc_watchdog %r is not true or false" % (switch, wd))
        wd = str(wd).lower() in ("true", "yes", "on", "1")
    mtu = config.get("mtu")
    per_nos = config.get("mtu_per_nos") or {}
    if mtu is not None:
        mtu = _int(mtu, "MTU", 68, 65535, switch)
        if per_nos.get(driver.nos) is not None:
            mtu = _int(per_nos[driver.nos], "MTU for %s" % driver.nos, 68, 65535, switch)
        if not driver.min_mtu <= mtu <= driver.max_mtu:
            raise RoceSwitchError(
                "%s: MTU %d is outside what %s accepts (%d-%d); set mtu_per_nos.%s to translate it"
                % (switch, mtu, driver.label, driver.min_mtu, driver.max_mtu, driver.nos))
    want_ports = {}
    for entry in ports or []:
        spec = entry if isinstance(entry, dict) else {"name": entry}
        try:
            name = driver.canon_port(str(spec.get("name", "")))
        except ValueError:
            raise RoceSwitchError("%s: port %r is not a %s port name" % (switch, spec.get("name"), driver.label))
        pmtu = spec.get("mtu", mtu)
        if pmtu is not None:
            pmtu = _int(pmtu, "MTU of %s" % name, 68, 65535, switch)
            if not driver.min_mtu <= pmtu <= driver.max_mtu:
                raise RoceSwitchError("%s: MTU %d of %s is outside what %s accepts (%d-%d)"
                                      % (switch, pmtu, name, driver.label, driver.min_mtu, driver.max_mtu))
        want_ports[name] = {"mtu": pmtu if pmtu is not None else driver.default_mtu,
                            "pfc": bool(spec.get("pfc", prio is not None)) and prio is not None,
                            "trust": trust, "ecn": copy.deepcopy(ecn),
                            "cnp_strict": bool(cnp and cnp["strict"])}
    want = {"global": {"pfc_priority": prio, "trust": trust, "dscp_map": dmap, "ecn": ecn, "cnp": cnp},
            "ports": want_ports}
    if wd is not None:  # not in the data model a switch is read into: only an intent says it
        want["global"]["pfc_watchdog"] = wd
    problems = driver.check(want)
    if problems:
        raise RoceSwitchError("%s: %s" % (switch, "; ".join(problems)))
    return want


def scope_of(want):
    """What a read of the switch must report to be compared with ``want``."""
    g = want["global"]
    return {"ports": list(want["ports"]), "dscps": sorted(g["dscp_map"]) or list(DEFAULT_DSCPS),
            "cnp_priority": (g["cnp"] or {}).get("priority", 6)}


def _common(values):
    """Most common value (first seen wins a tie); None for no values."""
    counts, order = {}, []
    for v in values:
        k = json.dumps(v, sort_keys=True)
        if k not in counts:
            order.append((k, v))
        counts[k] = counts.get(k, 0) + 1
    if not order:
        return None
    best = max(order, key=lambda kv: counts[kv[0]])
    return best[1]


def build_model(views, switch, scope=None):
    """The data model from a driver's per-port effective views.

    ``views``: {port: {mtu, trust, pfc_priorities, ecn (dict|None), strict_tcs}};
    ``switch``: keys a NOS keeps switch-wide: dscp_map (effective, {dscp: prio}),
    explicit_dscps, and optionally pfc_priority, trust, ecn, strict_tcs;
    ``scope``: ports, dscps, cnp_priority (defaults: every port with a view,
    the explicit DSCPs plus 26 and 48, priority 6)."""
    scope = scope or {}
    ports = scope.get("ports")
    if ports is None:
        ports = list(views)
    sel = [views[p] for p in ports if p in views]
    if "pfc_priority" in switch:
        prio = switch["pfc_priority"]
    else:
        prio = _common([v["pfc_priorities"][0] for v in sel if len(v["pfc_priorities"]) == 1]
                       or [min(v["pfc_priorities"]) for v in sel if v["pfc_priorities"]])
    trust = switch["trust"] if "trust" in switch else _common([v["trust"] for v in sel])
    ecn = switch["ecn"] if "ecn" in switch else _common([v["ecn"] for v in sel])
    cprio = scope.get("cnp_priority", 6)
    if "strict_tcs" in switch:
        cstrict = cprio in switch["strict_tcs"]
    else:
        cstrict = _common([cprio in v["strict_tcs"] for v in sel])
    dscps = scope.get("dscps")
    if dscps is None:
        dscps = sorted(set(switch.get("explicit_dscps", ())) | set(DEFAULT_DSCPS))
    full = switch.get("dscp_map") or {}
    dmap = dict((d, full[d]) for d in dscps if d in full)
    out_ports = {}
    for p in ports:
        v = views.get(p)
        if v is None:
            continue
        out_ports[p] = {"mtu": v["mtu"], "pfc": prio is not None and prio in v["pfc_priorities"],
                        "trust": v["trust"], "ecn": v["ecn"], "cnp_strict": cprio in v["strict_tcs"]}
    return {"global": {"pfc_priority": prio, "trust": trust, "dscp_map": dmap, "ecn": ecn,
                       "cnp": {"priority": cprio, "strict": bool(cstrict)},
                       "explicit_dscps": sorted(switch.get("explicit_dscps", ()))},
            "ports": out_ports}


def deleted_target(driver, have, ports=None):
    """What ``deleted`` leaves: the NOS defaults for the global settings and for
    ``ports`` (default: every port in ``have``)."""
    g = have["global"]
    cprio = (g.get("cnp") or {}).get("priority", 6)
    dflt = driver.default_map()
    want = {"global": {"pfc_priority": None, "trust": driver.default_trust,
                       "dscp_map": dict((d, dflt[d]) for d in g["dscp_map"] if d in dflt),
                       "ecn": None, "cnp": {"priority": cprio, "strict": driver.default_strict(cprio)}},
            "ports": {}}
    for p in (have["ports"] if ports is None else ports):
        want["ports"][p] = driver.port_default(cprio)
    return want


def changes(want, have, state):
    """What differs, as {"global": {key: (want, have)}, "ports": {port: {key: (want, have)}},
    "dscp_unset": [dscp, ...]}.  ``merged`` only sets what the intent names;
    ``replaced`` also removes DSCP map entries the intent does not name;
    ``overridden`` also resets the RoCE settings (not the MTU) of ports the
    intent does not name; ``deleted`` expects ``want`` from deleted_target."""
    out = {"global": {}, "ports": {}, "dscp_unset": []}
    wg, hg = want["global"], have["global"]
    for k in GLOBAL_KEYS:
        if k == "dscp_map":
            entries = dict((d, p) for d, p in wg["dscp_map"].items() if hg["dscp_map"].get(d) != p)
            if entries:
                out["global"]["dscp_map"] = (entries, dict((d, hg["dscp_map"].get(d)) for d in entries))
            if state in ("replaced", "overridden"):
                out["dscp_unset"] = sorted(d for d in hg.get("explicit_dscps", ()) if d not in wg["dscp_map"])
            continue
        if k == "pfc_priority" and wg[k] is None and state not in ("deleted",):
            continue
        if wg[k] != hg[k] and not (k in ("ecn", "cnp") and wg[k] is None and state not in ("deleted",)):
            out["global"][k] = (wg[k], hg[k])
    for p, wp in want["ports"].items():
        hp = have["ports"].get(p)
        diff = {}
        for k in PORT_KEYS:
            hv = hp.get(k) if hp else None
            if wp.get(k) != hv:
                diff[k] = (wp.get(k), hv)
        if diff:
            out["ports"][p] = diff
    return out


def is_empty(ch):
    return not ch["global"] and not ch["ports"] and not ch["dscp_unset"]


def drift(want, have):
    """Human-readable differences between the intent and the switch: one line
    per global setting and per GPU-facing port that differs."""
    lines = []
    wg, hg = want["global"], have["global"]
    if wg["pfc_priority"] is not None and hg["pfc_priority"] != wg["pfc_priority"]:
        lines.append("PFC priority %s (intent %s)" % (hg["pfc_priority"], wg["pfc_priority"]))
    for d, p in sorted(wg["dscp_map"].items()):
        if hg["dscp_map"].get(d) != p:
            lines.append("DSCP %d maps to priority %s (intent %d)" % (d, hg["dscp_map"].get(d), p))
    if wg["ecn"] and hg["ecn"] != wg["ecn"]:
        lines.append("ECN %s (intent %s)" % (_ecn_text(hg["ecn"]), _ecn_text(wg["ecn"])))
    if wg["cnp"] and hg["cnp"] != wg["cnp"]:
        lines.append("CNP priority %d %s (intent strict)" % (wg["cnp"]["priority"],
                                                             "strict" if (hg["cnp"] or {}).get("strict") else "not strict"))
    for p, wp in want["ports"].items():
        hp = have["ports"].get(p)
        if hp is None:
            lines.append("%s: not found on the switch" % p)
            continue
        why = []
        if wp["pfc"] and not hp["pfc"]:
            why.append("PFC off (intent priority %s)" % wg["pfc_priority"])
        if hp["mtu"] < wp["mtu"]:
            why.append("MTU %d below %d" % (hp["mtu"], wp["mtu"]))
        elif hp["mtu"] != wp["mtu"]:
            why.append("MTU %d (intent %d)" % (hp["mtu"], wp["mtu"]))
        if hp["trust"] != wp["trust"]:
            why.append("trust %s (intent %s)" % (hp["trust"], wp["trust"]))
        if wp["ecn"] and hp["ecn"] != wp["ecn"]:
            why.append("ECN %s (intent %s)" % (_ecn_text(hp["ecn"]), _ecn_text(wp["ecn"])))
        if wp["cnp_strict"] and not hp["cnp_strict"]:
            why.append("CNP priority %d not strict" % ((wg["cnp"] or {}).get("priority", 6)))
        if why:
            lines.append("%s: %s" % (p, ", ".join(why)))
    return lines


def _ecn_text(e):
    if not e:
        return "off"
    return "tc %d %d-%d KB p%d" % (e["tc"], e["min_bytes"] // 1000, e["max_bytes"] // 1000, e.get("probability", 100))


def strip_internal(m):
    """The model without bookkeeping keys, DSCP keys as ints (for output)."""
    out = copy.deepcopy(m)
    out["global"].pop("explicit_dscps", None)
    return out


def ranges(nums):
    """[1,2,3,5] -> [(1,3),(5,5)]."""
    runs = []
    for n in sorted(set(nums)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [tuple(r) for r in runs]


def compress_ints(nums):
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges(nums))
