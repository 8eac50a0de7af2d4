# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a layer's boot files would change, from what a module already read
on the node (inspect_files, inspect_units): the role skips the
gpufabric.stack.host_files round trip when nothing would."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: host_files_pending
short_description: What installing a layer's boot files would change, judged from an earlier inspection
description:
  - Compares the files a role renders (the I(files) of M(gpufabric.stack.host_files)) with the C(inspected) answer of a
    module that ran on the node in the same play with I(inspect_files) and I(inspect_units). It compares the content
    (SHA-256), mode, owner and group of each file, and whether each unit of I(enable_units) is enabled.
  - Returns one line per file or unit that would change; an empty list means a host_files call would change nothing
    and can be skipped. A file or unit that the inspection does not cover counts as a change, so a missing or older
    answer only costs the round trip that was saved.
positional: _input, inspected, enable_units
options:
  _input:
    description: The wanted files, as given to host_files (path, content, mode, owner, group).
    type: list
    elements: dict
    required: true
  inspected:
    description: The C(inspected) return value (C(files), C(units)) of nic_facts, sriov_vf or roce_qos, or none.
    type: dict
    required: true
  enable_units:
    description: The units host_files would enable.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Install the boot files only when one would change
  gpufabric.stack.host_files:
    files: "{{ my_files }}"
    enable_units: [my.service]
  when: my_files | gpufabric.stack.host_files_pending(my_apply.inspected, ['my.service']) | length > 0
"""

RETURN = r"""
_value:
  description: One line per file or unit that would change, for example C(/etc/x.rules) followed by C(content, mode).
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

host_files = deferred("host_files")


def host_files_pending(files, inspected, enable_units=None):
    if not isinstance(files, list):
        raise AnsibleFilterError("host_files_pending: the files must be a list, not %s" % type(files).__name__)
    inspected = inspected if isinstance(inspected, dict) else {}
    try:
        return host_files.pending(files, inspected.get("files"), list(enable_units or []), inspected.get("units"))
    except host_files.HostFilesError as exc:
        raise AnsibleFilterError("host_files_pending: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"host_files_pending": host_files_pending}
