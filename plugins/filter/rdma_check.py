# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma_check role's (layer 9) filter over plugin_utils/rdma_check/rdma_pairs.py:
``rdma_check_summary`` (a node's results from its links and the pairs it
sent on), documented in plugins/filter/rdma_check_summary.yml. The reading
across nodes is the gpufabric.stack.rdma_check action's; the layer 9 verdict
is the layer's check file (plugin_utils/checks/rdma_check.py), through the
gpufabric.stack.doctor action.

The filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def rdma_check_summary(links, pairs=None, untested=None, share=None, bandwidth=True):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import plain_data
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs
    try:
        return rdma_pairs.summary(plain_data.plain(links), plain_data.plain(pairs or []),
                                  plain_data.plain(untested or []),
                                  rdma_pairs.DEFAULT_SHARE if share is None else share, bandwidth)
    except rdma_pairs.PlanError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"rdma_check_summary": rdma_check_summary}
