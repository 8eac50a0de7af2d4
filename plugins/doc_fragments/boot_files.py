# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options with which a module that already runs on a node also reports
    # the layer's boot files and units, for gpufabric.stack.host_files'
    # action to decide on the controller whether it has anything to do.
    DOCUMENTATION = r"""
options:
  inspect_files:
    description:
      - Absolute paths of boot-time files (scripts, systemd units, udev rules) to report in RV(inspected) (its C(files))
        in the same call, read-only, also in check mode.
      - Per path C(null) when absent, else its C(sha256), C(mode) (four octal digits), C(owner) and C(group).
      - The roles pass this reading to M(gpufabric.stack.host_files) (its C(inspected) option),
        whose action compares it with the files it renders and runs nothing on the node when nothing would
        change, which saves a round trip per node when nothing does.
    type: list
    elements: path
    default: []
  inspect_units:
    description:
      - systemd units whose C(systemctl is-enabled) answer to report in RV(inspected) (its C(units)) as true (starts at boot)
        or false (disabled, masked, indirect, unknown, or no C(systemctl) on the host). A module that reads units'
        C(UnitFileState) anyway (M(gpufabric.stack.nic_facts)) takes the same answer from it.
    type: list
    elements: str
    default: []
"""
