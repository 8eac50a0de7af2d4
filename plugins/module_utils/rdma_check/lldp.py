# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU node's LLDP neighbours, read from lldpd: ``lldpcli -f json show
neighbors`` (lldpd's own JSON writer, src/client/json_writer.c, through the
display of src/client/display.c) and its older, regular form ``-f json0``.

The ``json`` form folds a list of one into its element and keys an object by
its name where it has one, so the same output has three shapes:

* ``{"lldp": {}}`` or ``{"lldp": [{}]}``-like forms with no ``interface``:
  no neighbour;
* ``"interface": {"eth0": {...}}``: one neighbour;
* ``"interface": [{"eth0": {...}}, {"eth1": {...}}]``: several (an interface
  with two neighbours appears twice);

and its chassis is ``{"<system name>": {"id": ...}}``, or ``{"id": ...}``
when the neighbour sends no system name. ``json0`` keeps every list and puts
each name in a ``name`` key (``"interface": [{"name": "eth0", ...}]``,
``"chassis": [{"id": [{"type", "value"}], "name": [{"value"}]}]``).

:func:`parse` turns either into the neutral neighbour form layer 9's cabling
check reads (plugin_utils/rdma_check/cabling.py): ``{local, sysname,
chassis_id, chassis_id_type, port_id, port_id_type, port_descr, ttl, via}``.
An entry on an interface of ``managed`` that lacks what the check needs (a
port ID) fails with :class:`LldpError` quoting it; entries on other
interfaces are read as far as they go. Runs on the node; no Ansible."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

# lldpcli's argv: the reading every layer 9 read makes (nic_facts' lldp)
ARGV = ("lldpcli", "-f", "json0", "show", "neighbors")


class LldpError(ValueError):
    pass


def _one(value):
    """The ``json`` writer's folding undone one level: a list of one is its
    element, an empty list None."""
    if isinstance(value, list):
        return value[0] if len(value) == 1 else (None if not value else value)
    return value


def _text(value):
    """A leaf value in either form: ``"x"``, ``{"value": "x"}``, ``[{"value": "x"}]``."""
    value = _one(value)
    if isinstance(value, dict):
        value = value.get("value")
    return None if value is None else str(value)


def _typed(value):
    """``(type, value)`` of an ``id`` in either form."""
    value = _one(value)
    if not isinstance(value, dict):
        return None, _text(value)
    return (_text(value.get("type")), _text(value.get("value")))


def _entries(interface):
    """``[(local name, entry)]`` of the ``interface`` member in any form."""
    out = []
    items = interface if isinstance(interface, list) else [interface]
    for item in items:
        if not isinstance(item, dict):
            raise LldpError("lldpcli JSON: an interface entry is not an object: %s" % _quote(item))
        if "name" in item and isinstance(item.get("name"), str) and ("chassis" in item or "port" in item):
            out.append((item["name"], item))           # json0
            continue
        for name, entry in item.items():               # json: {"eth0": {...}}
            out.append((name, entry))
    return out


def _chassis(chassis):
    """``(system name, id type, id)`` of a chassis in either form."""
    chassis = _one(chassis)
    if not isinstance(chassis, dict):
        return None, None, None
    if "id" in chassis or "name" in chassis:            # json0, or json without a system name
        kind, cid = _typed(chassis.get("id"))
        return _text(chassis.get("name")), kind, cid
    if len(chassis) == 1:                               # json: {"<system name>": {"id": ...}}
        name, body = next(iter(chassis.items()))
        kind, cid = _typed((body or {}).get("id") if isinstance(body, dict) else None)
        return name, kind, cid
    return None, None, None


def _quote(value):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "..."


def parse(text, managed=()):
    """The neighbours in ``text`` (lldpcli's json or json0 output), in its
    order. ``managed``: the interfaces whose entries must be whole."""
    try:
        doc = json.loads(text or "{}")
    except ValueError as exc:
        lineno = getattr(exc, "lineno", None)
        lines = (text or "").splitlines()
        line = lines[lineno - 1].strip() if lineno and 0 < lineno <= len(lines) else (text or "").strip()[:200]
        raise LldpError("lldpcli did not print JSON (%s): '%s'" % (getattr(exc, "msg", exc), line))
    lldp = _one(doc.get("lldp")) if isinstance(doc, dict) else None
    if lldp is None or lldp == {}:
        return []
    if not isinstance(lldp, dict):
        raise LldpError("lldpcli JSON: 'lldp' is not an object: %s" % _quote(lldp))
    interface = lldp.get("interface")
    if interface is None:
        return []
    out = []
    for local, entry in _entries(interface):
        if not isinstance(entry, dict):
            if local in managed:
                raise LldpError("lldpcli JSON: the neighbour of %s is not readable: %s" % (local, _quote(entry)))
            continue
        sysname, ctype, cid = _chassis(entry.get("chassis"))
        port = _one(entry.get("port"))
        ptype, pid = _typed(port.get("id")) if isinstance(port, dict) else (None, None)
        if pid is None:
            if local in managed:
                raise LldpError("lldpcli JSON: the neighbour of %s has no port ID: %s" % (local, _quote(entry)))
            continue
        out.append({"local": local, "sysname": sysname, "chassis_id": cid, "chassis_id_type": ctype,
                    "port_id": pid, "port_id_type": ptype,
                    "port_descr": _text(port.get("descr")) if isinstance(port, dict) else None,
                    "ttl": _text(port.get("ttl")) if isinstance(port, dict) else None,
                    "via": _text(entry.get("via"))})
    return out


def read(run, which, managed=()):
    """One read of the node's neighbours: ``{neighbors, error}``. ``run(argv)``
    -> ``(rc, stdout, stderr)``; ``which(tool)`` -> its path or None. A node
    without lldpd, or whose lldpd does not answer, is an ``error`` naming it
    (the check says the cables are then unverified from the node's end)."""
    path = which(ARGV[0])
    if not path:
        return {"neighbors": [], "error": "lldpcli not found: lldpd is not installed on the node"}
    rc, out, err = run([path] + list(ARGV[1:]))
    if rc != 0:
        return {"neighbors": [], "error": "lldpcli failed (rc %s): %s; is lldpd running?"
                                          % (rc, (err or out or "").strip()[:300])}
    try:
        return {"neighbors": parse(out, managed), "error": ""}
    except LldpError as exc:
        return {"neighbors": [], "error": str(exc), "failed": True}
