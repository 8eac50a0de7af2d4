# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible hands filters lazy containers (and mappings that only behave like
dicts) and tagged values (strings and numbers that carry their origin and
trust); the collection's plain-Python code gets ordinary dicts, lists,
strings and numbers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


# the scalar types plain() gives a subclass's value as (bool cannot be subclassed)
_SCALARS = (str, int, float)


def plain(value):
    """``value`` with every mapping a dict and every sequence a list,
    recursively, and every string or number of a subclass (ansible's tagged
    values) as a str, int or float. ArgumentSpecValidator deep-copies what it
    validates, and deep-copies a tagged value through its __reduce_ex__, many
    times the cost of a plain one: the cabling or the NICs of a rack are
    hundreds of them."""
    kind = type(value)
    if value is None or kind in _SCALARS or kind is bool:
        return value
    if isinstance(value, dict) or hasattr(value, "items"):
        # a key as the base type too; a tuple key stays a tuple (a list is no key)
        return dict((k if isinstance(k, tuple) else plain(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    for scalar in _SCALARS:
        if isinstance(value, scalar):
            return scalar(value)
    return value


def validate_args(action, **spec):
    """``action.validate_argument_spec(**spec)`` (ansible's ActionBase: the
    same checks, errors and answer) on plain() copies of the task's
    arguments, which the validator deep-copies."""
    task = action._task
    given = task.args
    task.args = plain(given)
    try:
        return action.validate_argument_spec(**spec)
    finally:
        task.args = given


def first(value):
    """One API object from a lookup that may return a list of them (the first)
    or nothing (None)."""
    value = plain(value)
    if isinstance(value, list):
        return value[0] if value else None
    return value or None
