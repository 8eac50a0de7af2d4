# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the rdma_check role (layer 9) over
module_utils/rdma_pairs.py: ``rdma_check_links`` (a node's PF link and RoCE
v2 GID verdicts), ``rdma_check_plan`` (rounds of ib_write_bw pairs over the
rails), ``rdma_check_argv`` (one side's ib_write_bw command line),
``rdma_check_pair_result`` (parse, gate, message) and ``rdma_check_summary``
(a node's results). Each filter is documented in plugins/filter/<name>.yml.
The layer 9 verdict is the layer's check file
(module_utils/checks/rdma_check.py), through the gpufabric.stack.doctor
action.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def _wrap(name, *args, **kwargs):
    """rdma_pairs' function ``name`` on plain copies of the arguments; its
    PlanError as the filter's error."""
    from ansible_collections.gpufabric.stack.plugins.module_utils import plain_data, rdma_pairs
    fn = getattr(rdma_pairs, name)
    try:
        return fn(*[plain_data.plain(a) for a in args], **dict((k, plain_data.plain(v)) for k, v in kwargs.items()))
    except rdma_pairs.PlanError as exc:
        raise AnsibleFilterError(str(exc))


def _share(share):
    """The bandwidth share a pair must reach; rdma_pairs' default when not given."""
    from ansible_collections.gpufabric.stack.plugins.module_utils import rdma_pairs
    return rdma_pairs.DEFAULT_SHARE if share is None else share


def rdma_check_links(pfs, node, nics, cabling, rdma_link=None, gid_index=None, addresses=None, line_rate_mbps=None):
    if gid_index in ("", None):
        gid_index = None
    return _wrap("link_check", node, pfs or [], nics or [], cabling or [], rdma_link, gid_index, addresses,
                 line_rate_mbps)


def rdma_check_plan(nodes_links, mode="ring", port_base=18515):
    return _wrap("plan_pairs", nodes_links or [], mode, port_base)


def rdma_check_argv(pair, side, options):
    return _wrap("perftest_argv", pair, side, options)


def rdma_check_pair_result(pair, client_job, server_job=None, share=None, listening=True):
    return _wrap("pair_result", pair, client_job, server_job, _share(share), listening)


def rdma_check_summary(links, pairs=None, untested=None, share=None, bandwidth=True):
    return _wrap("summary", links, pairs or [], untested or [], _share(share), bandwidth)


class FilterModule(object):
    def filters(self):
        return {
            "rdma_check_links": rdma_check_links,
            "rdma_check_plan": rdma_check_plan,
            "rdma_check_argv": rdma_check_argv,
            "rdma_check_pair_result": rdma_check_pair_result,
            "rdma_check_summary": rdma_check_summary,
        }
