# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module_utils module imported on the first use of one of its names.

Ansible templates in a forked worker process per host and task, and a worker
that looks up any one filter of a collection imports every filter file of that
collection. Collection module_utils are compiled from source at each import (the
collection loader keeps no bytecode), so a filter file that imported its
module_utils at the top made every such worker compile all of them: about a
tenth of a second per host and task. The filter files name their module_utils
through ``deferred()``, and a worker compiles only those of the filters it calls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

PACKAGE = "ansible_collections.gpufabric.stack.plugins.module_utils"


class Deferred(object):
    """Stands for the module ``PACKAGE.<name>``; imports it on the first attribute read."""

    __slots__ = ("_name", "_module")

    def __init__(self, name):
        self._name = "%s.%s" % (PACKAGE, name)
        self._module = None

    def __getattr__(self, attr):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self):
        return "<deferred %s%s>" % (self._name, "" if self._module is None else " (imported)")


def deferred(name):
    """The module_utils module ``name`` of this collection, imported when first used."""
    return Deferred(name)
