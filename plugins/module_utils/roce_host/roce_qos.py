# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host RoCE QoS of a PF (layer 8): read it, compare it with the fabric intent,
and render the exact commands that bring it there.

What a PF's state is made of, and where each part is read and set:

=================  ==============================================  ==========================================
field              read from                                       set with
=================  ==============================================  ==========================================
trust              ``qos/trust`` (OFED) or ``mlnx_qos -i <pf>``    ``mlnx_qos -i <pf> --trust dscp``
pfc                ``mlnx_qos -i <pf>`` (PFC ``enabled`` row)      ``mlnx_qos -i <pf> --pfc 0,0,0,1,0,0,0,0``
dscp_map           ``mlnx_qos -i <pf>`` (``dscp2prio mapping``)    ``mlnx_qos -i <pf> --dscp2prio set,26,3``
ecn (rp, np)       ``ecn/roce_{rp,np}/enable/<prio>`` (OFED)       ``echo 1 > .../ecn/roce_np/enable/3``
cnp_dscp           ``ecn/roce_np/[params/]cnp_dscp`` (OFED)        ``echo 48 > .../cnp_dscp``
cnp_802p_prio      ``ecn/roce_np/[params/]cnp_802p_prio`` (OFED)   ``echo 6 > .../cnp_802p_prio``
roce_mode          ``cma_roce_mode -d <dev> -p 1``                 ``cma_roce_mode -d <dev> -p 1 -m 2``
roce_tos           ``cma_roce_tos -d <dev> -p 1``                  ``cma_roce_tos -d <dev> -p 1 -t 106``
mtu                ``class/net/<pf>/mtu``                          ``ip link set dev <pf> mtu 9000``
=================  ==============================================  ==========================================

Where DOCA-OFED's mlnx-tools are absent (the inbox mlx5 driver with upstream
rdma-core and iproute2), the same fields go through upstream interfaces
(``qos_tool`` ``dcb``): trust and the DSCP map through the dcbnl APP table
(``dcb -N app show dev <pf>``; ``dcb app replace dev <pf> dscp-prio 26:3``,
which on mlx5 also switches the port to DSCP trust, ``dcb app flush dev <pf>
dscp-prio`` back to PCP), PFC through ``dcb pfc show|set dev <pf> prio-pfc
3:on``, the RDMA-CM defaults through configfs
(``kernel/config/rdma_cm/<dev>/ports/1/default_roce_mode`` and
``default_roce_tos``, after ``mkdir kernel/config/rdma_cm/<dev>``).  mlx5 has
no dcbnl apptrust; its trust is DSCP exactly when the APP table holds DSCP
entries, and a DSCP the table lacks keeps the firmware's default priority
(``dscp >> 3``).

The inbox mlx5 driver has no ``ecn/`` (or ``qos/``) sysfs: DCQCN is on for
the priorities in the firmware's ``ROCE_CC_PRIO_MASK_P1`` (255, every
priority, by default) and CNPs carry ``CNP_DSCP_P1``/``CNP_802P_PRIO_P1``
(48 and 6 by default).  Those can only change through mlxconfig and a reboot
(layer 4), so with the inbox driver they are read from the firmware where a
query is available and reported as notes, or as warnings when they differ
from the intent; they never fail the layer and are never "set".

Plain Python: the Ansible module wraps it, unit tests drive it directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import iproute_dcb
from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware.mlx_tools import parse_mlnx_qos, split_enum

ROCE_V1 = "IB/RoCE v1"
ROCE_V2 = "RoCE v2"
ROCE_MODES = {1: ROCE_V1, 2: ROCE_V2}
TRUSTS = ("dscp", "pcp")
# the tools that read and set trust, PFC, the DSCP map and the RDMA-CM defaults
QOS_TOOLS = ("mlnx_qos", "dcb")
TOOL_BINS = {"mlnx_qos": ("mlnx_qos", "cma_roce_mode", "cma_roce_tos"), "dcb": ("dcb",)}
# mlx5e accepts MTUs from 68 to the port's maximum (9978 on ConnectX-5 and later).
MTU_MIN = 68
MTU_MAX = 9978
ECN_PROTOS = ("roce_np", "roce_rp")
FIELDS = ("trust", "pfc", "dscp_map", "ecn", "cnp_dscp", "cnp_802p_prio", "roce_mode", "roce_tos", "mtu")
FIRMWARE_PARAMS = ("ROCE_CC_PRIO_MASK_P1", "CNP_DSCP_P1", "CNP_802P_PRIO_P1")


