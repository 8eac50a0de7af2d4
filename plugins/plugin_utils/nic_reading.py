# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The play's reading of a host's NICs, kept by the gpufabric.stack.nic_facts
action as the host fact ``gpufabric_nic_reading``: which reading a task that
asks for one may take instead of reading again. Plain Python; the action
(plugins/action/nic_facts.py) is the only writer of the fact."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

FACT = "gpufabric_nic_reading"
# options of the action only: the module never sees them
ACTION_OPTIONS = ("reuse", "forget", "also", "also_layers")
# what the module's answer carries that is not part of the reading (ansible_facts: the
# interpreter Ansible discovered)
NOT_READING = ("invocation", "ansible_facts", "changed", "failed", "msg")


# options a read takes several values of: two wishes for one read join them,
# and a reading taken with some answers a wish for fewer
LIST_OPTIONS = ("units", "files", "contents", "probe_modules", "inspect_files", "inspect_units")


class Conflict(ValueError):
    """Two wishes for one read give ``option`` different values: ``first``
    (given by ``first_who``) and ``value``."""

    def __init__(self, option, first_who, first, value):
        super(Conflict, self).__init__("%s: %r and %r" % (option, first, value))
        self.option, self.first_who, self.first, self.value = option, first_who, first, value


def join(into, wish, who):
    """Add the reading options ``wish`` (given by ``who``) to ``into``, the
    options of one read, in place: a list option takes the values it lacks,
    any other option the wish's value where it has none. ``into['_who']``
    keeps who gave each option; Conflict when the two give one differently.
    The one way the doctor's merged read (merge_reads) and a task's ``also``
    (with_also) put several layers' options in one call."""
    givers = into.setdefault("_who", {})
    for key, value in wish.items():
        if key in LIST_OPTIONS:
            have = list(into.get(key) or [])
            into[key] = have + [v for v in value or [] if v not in have]
        elif key in into and _normal(into[key]) != _normal(value):
            raise Conflict(key, givers.get(key), into[key], value)
        elif key not in into:
            into[key] = value
            givers[key] = who
    return into


def merge_reads(wanted):
    """The nic_facts calls that answer every layer's wish in ``wanted``
    ([(layer number, options)]): {sysfs_root: options}, one call per sysfs
    root (a trailing slash aside), lists joined (a wish that names no
    sysfs_root joins the call of the first that does); ValueError when two
    layers want a different option of the same kind (their roles' settings
    disagree), naming both."""
    calls = {}
    rooted = [(n, w) for n, w in wanted if w.get("sysfs_root")]
    rootless = [(n, w) for n, w in wanted if not w.get("sysfs_root")]
    for number, wish in rooted + rootless:
        root = _normal(wish.get("sysfs_root")) or (next(iter(calls)) if calls else "/sys")
        call = calls.setdefault(root, {"sysfs_root": root})
        try:
            join(call, dict((k, v) for k, v in wish.items() if k != "sysfs_root"), number)
        except Conflict as exc:
            raise ValueError("layers %s and %d want different nic_facts %s on %s: %r and %r"
                             % (exc.first_who, number, exc.option, root, exc.first, exc.value))
    for call in calls.values():
        call.pop("_who", None)
    return calls


def with_also(options, also):
    """The task's ``options`` with ``also`` (the options a later layer reads
    with, or None) added as the doctor merges layers' reads (lists joined);
    ValueError naming the option when ``also`` is no dict of reading options,
    or gives one the task gives with another value."""
    if also in (None, ""):
        return dict(options)
    if not isinstance(also, dict):
        raise ValueError("takes a dict of nic_facts options, got %r" % (also,))
    for name in also:
        if name in ACTION_OPTIONS:
            raise ValueError("%s is not a reading option" % name)
    out = join(dict(), options, "the task")
    try:
        join(out, also, "also")
    except Conflict as exc:
        raise ValueError("%s is %r, where the task gives %r" % (exc.option, exc.value, exc.first))
    out.pop("_who", None)
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
    return all(_covers(taken.get(name), value) if name in LIST_OPTIONS else _normal(taken.get(name)) == _normal(value)
               for name, value in want.items())


def _covers(taken, wanted):
    """A list option read with ``taken`` has every value of ``wanted``."""
    have = set(_normal(v) for v in taken or [])
    return all(_normal(v) in have for v in wanted or [])


def run_id():
    """This ansible-playbook run: the pid and start time of the process that
    forked this worker (the strategy's), so that a reading kept in a fact
    cache by an earlier run never answers. An action calls it in its worker."""
    parent = os.getppid()
    try:
        with open("/proc/%d/stat" % parent) as handle:
            # field 22, after the command name in parentheses
            started = handle.read().rsplit(")", 1)[1].split()[19]
    except (IOError, OSError, IndexError):
        started = "?"
    return "%d:%s" % (parent, started)


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
