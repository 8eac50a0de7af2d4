# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The play's reading of a host's NICs, kept by the gpufabric.stack.nic_facts
action as the host fact ``gpufabric_nic_reading``: which reading a task that
asks for one may take instead of reading again. Plain Python; the action
(plugins/action/nic_facts.py) is the only writer of the fact."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

FACT = "gpufabric_nic_reading"
# options of the action only: the module never sees them
ACTION_OPTIONS = ("reuse", "forget")
# what the module's answer carries that is not part of the reading (ansible_facts: the
# interpreter Ansible discovered)
NOT_READING = ("invocation", "ansible_facts", "changed", "failed", "msg")


def with_also(options, also):
    """The task's ``options`` with ``also`` (the options a later layer reads
    with, or None) added; ValueError naming the option when ``also`` is no
    dict of reading options, or gives one the task gives with another value."""
    if also in (None, ""):
        return dict(options)
    if not isinstance(also, dict):
        raise ValueError("takes a dict of nic_facts options, got %r" % (also,))
    out = dict(options)
    for name, value in also.items():
        if name in ACTION_OPTIONS or name == "also":
            raise ValueError("%s is not a reading option" % name)
        if name in out and _normal(out[name]) != _normal(value):
            raise ValueError("%s is %r, where the task gives %r" % (name, value, out[name]))
        out[name] = value
    return out


def kept(answer, options, run):
    """The reading to keep from a nic_facts ``answer`` to the task
    ``options`` (the module arguments as the task gave them) in the
    ansible-playbook run ``run``: the answer without its bookkeeping, with the
    options it was read with and the run; None for an answer that is no
    reading (failed, unreachable, skipped)."""
    if not isinstance(answer, dict) or answer.get("failed") or answer.get("unreachable") or answer.get("skipped") \
            or "nics" not in answer:
        return None
    reading = dict((k, v) for k, v in answer.items() if k not in NOT_READING and not k.startswith("_ansible"))
    given = dict(((answer.get("invocation") or {}).get("module_args") or {}))
    given.update(options)
    reading["options"] = given
    reading["run"] = run
    return reading


def answers(reading, options, run):
    """True when ``reading`` (the kept fact, or None) answers a task asking
    with ``options`` in the run ``run``: it was read in this run (a fact
    cache keeps facts between runs; an earlier run's reading never answers),
    every option the task gives has the value the reading was taken with (the
    extra reads it wants, its proc root), and the sysfs root and the vendor
    filter are the same, given or not (the module's defaults count)."""
    if not isinstance(reading, dict) or "nics" not in reading or not run or reading.get("run") != run:
        return False
    # the options as the module took them, its defaults included (its invocation)
    taken = reading.get("options") or {}
    want = dict(ALWAYS, **dict((k, v) for k, v in options.items() if k not in ACTION_OPTIONS))
    return all(_normal(taken.get(name)) == _normal(value) for name, value in want.items())


def pfs_of(reading, sysfs_root, vendor=""):
    """A nic_facts answer as a layer sees it: the answer with the NICs of
    ``vendor`` only (all with no vendor) when it was read under
    ``sysfs_root``; None when ``reading`` is no such answer."""
    if not isinstance(reading, dict) or "nics" not in reading or reading.get("sysfs_root") != sysfs_root:
        return None
    result = dict(reading)
    vendor = (vendor or "").lower().replace("0x", "")
    if vendor:
        result["nics"] = [n for n in result.get("nics") or [] if n.get("vendor") == vendor]
    return result


# compared whether the task gives them or not: the module's defaults
ALWAYS = {"sysfs_root": "/sys", "vendor": ""}


def _normal(value):
    """Paths compare without a trailing slash; anything else as given."""
    if isinstance(value, str) and len(value) > 1:
        return value.rstrip("/")
    return value