class RoceQosError(Exception):
    """Bad input or a host failure; the message names host, PF and value."""


# --------------------------------------------------------------------------
# intent
# --------------------------------------------------------------------------

def _int(value, what, lo, hi, where):
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise RoceQosError("%s: %s %r is not an integer" % (where, what, value))
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise RoceQosError("%s: %s %r is not an integer" % (where, what, value))
    if not lo <= v <= hi:
        raise RoceQosError("%s: %s %s is outside %d-%d" % (where, what, value, lo, hi))
    return v


def _get(config, key, default=None):
    value = config.get(key)
    return default if value is None else value


def default_tos(dscp):
    """ToS byte of RoCE traffic: DSCP in the upper six bits, ECT(0) below
    (DSCP 26 -> 106), so switches can mark congestion."""
    return (dscp << 2) | 2


def host_config(config, roce_mode=None, tos=None):
    """The host's RoCE intent: the fabric intent shared by every layer
    (``gpufabric_roce``) with the RDMA-CM default RoCE mode and, when above
    0, the TOS of roce_host (roce_host_roce_mode, roce_host_tos) over it.
    The one place it is put together: the role's converge and the doctor's
    read pass the parts to the module, which calls this."""
    if not isinstance(config, dict):
        return config
    out = dict(config)
    if roce_mode is not None:
        out["roce_mode"] = roce_mode
    if tos is not None:
        try:
            number = int(tos)
        except (TypeError, ValueError):
            out["tos"] = tos        # not a number: normalise_intent names it
        else:
            if number > 0:
                out["tos"] = number
    return out


def intent_of(p):
    """The normalised intent of a roce_qos call's options (``config``,
    ``roce_mode``, ``tos``, ``config_name``, ``node``); None without a
    config."""
    if p.get("config") is None:
        return None
    return normalise_intent(host_config(p["config"], p.get("roce_mode"), p.get("tos")), p.get("node") or "host",
                            p.get("config_name") or "")


def normalise_intent(config, where="intent", name=""):
    """Validate the host side of the fabric intent and return it normalised.

    ``config`` keys (the inventory's ``gpufabric_roce`` names): ``priority``
    (0-7, required), ``dscp`` (0-63, required), ``cnp_priority`` (default 6),
    ``cnp_dscp`` (default 48), ``trust`` (dscp or pcp, default dscp), ``mtu``
    or ``host_mtu`` (68-9978; unset leaves the MTU alone), ``tos`` (default
    DSCP << 2 | ECT(0)), ``roce_mode`` (1 or 2, default 2), ``ecn`` (enable
    ECN on ``priority``; default true).  Raises RoceQosError naming ``where``
    and the value."""
    def f(key):
        return "%s.%s" % (name, key) if name else key
    if not isinstance(config, dict):
        raise RoceQosError("%s: %s must be a mapping, got %r" % (where, name or "the RoCE intent", config))
    if config.get("priority") is None or config.get("dscp") is None:
        raise RoceQosError("%s: %s needs priority and dscp" % (where, name or "the RoCE intent"))
    prio = _int(config["priority"], f("priority"), 0, 7, where)
    dscp = _int(config["dscp"], f("dscp"), 0, 63, where)
    cprio = _int(_get(config, "cnp_priority", 6), f("cnp_priority"), 0, 7, where)
    cdscp = _int(_get(config, "cnp_dscp", 48), f("cnp_dscp"), 0, 63, where)
    trust = _get(config, "trust", "dscp")
    if trust not in TRUSTS:
        raise RoceQosError("%s: %s %r is not one of %s (a NIC trusts DSCP or PCP, not both)"
                           % (where, f("trust"), trust, ", ".join(TRUSTS)))
    if cdscp == dscp and cprio != prio:
        raise RoceQosError("%s: dscp %d is both the RoCE DSCP (priority %d) and the CNP DSCP (priority %d)"
                           % (where, dscp, prio, cprio))
    mtu = _get(config, "mtu", config.get("host_mtu"))
    if mtu is not None:
        mtu = _int(mtu, f("mtu" if config.get("mtu") is not None else "host_mtu"), MTU_MIN, MTU_MAX, where)
    tos = _get(config, "tos", None)
    if tos is None:
        tos = default_tos(dscp)
    tos = _int(tos, "tos", 0, 255, where)
    if tos >> 2 != dscp:
        raise RoceQosError("%s: tos %d carries DSCP %d, but the RoCE DSCP is %d (tos %d)"
                           % (where, tos, tos >> 2, dscp, default_tos(dscp)))
    mode = _int(_get(config, "roce_mode", 2), "roce_mode", 1, 2, where)
    dscp_map = {}
    if trust == "dscp":
        dscp_map = {dscp: prio, cdscp: cprio}
    return {
        "trust": trust,
        "priority": prio,
        "pfc": [1 if p == prio else 0 for p in range(8)],
        "pfc_priorities": [prio],
        "dscp": dscp,
        "dscp_map": dscp_map,
        "cnp_priority": cprio,
        "cnp_dscp": cdscp,
        "ecn": bool(_get(config, "ecn", True)),
        "roce_mode": ROCE_MODES[mode],
        "roce_mode_number": mode,
        "roce_tos": tos,
        "mtu": mtu,
    }


