# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Staged rollouts (playbooks/rollout.yml): the batch plan of a pool, which
layers a run applies, what the layers' facts say about a change and a reboot,
and merging per-slice reports.

Batches follow ansible-playbook's own ``serial`` semantics (a count, a
percentage of the pool rounded down but at least 1, or a list of those whose
last value repeats; 0 means the whole pool), so the plan printed before the
rollout is the one the play walks.

Plain Python, unit-tested without Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_PCT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_INT_RE = re.compile(r"^\s*\d+\s*$")


class RolloutError(ValueError):
    """Bad rollout input; the message names the variable and the value."""


def parse_serial(value, name="rollout_serial"):
    """A serial value (int, "N", "N%", or a list of those) as a list of ints
    and "N%" strings; fails naming the variable and the value."""
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise RolloutError("%s must not be an empty list" % name)
    out = []
    for item in items:
        if isinstance(item, bool):
            raise RolloutError("%s: %r is not a count or a percentage" % (name, item))
        if isinstance(item, int):
            if item < 0:
                raise RolloutError("%s: %r is negative" % (name, item))
            out.append(item)
            continue
        text = str(item)
        if _INT_RE.match(text):
            out.append(int(text))
            continue
        m = _PCT_RE.match(text)
        if not m:
            raise RolloutError("%s: %r is not a count (2) or a percentage (\"20%%\")" % (name, item))
        pct = float(m.group(1))
        if pct <= 0 or pct > 100:
            raise RolloutError("%s: %r must be above 0%% and at most 100%%" % (name, item))
        out.append("%s%%" % m.group(1))
    return out


def batch_size(item, total):
    """One serial value as a host count, the way ansible-playbook computes it."""
    if isinstance(item, int):
        return total if item <= 0 else item
    pct = float(str(item).rstrip("%"))
    return int((pct / 100.0) * total) or 1


def batches(hosts, serial):
    """The hosts in the batches a play with this serial walks."""
    hosts = list(hosts)
    items = parse_serial(serial)
    out, i, total = [], 0, len(hosts)
    while hosts:
        size = batch_size(items[min(i, len(items) - 1)], total)
        out.append(hosts[:size])
        hosts = hosts[size:]
        i += 1
    return out


def default_serial(pool_hosts, control_plane_hosts, control_plane_serial=1, worker_serial="20%"):
    """The serial of a pool that sets none: one node at a time for a pool of
    control-plane nodes, the worker serial otherwise."""
    pool_hosts = list(pool_hosts)
    cp = set(control_plane_hosts or [])
    if pool_hosts and all(h in cp for h in pool_hosts):
        return control_plane_serial
    return worker_serial


def plan(pool, pool_hosts, serial, control_plane_hosts=None):
    """{pool, serial, batches, control_plane_conflicts}: a conflict is a batch
    that would take more than one control-plane node down at once."""
    parsed = parse_serial(serial)
    walk = batches(pool_hosts, parsed)
    cp = set(control_plane_hosts or [])
    conflicts = [{"batch": i + 1, "hosts": [h for h in b if h in cp]}
                 for i, b in enumerate(walk) if len([h for h in b if h in cp]) > 1]
    return {"pool": pool, "serial": parsed if isinstance(serial, (list, tuple)) else parsed[0],
            "batches": walk, "control_plane_conflicts": conflicts}


def batch_of(the_plan, host):
    """1-based batch number of host in a plan, 0 when it is not in it."""
    for i, b in enumerate(the_plan.get("batches") or []):
        if host in b:
            return i + 1
    return 0


def layer_tags(layer):
    """Tags that select a layer entry {layer, role, tags?}: layerNN and the role name."""
    tags = list(layer.get("tags") or [])
    return tags or ["layer%02d" % int(layer["layer"]), layer["role"]]


def select_layers(layers, run_tags=None, skip_tags=None, wanted=None):
    """The layer entries a run applies: those matching wanted (rollout_tags)
    when given, else those matching ansible-playbook --tags (all when none or
    'all'), less those matching --skip-tags."""
    run_tags = [t for t in (run_tags or []) if t not in ("always",)]
    skip_tags = list(skip_tags or [])
    want = list(wanted or [])
    if not want and run_tags and "all" not in run_tags:
        want = run_tags
    out = []
    for layer in layers or []:
        if "layer" not in layer or "role" not in layer:
            raise RolloutError("every entry of rollout_layers needs layer and role, got %r" % (layer,))
        tags = layer_tags(layer)
        if want and not set(tags) & set(want):
            continue
        if set(tags) & set(skip_tags):
            continue
        out.append(layer)
    return out


def _lookup(facts, path):
    cur = facts
    for part in path.split("."):
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def signals(facts, paths):
    """The dotted fact paths (e.g. kernel_missing_args, bios_plan.reset_needed)
    that are set and truthy in facts: a layer's way of saying 'this needs a
    change' or 'this needs a reboot'."""
    out = []
    for path in paths or []:
        value = _lookup(facts, path)
        if value:
            out.append(path)
    return out


def merge_reports(fragments):
    """Merge report fragments ({host: entry} dicts, as the doctor's
    report.json and the rollout's per-host records are) written by separate
    runs or job slices.  A host in several fragments keeps the entry of the
    later fragment (with a 'generated' stamp the newer one) and is listed in
    conflicts.  Returns {report, conflicts, fragments}."""
    merged, conflicts = {}, []
    for idx, frag in enumerate(fragments or []):
        if frag is None:
            continue
        if not isinstance(frag, dict):
            raise RolloutError("fragment %d is not a {host: entry} mapping: %r" % (idx + 1, frag))
        for host, entry in frag.items():
            if host in merged:
                if host not in conflicts:
                    conflicts.append(host)
                old = merged[host]
                new_stamp = entry.get("generated") if isinstance(entry, dict) else None
                old_stamp = old.get("generated") if isinstance(old, dict) else None
                if new_stamp is not None and old_stamp is not None and str(new_stamp) < str(old_stamp):
                    continue
            merged[host] = entry
    return {"report": dict(sorted(merged.items())), "conflicts": sorted(conflicts),
            "fragments": len([f for f in fragments or [] if f is not None])}


def record_fragment(record):
    """One host's rollout record (rollout/<host>.json) as a {host: record}
    fragment for merge_reports."""
    if not isinstance(record, dict) or not record.get("host"):
        raise RolloutError("not a rollout record (no host): %r" % (record,))
    return {record["host"]: record}


def record_line(record):
    """One line per host for the merged rollout report."""
    gate = (record.get("gate") or {}).get("status")
    line = "%s: %s, batch %s of %s, rollout %s%s" % (
        record.get("host"), record.get("outcome"), record.get("batch"), record.get("batches"), record.get("rollout"),
        ", gate %s" % gate if gate else "")
    if record.get("failure"):
        line += ": " + record["failure"]
    return line
