# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""iproute2's ``dcb``: the upstream reader of host QoS where DOCA-OFED's
``mlnx_qos`` is absent (the inbox mlx5 driver with upstream rdma-core).

Plain standard-library Python; every function takes the tool's text and
returns plain data.  The formats follow iproute2's ``dcb/`` sources:

- ``dcb.c`` ``dcb_print_array_*``/``dcb_print_named_array``: an array line is
  its name, then ``I:V`` for I = 0..7 in order, each token followed by one
  space (so lines end in a space), never wrapped;
- ``dcb_pfc.c``: ``pfc-cap N macsec-bypass on|off delay N`` then
  ``prio-pfc 0:off ... 7:off`` (``-s`` adds ``requests``/``indications``);
- ``dcb_ets.c``: ``willing``/``ets-cap``/``cbs`` then ``tc-bw``, ``pg-bw``,
  ``tc-tsa`` (strict, cbs, ets, vendor, ``???``), ``prio-tc`` and the ``reco-``
  arrays;
- ``dcb_app.c``: one line per selector group with ``KEY:PRIO`` tokens
  (``dscp-prio 0:0 CS3:3 24:5``; DSCP keys are names from rt_dsfield unless
  ``-N``, ethtype keys hex without ``0x``, ``default-prio`` a list of
  priorities); no entries print nothing;
- ``dcb_apptrust.c``: ``order: dscp pcp`` then an empty line;
- errors (``dcb.c``, ``perror``): ``Attribute read: Operation not supported``
  (the device has no DCB at all, e.g. igb or a VF), ``Attribute not found:
  Success`` (the driver lacks this object: mlx5 has no apptrust).

