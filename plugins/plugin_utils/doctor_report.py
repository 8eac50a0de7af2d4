# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's report in the forms people and CI systems read: a text table
(ANSI colours optional), JUnit XML (one testsuite per host, one testcase per
layer) and a self-contained HTML rack view (a grid of hosts x layers, the
cause on hover and on click, the switches and the cabling plan).

``report`` is what roles/doctor writes to report.json:
``{host: {verdict: {status, layer, reason}, layers: [{layer, name, status,
reason, evidence, remediation}]}}``.  Plain standard-library Python."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import xml.etree.ElementTree as ET
from html import escape

from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import LAYERS, record

TITLES = layers.TITLES
SYMBOL = {"pass": "ok", "fail": "FAIL", "warn": "warn", "blocked": "blocked", "skipped": "-"}
GLYPH = {"pass": "\u2713", "fail": "\u2717", "warn": "!", "blocked": "\u2298", "skipped": "\u2013", "none": ""}
ANSI = {"pass": "32", "fail": "1;31", "warn": "33", "blocked": "90", "skipped": "2"}
_CTRL_RE = re.compile(u"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def checked(report):
    """``report`` with every layer of every host checked to be a result
    record (doctor.record: evidence a list of strings, no other fields);
    ValueError naming the host and the layer otherwise.  Every writer takes
    its report through here, so a record made any other way is refused, not
    printed one character per line."""
    if not isinstance(report, dict):
        raise ValueError("the report is not {host: {verdict, layers}}: %r" % (report,))
    out = {}
    for host, entry in report.items():
        if not isinstance(entry, dict):
            raise ValueError("%s: not {verdict, layers}: %r" % (host, entry))
        rows = [record(r, host) for r in entry.get("layers") or []]
        out[host] = dict(entry, layers=rows)
    return out


def json_report(report):
    """report.json: the checked report, as Ansible's to_nice_json writes it."""
    return json.dumps(checked(report), indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def _layers(report):
    return sorted({int(r["layer"]) for h in report.values() for r in h.get("layers") or []})


def _by_layer(entry):
    return dict((int(r["layer"]), r) for r in entry.get("layers") or [])


def _verdict_text(v):
    if v.get("status") != "fail":
        return "healthy"
    return "layer %s: %s" % (v.get("layer"), v.get("reason"))


def _paint(text, status, color):
    if not color or status not in ANSI:
        return text
    return "\033[%sm%s\033[0m" % (ANSI[status], text)


# --------------------------------------------------------------------------
# text table
# --------------------------------------------------------------------------

def table(report, color=False):
    """Hosts x layers as text lines; with ``color`` every cell and the
    verdict carry ANSI colours (green pass, red fail, yellow warn, grey
    blocked/skipped).  Without colour the lines are plain."""
    report = checked(report)
    layers = _layers(report)
    width = max([len(h) for h in report] + [4])
    head = "%-*s  %s  verdict" % (width, "host", " ".join("L%-6d" % n for n in layers))
    lines = [head, "-" * len(head)]
    for host in sorted(report):
        by = dict((int(r["layer"]), r["status"]) for r in report[host].get("layers") or [])
        cells = " ".join(_paint("%-7s" % SYMBOL.get(by.get(n, "skipped"), "?"), by.get(n, "skipped"), color)
                         for n in layers)
        v = report[host].get("verdict") or {}
        vstatus = v.get("status") if v.get("status") in ("fail", "warn") else "pass"
        lines.append("%-*s  %s  %s" % (width, host, cells, _paint(_verdict_text(v), vstatus, color)))
    return lines


# --------------------------------------------------------------------------
# JUnit XML
# --------------------------------------------------------------------------

def _clean(text):
    return _CTRL_RE.sub("", u"%s" % (text,))


def junit_xml(report, name="gpufabric doctor", timestamp=None):
    """JUnit XML: ``<testsuites>`` with one ``<testsuite>`` per host and one
    ``<testcase>`` per layer.  A failing layer has a ``<failure>`` (message
    = reason, text = evidence and remediation); blocked and skipped layers
    are ``<skipped>``; warnings pass with the warning in ``<system-out>``."""
    report = checked(report)
    root = ET.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for host in sorted(report):
        rows = sorted(report[host].get("layers") or [], key=lambda r: int(r["layer"]))
        fails = sum(1 for r in rows if r["status"] == "fail")
        skips = sum(1 for r in rows if r["status"] in ("blocked", "skipped"))
        suite = ET.SubElement(root, "testsuite", name=host, tests=str(len(rows)), failures=str(fails),
                              errors="0", skipped=str(skips), time="0")
        if timestamp:
            suite.set("timestamp", timestamp)
        v = report[host].get("verdict") or {}
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="verdict", value=_clean(_verdict_text(v)))
        for r in rows:
            n = int(r["layer"])
            case = ET.SubElement(suite, "testcase", classname="gpufabric.doctor.%s" % host,
                                 name="layer %02d %s" % (n, r.get("name") or LAYERS.get(n, "")), time="0")
            body = "\n".join(_clean(e) for e in r.get("evidence") or [])
            if r.get("remediation"):
                body += ("\n" if body else "") + "remediation: " + _clean(r["remediation"])
            if r["status"] == "fail":
                f = ET.SubElement(case, "failure", message=_clean(r.get("reason") or ""), type="layer%02d" % n)
                f.text = body
            elif r["status"] in ("blocked", "skipped"):
                ET.SubElement(case, "skipped", message=_clean("%s: %s" % (r["status"], r.get("reason") or "")))
            elif r["status"] == "warn" or body:
                out = ET.SubElement(case, "system-out")
                out.text = ("warn: %s\n" % _clean(r.get("reason") or "") if r["status"] == "warn" else "") + body
        totals["tests"] += len(rows)
        totals["failures"] += fails
        totals["skipped"] += skips
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("errors", "0")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --------------------------------------------------------------------------
# HTML rack view
# --------------------------------------------------------------------------

CSS = u"""
:root { --pass:#2e9e44; --fail:#d32f2f; --warn:#f2a900; --blocked:#7b828c; --skipped:#c9ced6; --bg:#f5f6f8; --ink:#1d2530; }
* { box-sizing: border-box; }
body { margin: 0; font: 13px/1.35 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink); background: var(--bg); }
header { padding: 10px 18px 6px; background: #fff; border-bottom: 1px solid #dde1e6; display: flex; flex-wrap: wrap; gap: 6px 24px; align-items: baseline; }
header h1 { font-size: 18px; margin: 0; }
.summary b.bad { color: #a31515; } .summary b.good { color: #1d6b2f; } .summary b.meh { color: #8a5a00; }
.legend { display: flex; gap: 12px; align-items: center; font-size: 12px; color: #4a5563; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; vertical-align: -2px; margin-right: 4px; }
main { padding: 10px 18px; }
.top { display: flex; gap: 16px; align-items: flex-start; }
table.grid { border-collapse: separate; border-spacing: 3px; background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 4px; }
table.grid th { font-weight: 600; font-size: 11px; color: #4a5563; text-align: center; padding: 0 2px; }
table.grid thead th.layer { width: 44px; min-width: 44px; max-width: 44px; line-height: 1.1; }
table.grid thead th.layer small { display: block; font-weight: 400; font-size: 9px; color: #7a8491; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; max-width: 40px; }
table.grid th.host { text-align: left; font-size: 12px; color: var(--ink); padding-right: 8px; white-space: nowrap; }
table.grid tbody th.group { text-align: left; font-size: 11px; color: #7a8491; padding-top: 6px; }
td.cell { width: 44px; min-width: 44px; max-width: 44px; height: 24px; border-radius: 3px; text-align: center; color: #fff;
  font-weight: 700; cursor: pointer; padding: 0; }
td.cell.pass { background: var(--pass); } td.cell.fail { background: var(--fail); } td.cell.warn { background: var(--warn); color: #3a2a00; }
td.cell.blocked { background: var(--blocked); } td.cell.skipped { background: var(--skipped); color: #4a5563; }
td.cell.none { background: transparent; border: 1px dashed #d5d9df; cursor: default; }
td.cell:hover, td.cell:focus { outline: 2px solid #1d2530; outline-offset: 1px; }
td.cell.selected { outline: 3px solid #0b57d0; outline-offset: 1px; }
td.verdict { padding: 0 8px; font-size: 12px; white-space: nowrap; max-width: 360px; overflow: hidden; text-overflow: ellipsis; }
td.verdict.fail { color: #a31515; font-weight: 600; } td.verdict.pass { color: #1d6b2f; } td.verdict.warn { color: #8a5a00; }
aside.details { flex: 1; min-width: 280px; max-width: 460px; background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 10px 12px; }
aside.details h2 { font-size: 14px; margin: 0 0 6px; }
aside.details .status { display: inline-block; padding: 1px 6px; border-radius: 3px; color: #fff; font-weight: 600; font-size: 11px; }
aside.details .status.pass { background: #1d6b2f; } aside.details .status.fail { background: #a31515; }
aside.details .status.warn { background: #8a5a00; } aside.details .status.blocked, aside.details .status.skipped { background: #59616b; }
aside.details ul { padding-left: 18px; margin: 4px 0; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 11px; word-break: break-word; }
aside.details .fix { background: #eef4ff; border-left: 3px solid #0b57d0; padding: 4px 8px; margin-top: 6px; }
aside.details .hint { color: #7a8491; }
section { margin-top: 16px; }
section h2 { font-size: 15px; margin: 0 0 6px; }
svg.cabling { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; }
svg.cabling text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: #1d2530; }
svg.cabling .box { stroke: #1d2530; stroke-width: 1; }
svg.cabling .box.pass { fill: #cfe9d5; } svg.cabling .box.fail { fill: #f6c6c6; } svg.cabling .box.warn { fill: #fbe7b0; }
svg.cabling .box.blocked, svg.cabling .box.skipped, svg.cabling .box.none { fill: #e4e7eb; }
svg.cabling line { stroke-width: 2; } svg.cabling line.pass { stroke: #57b36b; } svg.cabling line.fail { stroke: #e57373; stroke-width: 3; }
svg.cabling line.moved { stroke: #c2410c; stroke-width: 3; stroke-dasharray: 7 3; }
svg.cabling line.warn { stroke: #e0b84a; } svg.cabling line.blocked, svg.cabling line.skipped, svg.cabling line.none { stroke: #aab1ba; stroke-dasharray: 4 3; }
.switches { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 8px; }
.switch { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 6px 10px; }
.switch h3 { font-size: 13px; margin: 0 0 4px; } .switch h3 .st { font-weight: 400; font-size: 11px; color: #59616b; }
.switch table, .failures table { border-collapse: collapse; font-size: 12px; }
.switch td, .switch th, .failures td, .failures th { padding: 1px 8px 1px 0; text-align: left; }
.dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 4px; background: #aab1ba; }
.dot.pass { background: #57b36b; } .dot.fail { background: #e57373; } .dot.warn { background: #e0b84a; }
.failures td.reason { max-width: 640px; }
"""

JS = u"""
(function () {
  var data = JSON.parse(document.getElementById('doctor-data').textContent);
  var panel = document.getElementById('details');
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function show(host, layer) {
    var h = data.report[host];
    if (!h) { return; }
    var r = null;
    (h.layers || []).forEach(function (x) { if (String(x.layer) === String(layer)) { r = x; } });
    var prev = document.querySelector('td.cell.selected');
    if (prev) { prev.classList.remove('selected'); }
    var td = document.getElementById('cell-' + host + '-' + layer);
    if (td) { td.classList.add('selected'); }
    panel.textContent = '';
    panel.appendChild(el('h2', null, host + ' \\u00b7 layer ' + layer + ' ' + (data.titles[layer] || '')));
    if (!r) { panel.appendChild(el('p', 'hint', 'not checked')); return; }
    var p = el('p');
    p.appendChild(el('span', 'status ' + r.status, r.status));
    p.appendChild(document.createTextNode(' ' + (r.reason || '')));
    panel.appendChild(p);
    if (r.evidence && r.evidence.length) {
      panel.appendChild(el('div', 'hint', 'evidence'));
      var ul = el('ul', 'evidence');
      r.evidence.forEach(function (line) { ul.appendChild(el('li', null, line)); });
      panel.appendChild(ul);
    }
    if (r.remediation) { panel.appendChild(el('div', 'fix', 'fix: ' + r.remediation)); }
  }
  Array.prototype.forEach.call(document.querySelectorAll('td.cell[data-layer]'), function (td) {
    var go = function () { history.replaceState(null, '', '#' + td.id); show(td.getAttribute('data-host'), td.getAttribute('data-layer')); };
    td.addEventListener('click', go);
    td.addEventListener('keydown', function (ev) { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(); } });
  });
  function fromHash() {
    var m = /^#cell-(.+)-(\\d+)$/.exec(decodeURIComponent(location.hash || ''));
    if (m) { show(m[1], m[2]); }
  }
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
"""


def _e(text):
    return escape(u"%s" % (text,), quote=True)


def _status_of(entry):
    v = (entry or {}).get("verdict") or {}
    if not entry:
        return "none"
    if v.get("status") == "fail":
        return "fail"
    if v.get("status") == "warn":
        return "warn"
    return "pass"


def _worst(*statuses):
    for s in ("fail", "warn", "blocked", "none", "skipped", "pass"):
        if s in statuses:
            return s
    return "none"


# Layers a cable's health depends on, from the node's side: the switch port
# (7), host RoCE QoS (8) and the RDMA fabric check (9).
FABRIC_LAYERS = (7, 8, 9)


def _link_status(report, node, switch):
    """A cable is red when its switch fails or the node's first failing
    layer is a fabric layer, grey when the node fails below them (the fabric
    was not checked), else green (amber on a warning)."""
    sw = _status_of(report.get(switch)) if switch in report else "none"
    entry = report.get(node)
    if not entry:
        return _worst(sw, "none")
    v = entry.get("verdict") or {}
    if v.get("status") == "fail":
        layer = int(v.get("layer") or 0)
        mine = "fail" if layer in FABRIC_LAYERS else ("blocked" if layer < min(FABRIC_LAYERS) else "pass")
    else:
        mine = _status_of(entry)
    return _worst(sw, mine)


def _script_json(obj):
    return json.dumps(obj, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _grid_rows(report, hosts, columns, group):
    out = []
    if not hosts:
        return out
    out.append(u'<tbody class="rows-%s"><tr><th class="group" colspan="%d">%s</th></tr>' % (
        group, len(columns) + 2, "switches" if group == "switches" else "GPU nodes"))
    for host in hosts:
        entry = report.get(host) or {}
        by = _by_layer(entry)
        cells = []
        for n in columns:
            r = by.get(n)
            if r is None:
                cells.append(u'<td class="cell none" title="%s"></td>' % _e(
                    "%s \u00b7 L%d %s: not checked" % (host, n, LAYERS.get(n, ""))))
                continue
            st = r.get("status") or "skipped"
            title = "%s \u00b7 L%d %s: %s \u2014 %s" % (host, n, r.get("name") or LAYERS.get(n, ""), st, r.get("reason") or "")
            cells.append(u'<td class="cell %s" id="cell-%s-%d" data-host="%s" data-layer="%d" data-status="%s" '
                         u'tabindex="0" title="%s">%s</td>' % (st, _e(host), n, _e(host), n, st, _e(title), GLYPH.get(st, "")))
        v = entry.get("verdict") or {}
        vs = _status_of(entry)
        if not entry:
            vtext = "not checked"
        elif vs == "warn":
            w = next((r for r in sorted(by.values(), key=lambda r: int(r["layer"])) if r.get("status") == "warn"), None)
            vtext = ("warn at layer %s: %s" % (w["layer"], w.get("reason") or "")) if w else "warn"
        else:
            vtext = _verdict_text(v)
        out.append(u'<tr class="host-row" data-host="%s" data-verdict="%s"><th class="host" scope="row">%s</th>%s'
                   u'<td class="verdict %s" title="%s">%s</td></tr>' % (
                       _e(host), vs, _e(host), "".join(cells), vs, _e(vtext), _e(vtext)))
    out.append(u"</tbody>")
    return out


def _cabling_svg(report, nodes, switches, cabling):
    if not cabling:
        return u""
    sw_names = [s for s in switches] + sorted({c.get("switch") for c in cabling if c.get("switch") not in switches})
    node_names = [n for n in nodes] + sorted({c.get("node") for c in cabling if c.get("node") not in nodes})
    width = max(900, 110 * len(node_names) + 40, 200 * len(sw_names) + 40)
    height = 250
    sw_w, sw_h, nd_w, nd_h = 150, 36, 92, 34
    sx = dict((s, 20 + (i + 0.5) * (width - 40) / len(sw_names)) for i, s in enumerate(sw_names))
    nx = dict((n, 20 + (i + 0.5) * (width - 40) / len(node_names)) for i, n in enumerate(node_names))
    per_switch = {}
    for c in cabling:
        per_switch.setdefault(c.get("switch"), []).append(c)
    per_node = {}
    for c in cabling:
        per_node.setdefault(c.get("node"), []).append(c)
    parts = [u'<svg class="cabling" width="%d" height="%d" viewBox="0 0 %d %d" '
             u'role="img" aria-label="switches and cabling">' % (width, height, width, height)]
    for c in cabling:
        s, n = c.get("switch"), c.get("node")
        links = per_switch[s]
        i = links.index(c)
        x1 = sx[s] - sw_w / 2 + 8 + (sw_w - 16) * (i + 0.5) / len(links)
        j = per_node[n].index(c)
        x2 = nx[n] - nd_w / 2 + 8 + (nd_w - 16) * (j + 0.5) / len(per_node[n])
        st = _link_status(report, n, s)
        moved = c.get("planned_port") is not None
        note = (" (as LLDP found it; the plan says %s %s)" % (c.get("planned_switch"), c.get("planned_port"))
                if moved else "")
        parts.append(u'<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"><title>%s</title></line>' % (
            st + (" moved" if moved else ""), x1, 30 + sw_h, x2, 190,
            _e("%s %s \u2194 %s %s: %s%s" % (n, c.get("pf") or "", s, c.get("port") or "", st, note))))
    for s in sw_names:
        st = _status_of(report.get(s)) if s in report else "none"
        parts.append(u'<g class="switch-box" data-switch="%s"><rect class="box %s" x="%.1f" y="30" width="%d" height="%d" rx="4">'
                     u'<title>%s</title></rect><text x="%.1f" y="52" text-anchor="middle">%s (%d ports)</text></g>' % (
                         _e(s), st, sx[s] - sw_w / 2, sw_w, sw_h, _e("%s: %s" % (s, _verdict_text((report.get(s) or {}).get("verdict") or {}))),
                         sx[s], _e(s), len(per_switch.get(s, []))))
    for n in node_names:
        st = _status_of(report.get(n))
        what = _verdict_text((report.get(n) or {}).get("verdict") or {}) if n in report else "not checked"
        parts.append(u'<g class="node-box" data-node="%s"><rect class="box %s" x="%.1f" y="190" width="%d" height="%d" rx="4">'
                     u'<title>%s</title></rect><text x="%.1f" y="211" text-anchor="middle">%s</text></g>' % (
                         _e(n), st, nx[n] - nd_w / 2, nd_w, nd_h, _e("%s: %s" % (n, what)), nx[n], _e(n)))
    parts.append(u"</svg>")
    return u"".join(parts)


def _switch_cards(report, switches, cabling):
    names = list(switches) + sorted({c.get("switch") for c in cabling or [] if c.get("switch") not in switches})
    if not names:
        return u""
    out = [u'<div class="switches">']
    for s in names:
        st = _status_of(report.get(s)) if s in report else "none"
        v = (report.get(s) or {}).get("verdict") or {}
        out.append(u'<div class="switch" data-switch="%s"><h3><span class="dot %s"></span>%s <span class="st">%s</span></h3>' % (
            _e(s), st, _e(s), _e(_verdict_text(v) if s in report else "not checked")))
        ports = [c for c in cabling or [] if c.get("switch") == s]
        if ports:
            out.append(u"<table><tr><th>port</th><th>node</th><th>pf</th><th>pci</th></tr>")
            for c in ports:
                nst = _status_of(report.get(c.get("node")))
                out.append(u'<tr><td>%s</td><td><span class="dot %s"></span>%s</td><td>%s</td><td>%s</td></tr>' % (
                    _e(c.get("port") or ""), nst, _e(c.get("node") or ""), _e(c.get("pf") or ""), _e(c.get("pci_address") or "")))
            out.append(u"</table>")
        out.append(u"</div>")
    out.append(u"</div>")
    return u"".join(out)


def html_report(report, switches=None, cabling=None, title="gpufabric doctor", generated=None):
    """The rack view as one HTML document with inline CSS and JavaScript and
    no external references.  ``switches``: the inventory names of the leaf
    switches (their rows are grouped apart); ``cabling``: the cabling plan
    (``gpufabric_cabling``: ``[{node, pf, pci_address, switch, port}]``), or
    the cables as LLDP found them (rdma_check/cabling.py ``as_found``): a
    cable that is not where the plan has it is drawn where it is, dashed,
    its title naming the planned port."""
    report = checked(report)
    switches = [s for s in (switches or [])]
    cabling = [c for c in (cabling or []) if isinstance(c, dict) and c.get("node") and c.get("switch")]
    sw_rows = [s for s in switches if s in report] + sorted(
        h for h in report if h not in switches and h in {c.get("switch") for c in cabling})
    node_rows = sorted(h for h in report if h not in sw_rows)
    columns = sorted(set(TITLES) | set(_layers(report)))
    failing = [h for h in node_rows if _status_of(report[h]) == "fail"]
    warning = [h for h in node_rows if _status_of(report[h]) == "warn"]
    healthy = len(node_rows) - len(failing) - len(warning)
    sw_fail = [s for s in sw_rows if _status_of(report[s]) == "fail"]
    head = []
    for n in columns:
        head.append(u'<th class="layer" scope="col" title="Layer %d: %s (%s)">L%d<small>%s</small></th>' % (
            n, _e(TITLES.get(n, "")), _e(LAYERS.get(n, "")), n, _e(LAYERS.get(n, ""))))
    legend = u"".join(u'<span><span class="swatch %s" style="background:var(--%s)"></span>%s</span>' % (s, s, s)
                      for s in ("pass", "fail", "warn", "blocked", "skipped"))
    fail_rows = []
    for h in failing + sw_fail:
        v = report[h]["verdict"]
        r = _by_layer(report[h]).get(int(v.get("layer") or 0)) or {}
        fail_rows.append(u'<tr><th>%s</th><td>L%s %s</td><td class="reason">%s</td><td>%s</td></tr>' % (
            _e(h), _e(v.get("layer")), _e(r.get("name") or ""), _e(v.get("reason") or ""),
            _e(r.get("remediation") or v.get("remediation") or "")))
    data = {"report": report, "titles": dict((str(k), v) for k, v in TITLES.items())}
    doc = [
        u'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        u'<meta name="viewport" content="width=device-width, initial-scale=1">',
        u"<title>%s</title><style>%s</style></head><body>" % (_e(title), CSS),
        u'<header><h1>%s</h1><div class="summary"><b>%d</b> GPU nodes: <b class="good">%d healthy</b>, '
        u'<b class="bad">%d failing</b>, <b class="meh">%d warning</b>; <b>%d</b> switches (%d failing)%s</div>'
        u'<div class="legend">%s</div></header>' % (
            _e(title), len(node_rows), healthy, len(failing), len(warning), len(sw_rows), len(sw_fail),
            (u" \u00b7 %s" % _e(generated)) if generated else u"", legend),
        u'<main><div class="top"><table class="grid" id="grid" aria-label="hosts by layers"><thead><tr><th class="host">host</th>%s'
        u'<th>verdict</th></tr></thead>' % u"".join(head),
    ]
    doc += _grid_rows(report, node_rows, columns, "nodes")
    doc += _grid_rows(report, sw_rows, columns, "switches")
    doc.append(u'</table><aside class="details" id="details" aria-live="polite"><h2>Details</h2>'
               u'<p class="hint">Hover a cell for the cause; click it for the evidence and the fix.</p></aside></div>')
    if fail_rows:
        doc.append(u'<section class="failures" id="failures"><h2>First failing layer per host</h2><table>'
                   u"<tr><th>host</th><th>layer</th><th>reason</th><th>fix</th></tr>%s</table></section>" % u"".join(fail_rows))
    if cabling or sw_rows:
        doc.append(u'<section class="fabric" id="fabric"><h2>Switches and cabling</h2>%s%s</section>' % (
            _cabling_svg(report, node_rows, [s for s in switches] or sw_rows, cabling),
            _switch_cards(report, [s for s in switches] or sw_rows, cabling)))
    doc.append(u'</main><script type="application/json" id="doctor-data">%s</script><script>%s</script></body></html>\n' % (
        _script_json(data), JS))
    return u"".join(doc)
