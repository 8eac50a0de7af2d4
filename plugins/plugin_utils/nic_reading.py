# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The play's reading of a host's NICs, kept by the gpufabric.stack.nic_facts
action: which reading a task that asks for one may take instead of reading
again. Plain Python; the action (plugins/action/nic_facts.py) is the only
writer of the fact.

The reading itself is the answer the reading task registered; the host fact
``gpufabric_nic_reading`` only names it (``pointer``: the run, the variable,
an id the answer carries). Ansible copies every host fact for every task and
host (and a fact cache decodes them from JSON each time), so a reading of
some 50 kB kept as a fact cost more than the module runs it saved; a
registered variable is handed to tasks as it is."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

FACT = "gpufabric_nic_reading"
# options of the action only: the module never sees them
ACTION_OPTIONS = ("reuse", "forget", "also", "also_layers")
# what the module's answer carries that is not part of the reading (ansible_facts: the
# interpreter Ansible discovered)
NOT_READING = ("invocation", "ansible_facts", "changed", "failed", "msg")
# what the action adds to an answer it keeps: the options it was read with and its id,
# and how it was come by
READ_WITH, READING_ID = "read_with", "reading_id"
BOOKKEEPING = (READ_WITH, READING_ID, "reused", "module_executions", "also_layers_left")


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
    reading = _of_answer(answer)
    given = dict(((answer.get("invocation") or {}).get("module_args") or {}))
    given.update(options)
    reading["options"] = given
    reading["run"] = run
    return reading


def _of_answer(answer):
    """What of a nic_facts answer (the module's, or the action's as a task
    registered it) is the reading: not the module's or the action's
    bookkeeping."""
    return dict((k, v) for k, v in answer.items()
                if k not in NOT_READING and k not in BOOKKEEPING and not k.startswith("_ansible"))


def pointer(reading, var, reading_id):
    """The host fact for ``reading`` (as ``kept`` returns it) registered by
    its task as ``var``: the run, the variable and the id the registered
    answer carries (``READING_ID``), nothing of the reading itself."""
    return {"run": reading["run"], "var": var, "id": reading_id}


def current(task_vars):
    """The play's reading as ``kept`` returned it, from a task's variables:
    the registered answer the fact names, when it is still the answer that
    fact was kept for (its id); None when there is no fact, or the variable
    was registered again by another task since (a skipped or failed run of
    the task, a loop, another role's task by the same name): a read then."""
    fact = (task_vars.get("ansible_facts") or {}).get(FACT)
    if not isinstance(fact, dict) or not fact.get("var") or not fact.get("id"):
        return None
    answer = task_vars.get(fact["var"])
    if not isinstance(answer, dict) or answer.get(READING_ID) != fact["id"] or "nics" not in answer:
        return None
    reading = _of_answer(answer)
    reading["options"] = answer.get(READ_WITH) or {}
    reading["run"] = fact.get("run")
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