The collection runs ``dcb -N``, so DSCP keys are numbers; the standard
rt_dsfield names are read too (published outputs carry them).  A line that
names something the collection manages (PFC, ETS, the APP table, the trust
order) and cannot be read raises ``DcbError`` quoting it; a line of an
object the collection does not manage is kept as it is, never dropped
silently (``other``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

PRIOS = 8
DSCPS = 64
TSA = ("strict", "cbs", "ets", "vendor", "???")

# iproute2's etc/iproute2/rt_dsfield, keyed by DSCP (the file is keyed by the
# DS field, DSCP << 2).  DSCP 0 prints as "0": lib/rt_names.c seeds slot 0.
DSFIELD_NAMES = dict(
    [("default", 0), ("CS1", 8), ("AF11", 10), ("AF12", 12), ("AF13", 14), ("CS2", 16), ("AF21", 18),
     ("AF22", 20), ("AF23", 22), ("CS3", 24), ("AF31", 26), ("AF32", 28), ("AF33", 30), ("CS4", 32),
     ("AF41", 34), ("AF42", 36), ("AF43", 38), ("CS5", 40), ("EF", 46), ("CS6", 48), ("CS7", 56)])

# what dcb prints on stderr (or stdout, captured together) when it reads nothing
UNSUPPORTED = re.compile(r"^Attribute (read: (?P<errno>.+)|not found: Success)$")


class DcbError(ValueError):
    """A dcb output that cannot be read; the message quotes the line."""


class DcbUnsupported(DcbError):
    """The device answers no DCB at all (``reason`` 'no-dcb': no dcbnl ops,
    as on igb or a VF) or not this object (``reason`` 'not-found': e.g. the
    mlx5 driver has no apptrust)."""

    def __init__(self, message, reason):
        super(DcbUnsupported, self).__init__(message)
        self.reason = reason


def _lines(text, what):
    if not isinstance(text, str):
        raise DcbError("dcb %s: output must be a string, got %r" % (what, type(text).__name__))
    out = []
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.strip()
        if not line:
            continue
        m = UNSUPPORTED.match(line)
        if m:
            if m.group("errno") is None:
                raise DcbUnsupported("dcb %s: the driver does not report it (%r)" % (what, line), "not-found")
            if m.group("errno") == "Operation not supported":
                raise DcbUnsupported("dcb %s: the device has no DCB (%r)" % (what, line), "no-dcb")
            raise DcbError("dcb %s: %r" % (what, line))
        out.append(line)
    return out


def _array(tokens, line, what, value):
    """``0:v0 1:v1 ... 7:v7`` -> [value(v0), ...]; the indices in order."""
    if len(tokens) != PRIOS:
        raise DcbError("dcb %s: %d entries, expected %d, in %r" % (what, len(tokens), PRIOS, line))
    vals = []
    for i, tok in enumerate(tokens):
        idx, sep, v = tok.partition(":")
        if sep != ":" or idx != str(i):
            raise DcbError("dcb %s: entry %r is not '%d:<value>' in %r" % (what, tok, i, line))
        try:
            vals.append(value(v))
        except (ValueError, KeyError):
            raise DcbError("dcb %s: value %r of entry %d cannot be read in %r" % (what, v, i, line))
    return vals


def _onoff(v):
    return {"on": True, "off": False}[v]


def _u8(v):
    n = int(v)
    if not 0 <= n <= 255:
        raise ValueError(v)
    return n


def _u64(v):
    n = int(v)
    if n < 0:
        raise ValueError(v)
    return n


def _tsa(v):
    if v not in TSA:
        raise ValueError(v)
    return v


def _scalars(tokens, line, what, fields):
    """``name value name value ...`` -> {name: value} for the ``fields``
    {fp name: (json name, converter)}."""
    out = {}
    if len(tokens) % 2:
        raise DcbError("dcb %s: a name without its value in %r" % (what, line))
    for name, v in zip(tokens[::2], tokens[1::2]):
        if name not in fields:
            raise DcbError("dcb %s: unknown field %r in %r" % (what, name, line))
        key, conv = fields[name]
        try:
            out[key] = conv(v)
        except (ValueError, KeyError):
            raise DcbError("dcb %s: value %r of %s cannot be read in %r" % (what, v, name, line))
    return out


_PFC_SCALARS = {"pfc-cap": ("pfc_cap", _u8), "macsec-bypass": ("macsec_bypass", _onoff), "delay": ("delay", int)}
_PFC_ARRAYS = {"prio-pfc": ("prio_pfc", _onoff), "requests": ("requests", _u64), "indications": ("indications", _u64)}


def _parse(text, what, scalars, arrays):
    """The objects whose output is a line of ``name value`` pairs and lines
    of one 8-entry array each (pfc, ets): {json name: value}, ``None`` for
    what the output lacks; any other line fails quoting it.  A line is read
    as its names, each with what follows it up to the next name (no value is
    a name), so an array after a scalar on one line is read too, as in
    published examples that join ``dcb pfc show dev DEV pfc-cap prio-pfc
    delay``'s lines (dcb_pfc.c prints each named attribute on its own)."""
    res = dict.fromkeys([k for k, _ in scalars.values()] + [k for k, _ in arrays.values()])
    for line in _lines(text, what):
        tokens = line.split()
        if tokens[0] not in arrays and tokens[0] not in scalars:
            raise DcbError("dcb %s: cannot read %r" % (what, line))
        starts = [i for i, tok in enumerate(tokens) if tok in arrays or tok in scalars] + [len(tokens)]
        for at, end in zip(starts, starts[1:]):
            name, values = tokens[at], tokens[at + 1:end]
            if name in arrays:
                key, conv = arrays[name]
                res[key] = _array(values, line, "%s %s" % (what, name), conv)
            elif not values:
                raise DcbError("dcb %s: %s without its value in %r" % (what, name, line))
            elif len(values) > 1:
                # what follows a scalar's value is a name this reader does not know
                raise DcbError("dcb %s: unknown field %r in %r" % (what, values[1], line))
            else:
                res.update(_scalars([name] + values, line, what, scalars))
    return res


def parse_pfc(text):
    """``dcb pfc show dev DEV`` -> ``{pfc_cap, macsec_bypass, delay, prio_pfc,
    requests, indications, pfc_enabled, pfc_priorities}``: ``prio_pfc`` the 8
    booleans, ``pfc_enabled`` the same as 0/1 (mlnx_qos's shape),
    ``pfc_priorities`` the priorities with PFC on; what the output lacks is
    ``None``."""
    res = _parse(text, "pfc", _PFC_SCALARS, _PFC_ARRAYS)
    if res["prio_pfc"] is None:
        raise DcbError("dcb pfc: no 'prio-pfc' line in %r" % text)
    res["pfc_enabled"] = [int(v) for v in res["prio_pfc"]]
    res["pfc_priorities"] = [i for i, v in enumerate(res["prio_pfc"]) if v]
    return res


_ETS_SCALARS = {"willing": ("willing", _onoff), "ets-cap": ("ets_cap", _u8), "cbs": ("cbs", _onoff)}
_ETS_ARRAYS = {"tc-bw": ("tc_bw", _u8), "pg-bw": ("pg_bw", _u8), "tc-tsa": ("tc_tsa", _tsa),
               "prio-tc": ("prio_tc", _u8), "reco-tc-bw": ("reco_tc_bw", _u8),
               "reco-tc-tsa": ("reco_tc_tsa", _tsa), "reco-prio-tc": ("reco_prio_tc", _u8)}


def parse_ets(text):
    """``dcb ets show dev DEV`` -> ``{willing, ets_cap, cbs, tc_bw, pg_bw,
    tc_tsa, prio_tc, reco_tc_bw, reco_tc_tsa, reco_prio_tc}`` (dcb's JSON
    names); what the output lacks is ``None``."""
    res = _parse(text, "ets", _ETS_SCALARS, _ETS_ARRAYS)
    if all(v is None for v in res.values()):
        raise DcbError("dcb ets: nothing read from %r" % text)
    for key in ("prio_tc", "reco_prio_tc"):
        if res[key] is not None and any(tc >= PRIOS for tc in res[key]):
            raise DcbError("dcb ets: a traffic class above 7 in %s %r" % (key, res[key]))
    return res


def _dscp_key(tok):
    if tok.isdigit():
        n = int(tok)
    elif tok in DSFIELD_NAMES:
        n = DSFIELD_NAMES[tok]
    else:
        raise ValueError(tok)
    if not 0 <= n < DSCPS:
        raise ValueError(tok)
    return n


def _pcp_key(tok):
    """``1nd``/``1de`` (PCP, drop-eligible) or, with -N, PCP + 8 * DEI."""
    m = re.match(r"^([0-7])(nd|de)$", tok)
    if m:
        return int(m.group(1)) + (8 if m.group(2) == "de" else 0)
    n = int(tok)
    if not 0 <= n < 16:
        raise ValueError(tok)
    return n


def _port_key(tok):
    n = int(tok)
    if not 0 <= n <= 65535:
        raise ValueError(tok)
    return n


# fp name -> (json name, key reader); default-prio has no keys
_APP_GROUPS = {"ethtype-prio": ("ethtype_prio", lambda t: int(t, 16)), "dscp-prio": ("dscp_prio", _dscp_key),
               "stream-port-prio": ("stream_port_prio", _port_key), "dgram-port-prio": ("dgram_port_prio", _port_key),
               "port-prio": ("port_prio", _port_key), "pcp-prio": ("pcp_prio", _pcp_key)}


def _prio(v):
    n = int(v)
    if not 0 <= n < PRIOS:
        raise ValueError(v)
    return n


def parse_app(text):
    """``dcb [-N] app show dev DEV`` -> ``{default_prio, ethtype_prio,
    dscp_prio, stream_port_prio, dgram_port_prio, port_prio, pcp_prio}``:
    each a list of ``[key, prio]`` in printed order (``default_prio`` a list
    of priorities); an empty output is an empty table.  A DSCP name that is
    not iproute2's standard rt_dsfield (a site's own file) cannot be read:
    ``dcb -N`` prints numbers."""
    res = {"default_prio": []}
    res.update((key, []) for key, _ in _APP_GROUPS.values())
    for line in _lines(text, "app"):
        tokens = line.split()
        name = tokens[0]
        if name == "default-prio":
            try:
                res["default_prio"].extend(_prio(t) for t in tokens[1:])
            except ValueError:
                raise DcbError("dcb app default-prio: a priority that is not 0-7 in %r" % line)
            continue
        if name not in _APP_GROUPS:
            raise DcbError("dcb app: cannot read %r" % line)
        key, reader = _APP_GROUPS[name]
        for tok in tokens[1:]:
            k, sep, p = tok.rpartition(":")
            try:
                if not sep:
                    raise ValueError(tok)
                entry = [reader(k), _prio(p)]
            except ValueError:
                hint = " (run dcb -N for numeric DSCP)" if name == "dscp-prio" else ""
                raise DcbError("dcb app %s: entry %r cannot be read in %r%s" % (name, tok, line, hint))
            res[key].append(entry)
    return res


def dscp_to_prio(app):
    """The DSCP -> priority map of a parsed APP table: 64 entries, ``None``
    where the table has none.  The kernel keeps a DSCP with two priorities
    when a driver lets it (``dscp-prio 63:1 63:2``; mlx5 replaces instead):
    that entry is the sorted list of both, which no intent of one priority
    matches, so a check names it instead of picking one."""
    out = [None] * DSCPS
    for dscp, prio in app["dscp_prio"]:
        have = out[dscp]
        if have is None:
            out[dscp] = prio
        else:
            out[dscp] = sorted(set((have if isinstance(have, list) else [have]) + [prio]))
    return out


_SELECTORS = ("ethtype", "stream-port", "dgram-port", "port", "dscp", "pcp")


def parse_apptrust(text):
    """``dcb apptrust show dev DEV`` -> the selectors in trust order
    (``['dscp', 'pcp']``); ``[]`` when the order is empty."""
    order = None
    for line in _lines(text, "apptrust"):
        tokens = line.split()
        if tokens[0] != "order:" or order is not None:
            raise DcbError("dcb apptrust: cannot read %r" % line)
        bad = [t for t in tokens[1:] if t not in _SELECTORS]
        if bad:
            raise DcbError("dcb apptrust: unknown selector %r in %r" % (bad[0], line))
        order = tokens[1:]
    if order is None:
        raise DcbError("dcb apptrust: no 'order:' line in %r" % text)
    return order


def trust(app, apptrust=None):
    """The priority trust a host applies, as mlnx_qos names it: the first of
    ``dscp``/``pcp`` in the apptrust order where the driver has one; else (the
    mlx5 driver, no apptrust) ``dscp`` when the APP table holds DSCP entries
    (mlx5 switches the port to DSCP trust with the first DSCP entry and
    registers all 64 while in it) and ``pcp`` when it holds none."""
    if apptrust is not None:
        for sel in apptrust:
            if sel in ("dscp", "pcp"):
                return sel
        return None
    return "dscp" if app["dscp_prio"] else "pcp"


def qos_state(pfc_text, app_text, apptrust_text=None):
    """The part of a PF's QoS state that dcb reads, in the shape the
    mlnx_qos path gives (roce_qos.pf_state): ``{trust, pfc_enabled,
    pfc_priorities, dscp_to_prio, pfc_cap, delay}``.  ``apptrust_text`` is
    ``None`` where the driver has no apptrust (the module learns that from
    ``Attribute not found``)."""
    pfc = parse_pfc(pfc_text)
    app = parse_app(app_text)
    order = parse_apptrust(apptrust_text) if apptrust_text is not None else None
    t = trust(app, order)
    return {"trust": t, "pfc_enabled": pfc["pfc_enabled"], "pfc_priorities": pfc["pfc_priorities"],
            "dscp_to_prio": dscp_to_prio(app) if t == "dscp" else None,
            "pfc_cap": pfc["pfc_cap"], "delay": pfc["delay"]}
