# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible hands filters lazy containers (and mappings that only behave like
dicts); the collection's plain-Python code gets ordinary dicts and lists."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def plain(value):
    """``value`` with every mapping a dict and every sequence a list, recursively."""
    if isinstance(value, dict) or hasattr(value, "items"):
        return dict((k, plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def first(value):
    """One API object from a lookup that may return a list of them (the first)
    or nothing (None)."""
    value = plain(value)
    if isinstance(value, list):
        return value[0] if value else None
    return value or None
