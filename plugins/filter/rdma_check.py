# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the rdma_check role (layer 9)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rdma_check_links
short_description: Layer 9 link and RoCE v2 GID verdict of one node's selected PFs
description:
  - Selects the PFs of a nic_facts result that gpufabric_nics names, finds each in gpufabric_cabling and decides
    whether its link is up and it has a RoCE v2 GID; returns C({node, errors, pfs}).
  - The same plugin file provides C(rdma_check_plan) (rounds of ib_write_bw pairs over the rails),
    C(rdma_check_argv) (one side's ib_write_bw command line), C(rdma_check_pair_result) (parse, gate, message),
    C(rdma_check_summary) (a node's results) and C(rdma_check_doctor) (its layer 9 doctor result).
  - The logic lives in plugins/module_utils/rdma_pairs.py.
positional: _input, node, nics, cabling
options:
  _input:
    description: The nics list returned by gpufabric.stack.nic_facts.
    type: list
    required: true
  node:
    description: Inventory name of the node.
    type: str
    required: true
  nics:
    description: The node's gpufabric_nics.
    type: list
    required: true
  cabling:
    description: gpufabric_cabling.
    type: list
    required: true
  rdma_link:
    description: Output of C(rdma link show); its port state is preferred to sysfs when given.
    type: str
  gid_index:
    description: GID index to use instead of the RoCE v2 GID with an IPv4 address.
    type: int
  addresses:
    description: PF netdev (or PCI address) to the IPv4 address peers connect to.
    type: dict
"""

EXAMPLES = r"""
links: "{{ facts.nics | gpufabric.stack.rdma_check_links(inventory_hostname, gpufabric_nics, gpufabric_cabling) }}"
plan: "{{ all_links | gpufabric.stack.rdma_check_plan('ring', 18515) }}"
argv: "{{ pair | gpufabric.stack.rdma_check_argv('server', {'size': 8388608, 'duration': 5, 'traffic_class': 106}) }}"
"""

RETURN = r"""
_value:
  description: The node's PF verdicts.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

plain_data = deferred("plain_data")
rdma_pairs = deferred("rdma_pairs")


def _wrap(fn, *args, **kwargs):
    try:
        return fn(*[plain_data.plain(a) for a in args], **dict((k, plain_data.plain(v)) for k, v in kwargs.items()))
    except rdma_pairs.PlanError as exc:
        raise AnsibleFilterError(str(exc))


def _share(share):
    """The bandwidth share a pair must reach; rdma_pairs' default when not given."""
    return rdma_pairs.DEFAULT_SHARE if share is None else share


def rdma_check_links(pfs, node, nics, cabling, rdma_link=None, gid_index=None, addresses=None, line_rate_mbps=None):
    if gid_index in ("", None):
        gid_index = None
    return _wrap(rdma_pairs.link_check, node, pfs or [], nics or [], cabling or [], rdma_link, gid_index, addresses,
                 line_rate_mbps)


def rdma_check_plan(nodes_links, mode="ring", port_base=18515):
    return _wrap(rdma_pairs.plan_pairs, nodes_links or [], mode, port_base)


def rdma_check_argv(pair, side, options):
    return _wrap(rdma_pairs.perftest_argv, pair, side, options)


def rdma_check_pair_result(pair, client_job, server_job=None, share=None, listening=True):
    return _wrap(rdma_pairs.pair_result, pair, client_job, server_job, _share(share), listening)


def rdma_check_summary(links, pairs=None, untested=None, share=None, bandwidth=True):
    return _wrap(rdma_pairs.summary, links, pairs or [], untested or [], _share(share), bandwidth)


def rdma_check_doctor(results):
    return _wrap(rdma_pairs.doctor_result, results)


class FilterModule(object):
    def filters(self):
        return {
            "rdma_check_links": rdma_check_links,
            "rdma_check_plan": rdma_check_plan,
            "rdma_check_argv": rdma_check_argv,
            "rdma_check_pair_result": rdma_check_pair_result,
            "rdma_check_summary": rdma_check_summary,
            "rdma_check_doctor": rdma_check_doctor,
        }
