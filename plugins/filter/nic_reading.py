# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A nic_facts answer as a layer sees it: the PFs of one vendor under one
sysfs root, or None. Documented in nic_reading.yml; the play's reading itself
is kept by the nic_facts action (plugin_utils/nic_reading.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def nic_reading(reading, sysfs_root, vendor=""):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading as reading_of
    return reading_of.pfs_of(reading, sysfs_root, vendor)


class FilterModule(object):
    def filters(self):
        return {"nic_reading": nic_reading}
