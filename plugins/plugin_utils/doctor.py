# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's result record (``result``, the one constructor; ``record``,
its check) and a host's verdict over its layers (first failing layer, upper
layers blocked).  Each layer's check is in checks/<role>.py.  Plain Python,
unit-tested without Ansible."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers

LAYERS = layers.NAMES
STATUSES = ("pass", "fail", "warn", "blocked", "skipped")
FIELDS = ("layer", "name", "status", "reason", "evidence", "remediation")


def result(layer, status, reason, evidence=None, remediation=None):
    """The one constructor of a layer's result record: {layer, name, status,
    reason, evidence, remediation}, evidence a list of strings (one line of
    the report each).  Every check, the doctor's action plugin and the
    report writers go through it or through ``record``; a string where the
    evidence list belongs is refused, not split into characters."""
    layer = layers.get(layer).number
    if status not in STATUSES:
        raise ValueError("layer %d: status %r is not one of %s" % (layer, status, ", ".join(STATUSES)))
    if evidence is None:
        evidence = []
    if isinstance(evidence, (str, bytes)) or not isinstance(evidence, (list, tuple)):
        raise TypeError("layer %d: evidence must be a list of strings, one per line, not %s %r"
                        % (layer, type(evidence).__name__, evidence))
    bad = [e for e in evidence if not isinstance(e, str)]
    if bad:
        raise TypeError("layer %d: evidence must be a list of strings, not %s %r"
                        % (layer, type(bad[0]).__name__, bad[0]))
    if not isinstance(reason, str) or not reason:
        raise TypeError("layer %d: reason must be a non-empty string, not %r" % (layer, reason))
    if remediation is not None and not isinstance(remediation, str):
        raise TypeError("layer %d: remediation must be a string, not %r" % (layer, remediation))
    return {"layer": layer, "name": layers.NAMES[layer], "status": status, "reason": reason,
            "evidence": list(evidence), "remediation": remediation or ""}


def record(value, where="a result"):
    """``value`` checked to be a result record as ``result`` makes it (the
    same fields, evidence a list of strings) and returned as one; ValueError
    naming ``where`` and what is wrong otherwise.  The report writers take
    nothing else."""
    if not isinstance(value, dict):
        raise ValueError("%s is not a layer result: %r" % (where, value))
    extra = sorted(set(value) - set(FIELDS))
    missing = [f for f in ("layer", "status", "reason") if f not in value]
    if extra or missing:
        raise ValueError("%s is not a layer result: %s" % (
            where, "; ".join(x for x in ("unknown field(s) " + ", ".join(extra) if extra else "",
                                         "missing " + ", ".join(missing) if missing else "") if x)))
    try:
        made = result(value["layer"], value["status"], value["reason"], value.get("evidence"),
                      value.get("remediation"))
    except (TypeError, ValueError) as exc:
        raise ValueError("%s: %s" % (where, exc))
    if value.get("name") not in (None, made["name"]):
        raise ValueError("%s: layer %d is %s, not %r" % (where, made["layer"], made["name"], value.get("name")))
    return made


def verdict(results):
    """Results sorted by layer, with every layer above the first failure
    turned into 'blocked by N'.  Returns (verdict, results)."""
    out, first = [], None
    for r in sorted(results, key=lambda r: r["layer"]):
        if first is not None and r["status"] not in ("skipped",):
            r = dict(r, status="blocked", reason="blocked by layer %d" % first["layer"], remediation="")
        out.append(r)
        if first is None and r["status"] == "fail":
            first = r
    if first is None:
        worst = "warn" if any(r["status"] == "warn" for r in out) else "pass"
        return {"status": worst, "layer": None, "reason": "all checked layers healthy"}, out
    return {"status": "fail", "layer": first["layer"], "reason": first["reason"],
            "remediation": first["remediation"]}, out


def layer_tag(layer):
    """The tag of a layer in site.yml and validate.yml: layer07."""
    return layers.tag(layer)


def _given(given):
    return dict((int(r["layer"]), r) for r in given or [] if isinstance(r, dict) and "layer" in r)


def earlier_failure(entries, skip_tags=(), given=None):
    """The first failing result among ``entries`` ([{layer, role}], in the
    order checked) in ``given`` (the records of the doctor action's tasks
    on the host in this run); None when none failed.  A layer given to
    --skip-tags is not looked at."""
    skip, made = set(skip_tags or []), _given(given)
    for entry in entries or []:
        layer = int(entry["layer"])
        if layer_tag(layer) in skip:
            continue
        res = made.get(layer)
        if isinstance(res, dict) and res.get("status") == "fail":
            return res
    return None


def layer_results(entries, skip_tags=(), given=None):
    """One record per layer of ``entries`` ([{layer, role}]), in their order:
    'skipped' for those given to --skip-tags, the record in ``given`` (the
    doctor action's, in this run) up to the first failing one, 'blocked by
    N' after it.  A layer with no record (its check stopped with an error)
    fails.  Each goes through ``record``: anything else fails here naming
    the host's layer."""
    skip, out, first, made = set(skip_tags or []), [], None, _given(given)
    for entry in entries or []:
        layer, role = int(entry["layer"]), str(entry["role"])
        if layer_tag(layer) in skip:
            out.append(result(layer, "skipped", "not checked: --skip-tags " + layer_tag(layer)))
        elif first is not None:
            out.append(result(layer, "blocked", "blocked by layer %d" % first["layer"]))
        else:
            res = made.get(layer)
            if not isinstance(res, dict) or "status" not in res:
                res = result(layer, "fail", "the %s check stopped with an error" % role, [],
                             "see the failed task of this host in the play's output")
            res = record(res, "the layer %d (%s) result" % (layer, role))
            out.append(res)
            if res["status"] == "fail":
                first = res
    return out


def unreachable(host, message="host unreachable"):
    return {"status": "fail", "layer": 1, "reason": "%s: %s" % (host, message)}, [
        result(1, "fail", message, [], "check power and the BMC (layer 1), then the connection settings")]
