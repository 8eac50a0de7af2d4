# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a layer's boot files would change, from what a module already read
on the node (inspect_files, inspect_units): the role skips the
gpufabric.stack.host_files round trip when nothing would. Documented in
host_files_pending.yml.

The filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def host_files_pending(files, inspected, enable_units=None):
    from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files
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