def jsonable(obj):
    """Copy with integer dict keys as strings (Ansible returns JSON)."""
    if isinstance(obj, dict):
        return dict((str(k), jsonable(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------

def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read().decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return None


def _int_or_none(text):
    try:
        return int(text.split()[0]) if text else None
    except (ValueError, IndexError):
        return None


def netdev_path(sysfs_root, pf, *parts):
    return os.path.join(sysfs_root.rstrip("/") or "/", "class", "net", pf, *parts)


def read_ecn_sysfs(sysfs_root, pf):
    """ECN state of an OFED PF from sysfs, or None when there is no ``ecn/``
    (the inbox driver).  ``cnp_dscp``/``cnp_802p_prio`` are looked up directly
    in ``roce_np/`` (the driver's layout) and in ``roce_np/params/`` (the
    layout NVIDIA's documentation describes)."""
    base = netdev_path(sysfs_root, pf, "ecn")
    if not os.path.isdir(base):
        return None
    out = {"source": "sysfs", "np_params_dir": "", "cnp_dscp": None, "cnp_802p_prio": None}
    for proto in ECN_PROTOS:
        out[proto] = [_int_or_none(_read(os.path.join(base, proto, "enable", str(p)))) for p in range(8)]
    for sub in ("", "params"):
        found = False
        for name in ("cnp_dscp", "cnp_802p_prio"):
            value = _int_or_none(_read(os.path.join(base, "roce_np", sub, name)))
            if value is not None:
                out[name] = value
                found = True
        if found:
            out["np_params_dir"] = sub
            break
    return out


def read_trust_sysfs(sysfs_root, pf):
    """``qos/trust`` (OFED), or None."""
    value = _read(netdev_path(sysfs_root, pf, "qos", "trust"))
    return value or None


def firmware_ecn(parsed):
    """ECN as the firmware has it, from ``parse_mlxconfig_query`` of
    ``mlxconfig -d <pci> -e q ROCE_CC_PRIO_MASK_P1 CNP_DSCP_P1
    CNP_802P_PRIO_P1`` (the current values; the next-boot values when the query
    has no Current column).  Returns the ECN shape of :func:`read_ecn_sysfs`
    with ``source`` ``firmware``, or None when the parameters are absent."""
    params = parsed.get("params") or {}
    col = "current" if "current" in (parsed.get("columns") or []) else "next"

    def val(name):
        p = params.get(name)
        if not p:
            return None
        num = p.get(col + "_int")
        if num is None:
            num = split_enum(p.get(col))[1]
        return num

    mask = val("ROCE_CC_PRIO_MASK_P1")
    if mask is None:
        return None
    bits = [(mask >> p) & 1 for p in range(8)]
    return {"source": "firmware", "column": col, "mask": mask, "roce_np": list(bits), "roce_rp": list(bits),
            "cnp_dscp": val("CNP_DSCP_P1"), "cnp_802p_prio": val("CNP_802P_PRIO_P1"), "np_params_dir": None}


def parse_cma_roce_mode(text):
    """``cma_roce_mode`` prints ``RoCE v2`` or ``IB/RoCE v1``."""
    for line in reversed((text or "").splitlines()):
        s = line.strip()
        if s in (ROCE_V1, ROCE_V2):
            return s
    raise ValueError("cma_roce_mode: no 'RoCE v2' or 'IB/RoCE v1' line in %r" % (text,))


def parse_cma_roce_tos(text):
    """``cma_roce_tos`` prints the ToS as a number."""
    for line in reversed((text or "").splitlines()):
        s = line.strip()
        if re.fullmatch(r"\d+", s):
            return int(s)
    raise ValueError("cma_roce_tos: no ToS number in %r" % (text,))


def pf_state(pf, mlnx_qos_text, roce_mode=None, roce_tos=None, mtu=None, ecn=None, trust_sysfs=None, driver=None):
    """One PF's QoS state (the ``gathered`` shape) from the tools' outputs.

    ``pf``: ``{name, pci_address, rdma_device}``; ``mlnx_qos_text``: output of
    ``mlnx_qos -i <pf>``; ``roce_mode``/``roce_tos``: outputs of
    ``cma_roce_mode``/``cma_roce_tos`` (or already parsed values); ``ecn``: from
    :func:`read_ecn_sysfs` or :func:`firmware_ecn`; ``trust_sysfs``: ``qos/trust``
    (preferred over mlnx_qos's line where present); ``driver``: ``ofed`` or
    ``inbox`` (default: ``ofed`` when ``ecn`` came from sysfs)."""
    q = parse_mlnx_qos(mlnx_qos_text)
    if q["pfc_enabled"] is None:
        raise ValueError("mlnx_qos: no PFC 'enabled' row for %s" % pf.get("name"))
    trust = trust_sysfs or q["trust"]
    if trust == "none":
        trust = None
    # dscp -> priority for all 64 DSCPs; None while trust is pcp (no map printed)
    return _state(pf, trust, q, q["dscp_to_prio"] if trust == "dscp" else None, roce_mode, roce_tos, mtu, ecn,
                  driver)


def _state(pf, trust, q, dscp_to_prio, roce_mode, roce_tos, mtu, ecn, driver):
    """The state both readers return; ``q`` carries ``pfc_enabled`` and
    ``pfc_priorities``; the RDMA-CM values are texts or parsed values."""
    if isinstance(roce_mode, str) and roce_mode not in (ROCE_V1, ROCE_V2):
        roce_mode = parse_cma_roce_mode(roce_mode)
    if isinstance(roce_tos, str):
        roce_tos = parse_cma_roce_tos(roce_tos)
    if driver is None:
        driver = "ofed" if ecn and ecn.get("source") == "sysfs" else "inbox"
    return {
        "name": pf.get("name"),
        "pci_address": pf.get("pci_address"),
        "rdma_device": pf.get("rdma_device"),
        "driver": driver,
        "trust": trust,
        "pfc": q["pfc_enabled"],
        "pfc_priorities": q["pfc_priorities"],
        "dscp_to_prio": dscp_to_prio,
        "ecn": ecn,
        "roce_mode": roce_mode,
        "roce_tos": roce_tos,
        "mtu": mtu,
    }


def configfs_dir(sysfs_root, rdma_device):
    """The RDMA-CM configfs directory of an RDMA device (configfs is mounted
    at ``<sysfs>/kernel/config``; the kernel fills ``ports/<n>/`` when the
    directory is made)."""
    return os.path.join(sysfs_root, "kernel", "config", "rdma_cm", rdma_device)


def configfs_port_path(sysfs_root, rdma_device, port, name):
    return os.path.join(configfs_dir(sysfs_root, rdma_device), "ports", str(port), name)


def pf_state_dcb(pf, pfc_text, app_text, roce_mode=None, roce_tos=None, mtu=None, ecn=None, driver=None):
    """One PF's QoS state, the shape of :func:`pf_state`, from iproute2's
    ``dcb -N pfc show dev <pf>`` and ``dcb -N app show dev <pf>`` and the
    configfs ``default_roce_mode``/``default_roce_tos`` texts (or values).
    In DSCP trust a DSCP the APP table lacks has the firmware default
    priority; one listed twice keeps both (a list), which no intent matches."""
    try:
        q = iproute_dcb.qos_state(pfc_text, app_text)
    except iproute_dcb.DcbError as exc:
        raise ValueError(str(exc))
    d2p = q["dscp_to_prio"]
    if d2p is not None:
        d2p = [d >> 3 if v is None else v for d, v in enumerate(d2p)]
    return _state(pf, q["trust"], q, d2p, roce_mode, roce_tos, mtu, ecn, driver)


# --------------------------------------------------------------------------
# diff
# --------------------------------------------------------------------------

def fmt_set(prios):
    """[3, 4] -> '{3,4}'; [] -> '{}'; None -> 'unknown'."""
    if prios is None:
        return "unknown"
    return "{" + ",".join(str(p) for p in sorted(prios)) + "}"


def _onoff(value):
    return {1: "on", 0: "off"}.get(value, "unknown")


def default_dscp_to_prio():
    return [d >> 3 for d in range(64)]


def diff(state, want):
    """Differences between one PF's state and the intent, in FIELDS order.

    Each is ``{pf, field, have, want, settable, text}``; ``text`` reads like
    ``enp59s0f0np0 PFC {3,4} vs intent {3}``.  ``settable`` is false for what
    the driver cannot change at run time (ECN and CNP with the inbox driver,
    which follow the firmware).  A DSCP map that cannot be read yet (trust is
    pcp, so mlnx_qos prints none) counts as the firmware default map, which
    is what switching trust to dscp brings."""
    pf = state["name"]
    out = []

    def add(field, have, wantv, text, settable=True, key=None):
        out.append({"pf": pf, "field": field, "key": key, "have": have, "want": wantv,
                    "settable": settable, "text": "%s %s" % (pf, text)})

    if state.get("trust") != want["trust"]:
        add("trust", state.get("trust"), want["trust"],
            "trust %s vs intent %s" % (state.get("trust") or "unknown", want["trust"]))
    if state.get("pfc_priorities") != want["pfc_priorities"]:
        add("pfc", state.get("pfc_priorities"), want["pfc_priorities"],
            "PFC %s vs intent %s" % (fmt_set(state.get("pfc_priorities")), fmt_set(want["pfc_priorities"])))
    if want["trust"] == "dscp":
        d2p = state.get("dscp_to_prio") or default_dscp_to_prio()
        for dscp in sorted(want["dscp_map"]):
            prio = want["dscp_map"][dscp]
            if d2p[dscp] != prio:
                add("dscp_map", d2p[dscp], prio, "DSCP %d -> priority %s vs intent %d" % (dscp, d2p[dscp], prio),
                    key=dscp)
    ecn = state.get("ecn")
    if want["ecn"] and ecn:
        settable = ecn.get("source") == "sysfs"
        where = "" if settable else " (firmware ROCE_CC_PRIO_MASK_P1)"
        for proto in ECN_PROTOS:
            have = (ecn.get(proto) or [None] * 8)[want["priority"]]
            if have != 1:
                add("ecn", have, 1, "ECN %s on priority %d %s vs intent on%s"
                    % (proto, want["priority"], _onoff(have), where), settable, key=proto)
        for field, wantv, fw in (("cnp_dscp", want["cnp_dscp"], "CNP_DSCP_P1"),
                                 ("cnp_802p_prio", want["cnp_priority"], "CNP_802P_PRIO_P1")):
            have = ecn.get(field)
            if have is not None and have != wantv:
                label = "CNP DSCP" if field == "cnp_dscp" else "CNP 802.1p priority"
                add(field, have, wantv, "%s %s vs intent %d%s"
                    % (label, have, wantv, "" if settable else " (firmware %s)" % fw), settable)
    if state.get("roce_mode") != want["roce_mode"]:
        add("roce_mode", state.get("roce_mode"), want["roce_mode"],
            "RDMA-CM default RoCE mode %s vs intent %s" % (state.get("roce_mode") or "unknown", want["roce_mode"]))
    if state.get("roce_tos") != want["roce_tos"]:
        add("roce_tos", state.get("roce_tos"), want["roce_tos"],
            "RDMA-CM default TOS %s vs intent %d" % (state.get("roce_tos"), want["roce_tos"]))
    if want["mtu"] is not None and state.get("mtu") != want["mtu"]:
        add("mtu", state.get("mtu"), want["mtu"], "MTU %s vs intent %d" % (state.get("mtu"), want["mtu"]))
    return out


def notes(state, want):
    """What the driver leaves to the firmware, as sentences (inbox only)."""
    if state.get("driver") == "ofed" or not want["ecn"]:
        return []
    pf = state["name"]
    ecn = state.get("ecn")
    head = ("%s: the inbox mlx5 driver has no ecn/ sysfs; ECN (DCQCN) and the CNP DSCP/priority follow the "
            "NIC firmware (ROCE_CC_PRIO_MASK_P1, CNP_DSCP_P1, CNP_802P_PRIO_P1; mlxconfig, layer 4)" % pf)
    if not ecn:
        return [head + "; not read (no mlxconfig/mstconfig query)"]
    return [head + "; firmware %s: ROCE_CC_PRIO_MASK_P1=%s (ECN %s for priority %d), CNP_DSCP_P1=%s, "
            "CNP_802P_PRIO_P1=%s" % (ecn.get("column", "current"), ecn.get("mask"),
                                     _onoff(ecn["roce_np"][want["priority"]]), want["priority"],
                                     ecn.get("cnp_dscp"), ecn.get("cnp_802p_prio"))]


def public_state(state, want=None):
    """A PF's state as modules return it: ``dscp_to_prio`` (64 values)
    becomes ``dscp_map``, the DSCPs whose priority is not the default
    ``dscp >> 3`` plus the intent's DSCPs (string keys), or None while trust is
    pcp.  A DSCP missing from ``dscp_map`` has its default priority."""
    out = dict((k, copy.deepcopy(v)) for k, v in state.items() if k != "dscp_to_prio")
    d2p = state.get("dscp_to_prio")
    if d2p is None:
        out["dscp_map"] = None
    else:
        keep = set(d for d in range(64) if d2p[d] != d >> 3)
        keep |= set((want or {}).get("dscp_map") or ())
        out["dscp_map"] = dict((str(d), d2p[d]) for d in sorted(keep))
    return jsonable(out)


def dscp_priority(state, dscp):
    """Priority of ``dscp`` in a state of either shape, None when unmapped."""
    if state.get("dscp_to_prio") is not None:
        return state["dscp_to_prio"][dscp]
    dmap = state.get("dscp_map")
    if dmap is None:
        return None
    return dmap.get(str(dscp), dmap.get(dscp, dscp >> 3))


def summary_lines(state, want):
    """A PF's state as short lines for ``--diff``: the fields the intent
    names, the DSCP map only for the intent's DSCPs."""
    pf = state["name"]
    lines = ["%s trust %s" % (pf, state.get("trust") or "unknown"),
             "%s PFC %s" % (pf, fmt_set(state.get("pfc_priorities")))]
    d2p = state.get("dscp_to_prio")
    for dscp in sorted(want["dscp_map"]):
        lines.append("%s DSCP %d -> priority %s" % (pf, dscp, d2p[dscp] if d2p else "unmapped (trust pcp)"))
    ecn = state.get("ecn")
    if ecn:
        for proto in ECN_PROTOS:
            on = [p for p, v in enumerate(ecn.get(proto) or []) if v == 1]
            lines.append("%s ECN %s on %s (%s)" % (pf, proto, fmt_set(on), ecn.get("source")))
        lines.append("%s CNP DSCP %s, 802.1p priority %s" % (pf, ecn.get("cnp_dscp"), ecn.get("cnp_802p_prio")))
    lines.append("%s RDMA-CM default RoCE mode %s, TOS %s" % (pf, state.get("roce_mode"), state.get("roce_tos")))
    lines.append("%s MTU %s" % (pf, state.get("mtu")))
    return lines


def predict(state, want, diffs):
    """The state after the settable ``diffs`` are applied (check mode)."""
    new = copy.deepcopy(state)
    for d in diffs:
        if not d["settable"]:
            continue
        f = d["field"]
        if f == "trust":
            new["trust"] = want["trust"]
            if want["trust"] == "dscp" and new.get("dscp_to_prio") is None:
                new["dscp_to_prio"] = default_dscp_to_prio()
        elif f == "pfc":
            new["pfc"] = list(want["pfc"])
            new["pfc_priorities"] = list(want["pfc_priorities"])
        elif f == "dscp_map":
            new["dscp_to_prio"] = list(new.get("dscp_to_prio") or default_dscp_to_prio())
            new["dscp_to_prio"][d["key"]] = d["want"]
        elif f == "ecn":
            new["ecn"][d["key"]][want["priority"]] = 1
        elif f in ("cnp_dscp", "cnp_802p_prio"):
            new["ecn"][f] = d["want"]
        else:
            new[f] = d["want"]
    return new


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------

def _qos_cmds(pf, want, fields, map_entries):
    cmds = []
    args = []
    if "trust" in fields:
        args += ["--trust", want["trust"]]
    if "pfc" in fields:
        args += ["--pfc", ",".join(str(v) for v in want["pfc"])]
    if args:
        cmds.append({"argv": ["mlnx_qos", "-i", pf] + args})
    # mlnx_qos refuses --trust together with --dscp2prio: a second call
    margs = []
    for dscp, prio in sorted(map_entries):
        margs += ["--dscp2prio", "set,%d,%d" % (dscp, prio)]
    if margs:
        cmds.append({"argv": ["mlnx_qos", "-i", pf] + margs})
    return cmds


def np_param_path(sysfs_root, pf, name, params_dir=""):
    parts = ["ecn", "roce_np"] + ([params_dir] if params_dir else []) + [name]
    return netdev_path(sysfs_root, pf, *parts)


def _dcb_cmds(pf, want, fields, map_entries):
    """iproute2 dcb: PFC in one call; on mlx5 (no apptrust) DSCP trust comes
    with the first DSCP entry of the APP table, so a change to DSCP trust
    replaces every DSCP of the intent, and PCP trust flushes the DSCP
    entries."""
    cmds = []
    if "pfc" in fields:
        cmds.append({"argv": ["dcb", "pfc", "set", "dev", pf, "prio-pfc"]
                     + ["%d:%s" % (i, "on" if v else "off") for i, v in enumerate(want["pfc"])]})
    if want["trust"] == "pcp":
        if "trust" in fields:
            cmds.append({"argv": ["dcb", "app", "flush", "dev", pf, "dscp-prio"]})
        return cmds
    entries = dict(map_entries)
    if "trust" in fields:
        entries.update(want["dscp_map"] or dict((d, d >> 3) for d in range(64)))
    if entries:
        cmds.append({"argv": ["dcb", "app", "replace", "dev", pf, "dscp-prio"]
                     + ["%d:%d" % (d, p) for d, p in sorted(entries.items())]})
    return cmds


def _roce_cmds(tool, want, fields, rdma_device, sysfs_root, port):
    cmds = []
    if tool == "dcb":
        if fields & set(["roce_mode", "roce_tos"]):
            cmds.append({"mkdir": configfs_dir(sysfs_root, rdma_device)})
        if "roce_mode" in fields:
            cmds.append({"write": configfs_port_path(sysfs_root, rdma_device, port, "default_roce_mode"),
                         "value": want["roce_mode"]})
        if "roce_tos" in fields:
            cmds.append({"write": configfs_port_path(sysfs_root, rdma_device, port, "default_roce_tos"),
                         "value": want["roce_tos"]})
        return cmds
    if "roce_mode" in fields:
        cmds.append({"argv": ["cma_roce_mode", "-d", rdma_device, "-p", str(port), "-m",
                              str(want["roce_mode_number"])]})
    if "roce_tos" in fields:
        cmds.append({"argv": ["cma_roce_tos", "-d", rdma_device, "-p", str(port), "-t", str(want["roce_tos"])]})
    return cmds


def render(state, want, diffs, sysfs_root="/sys", port=1, tool="mlnx_qos"):
    """Commands for the settable ``diffs`` of one PF, in the order they run.

    Each is ``{"argv": [...]}`` (a tool), ``{"write": path, "value": v}``
    (a sysfs or configfs write) or ``{"mkdir": path}`` (a configfs
    directory), with ``text`` the shell form: ``mlnx_qos -i enp59s0f0np0
    --trust dscp --pfc 0,0,0,1,0,0,0,0``, ``echo 1 > /sys/.../enable/3``,
    ``cma_roce_mode -d rocep59s0f0 -p 1 -m 2``, ``cma_roce_tos -d rocep59s0f0
    -p 1 -t 106``, ``ip link set dev enp59s0f0np0 mtu 9000``; with ``tool``
    ``dcb``: ``dcb pfc set dev enp59s0f0np0 prio-pfc 0:off ... 3:on ...``,
    ``dcb app replace dev enp59s0f0np0 dscp-prio 26:3 48:6``, ``mkdir -p
    /sys/kernel/config/rdma_cm/rocep59s0f0``, ``echo 106 >
    /sys/kernel/config/rdma_cm/rocep59s0f0/ports/1/default_roce_tos``."""
    pf = state["name"]
    dev = state.get("rdma_device")
    todo = [d for d in diffs if d["settable"]]
    fields = set(d["field"] for d in todo)
    entries = [(d["key"], d["want"]) for d in todo if d["field"] == "dscp_map"]
    cmds = _dcb_cmds(pf, want, fields, entries) if tool == "dcb" else _qos_cmds(pf, want, fields, entries)
    ecn = state.get("ecn") or {}
    for d in todo:
        if d["field"] == "ecn":
            cmds.append({"write": netdev_path(sysfs_root, pf, "ecn", d["key"], "enable", str(want["priority"])),
                         "value": 1})
        elif d["field"] in ("cnp_dscp", "cnp_802p_prio"):
            cmds.append({"write": np_param_path(sysfs_root, pf, d["field"], ecn.get("np_params_dir") or ""),
                         "value": d["want"]})
    cmds += _roce_cmds(tool, want, fields, dev, sysfs_root, port)
    if "mtu" in fields:
        cmds.append({"argv": ["ip", "link", "set", "dev", pf, "mtu", str(want["mtu"])]})
    for c in cmds:
        c["text"] = command_text(c)
    return cmds


def command_text(cmd):
    if "mkdir" in cmd:
        return "mkdir -p %s" % cmd["mkdir"]
    if "write" in cmd:
        value = cmd["value"]
        return "echo %s > %s" % ("'%s'" % value if " " in str(value) else value, cmd["write"])
    return " ".join(cmd["argv"])


def render_full(want, pf, rdma_device, ofed=False, sysfs_root="/sys", np_params_dir="", port=1, tool="mlnx_qos"):
    """Every command that takes a PF with the driver's defaults (trust pcp,
    no PFC, the default DSCP map, RoCE v2, TOS 0, ECN on every priority) to the
    intent: for ``state: rendered`` and for the boot script, where ``pf``,
    ``rdma_device`` and ``sysfs_root`` may be shell words like ``"$PF"``."""
    fields = set(["trust", "pfc", "roce_mode", "roce_tos"])
    if want["mtu"] is not None:
        fields.add("mtu")
    default = default_dscp_to_prio()
    entries = [(d, p) for d, p in sorted(want["dscp_map"].items()) if default[d] != p]
    cmds = _dcb_cmds(pf, want, fields, entries) if tool == "dcb" else _qos_cmds(pf, want, fields, entries)
    if ofed and want["ecn"]:
        for proto in ECN_PROTOS:
            cmds.append({"write": netdev_path(sysfs_root, pf, "ecn", proto, "enable", str(want["priority"])),
                         "value": 1})
        cmds.append({"write": np_param_path(sysfs_root, pf, "cnp_dscp", np_params_dir), "value": want["cnp_dscp"]})
        cmds.append({"write": np_param_path(sysfs_root, pf, "cnp_802p_prio", np_params_dir),
                     "value": want["cnp_priority"]})
    cmds += _roce_cmds(tool, want, fields, rdma_device, sysfs_root, port)
    if want["mtu"] is not None:
        cmds.append({"argv": ["ip", "link", "set", "dev", pf, "mtu", str(want["mtu"])]})
    for c in cmds:
        c["text"] = command_text(c)
    return cmds


def boot_lines(want, ofed, np_params_dir="", tool="mlnx_qos"):
    """Shell lines of the boot script for one PF; the script sets ``$PF``
    (netdev), ``$DEV`` (RDMA device) and ``$SYSFS`` and defines ``run`` (runs
    a command, logs a failure) and ``put`` (a sysfs write, logged the same way)."""
    lines = []
    for c in render_full(want, "$PF", "$DEV", ofed, "$SYSFS", np_params_dir, tool=tool):
        if "mkdir" in c:
            lines.append('run mkdir -p "%s"' % c["mkdir"])
        elif "write" in c:
            value = c["value"]
            lines.append('put "%s" %s' % (c["write"], '"%s"' % value if " " in str(value) else value))
        else:
            lines.append("run " + " ".join('"%s"' % a if "$" in a else a for a in c["argv"]))
    return lines
