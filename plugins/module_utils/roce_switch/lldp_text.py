# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the NOS drivers share to read their LLDP neighbour tables (layer 9's
cabling check): fixed-column tables, whose columns come from the dashed rule
under the header (NVUE, community SONiC, some EOS) or from the header's
words (EOS, Onyx), and ``Key: value`` blocks (NX-OS, Dell Enterprise SONiC).
Each driver's ``parse_lldp`` (base.Driver) uses these and gives neighbours
in one neutral form, :func:`neighbor`. The formats, with the published
outputs they were built from, are in tests/unit/fixtures/lldp_real/."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from .model import RoceSwitchError

NOT_GIVEN = ("", "not advertised", "null", "n/a", "-")
MAC_TEXT = re.compile(r"^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{4}\.){2}[0-9a-fA-F]{4}$")


def local_port(driver, text):
    """A local port as the driver spells it (``Et1`` -> ``Ethernet1``), or
    as printed where it is no front-panel port of the NOS's form (``Ma1/1``,
    ``mgmt0``, a breakout or a SONiC port in native naming): kept, never
    dropped, and matched by nothing the inventory names."""
    try:
        return driver.canon_port(text)
    except ValueError:
        return text.strip()


def value(text):
    """A field as read: None where the NOS says it was not given."""
    text = (text or "").strip()
    return None if text.lower() in NOT_GIVEN else text


def neighbor(local, sysname=None, chassis_id=None, port_id=None, port_id_type=None, port_descr=None):
    """The neutral form of one neighbour (cabling.py reads it)."""
    port_id, sysname, chassis_id, port_descr = value(port_id), value(sysname), value(chassis_id), value(port_descr)
    if port_id_type is None and port_id and MAC_TEXT.match(port_id):
        port_id_type = "mac"
    return {"local": local, "sysname": sysname, "chassis_id": chassis_id, "port_id": port_id,
            "port_id_type": port_id_type, "port_descr": port_descr}


def rule_spans(rule):
    """Column spans ``[(start, end)]`` of a rule of dash groups
    (``-----  ----  ---``); the last one runs to the end of the line."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    return [(s, spans[i + 1][0] if i + 1 < len(spans) else None) for i, (s, _e) in enumerate(spans)]


def header_spans(header, names):
    """Column spans from where each of ``names`` starts in ``header``."""
    starts = []
    for name in names:
        at = header.find(name, starts[-1] + 1 if starts else 0)
        if at < 0:
            return None
        starts.append(at)
    return [(s, starts[i + 1] if i + 1 < len(starts) else None) for i, s in enumerate(starts)]


def cut(line, spans):
    """The fields of ``line`` at ``spans``, stripped: each column from its
    start to the next one's (the NOS pads every column to its widest value,
    so a value never runs into the next column in the published outputs)."""
    out = []
    for start, end in spans:
        out.append(line[start:end].strip() if end is not None else line[start:].strip())
    return out


def is_rule(line):
    return bool(line.strip()) and set(line.strip()) <= set("- ")


def table(text, header_re, names, nos):
    """``(header line, [(line, fields)])`` of the fixed-column table whose
    header matches ``header_re``: the columns from the dashed rule right
    under the header when it has one group per column, else from where the
    header's ``names`` start. Rows end at a blank line, a footer rule or a
    ``Total entries`` line. RoceSwitchError when the header is missing and
    the text is not empty."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if re.match(header_re, line.strip())), None)
    if at is None:
        if not text.strip() or re.search(r"no lldp (remote|neighbor)", text, re.I):
            return None, []
        raise RoceSwitchError("%s LLDP table: no header like %r in: '%s'"
                              % (nos, " ".join(names), text.strip()[:300]))
    header = lines[at]
    spans = None
    body = lines[at + 1:]
    if body and is_rule(body[0]):
        groups = rule_spans(body[0])
        if len(groups) == len(names):
            spans = groups
        body = body[1:]
    if spans is None:
        spans = header_spans(header, names)
    rows = []
    for line in body:
        if not line.strip() or re.match(r"^\s*total entries", line, re.I):
            break
        if is_rule(line):
            if rows:
                break
            continue
        rows.append((line, cut(line, spans)))
    return header, rows


def blocks(text, start_re):
    """``[[(key, value, line)]]``: the ``Key: value`` lines of each block,
    a block starting at a line matching ``start_re``; lines of no key (a
    description running over several lines) belong to no field."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(start_re, stripped):
            out.append([])
        if not out:
            continue
        m = re.match(r"^([A-Za-z][A-Za-z -]*?)\s*:\s*(.*)$", stripped)
        if m:
            out[-1].append((m.group(1).strip().lower(), m.group(2).strip(), line))
    return out


def unreadable(driver, line, why):
    """A neighbour line naming a managed port that the parser cannot read."""
    driver.unreadable(line, "LLDP neighbour", why)
