# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind layer 15 (roles/nccl_validate) over
module_utils/{perf_parsers,nccl_validate}.py: ``nccl_parse`` (every row, the
footers, the NET/IB or NET/Socket lines), ``nccl_gate`` (the gate on the
busbw of the largest size), ``nccl_expected_busbw`` (link speed / 8 x NICs
per node), ``nccl_plan`` (NCCL environment and mpirun command from the
intent and nic_facts) and ``nccl_vf_resources`` (the VF resources and
networks of a worker pod). Each filter is documented in
plugins/filter/<name>.yml. The verdict on a run is the layer's check file
(plugin_utils/checks/nccl_validate.py), through the gpufabric.stack.doctor
action.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def nccl_parse(text):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers
    try:
        return perf_parsers.parse_all_reduce_perf(text)
    except ValueError as exc:
        raise AnsibleFilterError("nccl_parse: %s" % exc)


def nccl_gate(data, expected_busbw_gbs, efficiency=0.85, require_ib=False, timed_out=None, timeout_s=None,
              exit_code=None, require_gdr=False):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers
    try:
        if isinstance(data, dict):
            if timed_out is None:
                timed_out = exit_code in nccl_validate.TIMEOUT_EXIT_CODES
            g = perf_parsers.nccl_gate(data, expected_busbw_gbs, efficiency, require_ib=require_ib,
                                       timed_out=timed_out, timeout_s=timeout_s, exit_code=exit_code,
                                       require_gdr=require_gdr)
            g["parsed"] = data
            return g
        return nccl_validate.gate_output(data, expected_busbw_gbs, efficiency, require_ib=require_ib,
                                         exit_code=exit_code, timed_out=timed_out, timeout_s=timeout_s,
                                         require_gdr=require_gdr)
    except ValueError as exc:
        raise AnsibleFilterError("nccl_gate: %s" % exc)


def nccl_expected_busbw(link_speed_gbps, nics_per_node):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers
    try:
        return perf_parsers.expected_busbw_gbs(link_speed_gbps, nics_per_node)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("nccl_expected_busbw: %s" % exc)


def nccl_plan(hosts, roce, settings=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate
    try:
        return nccl_validate.plan(hosts, roce, settings)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("nccl_plan: %s" % exc)


def nccl_vf_resources(nics, nics_per_node=None, domain="openshift.io", pfs=None, namespace=None, rails=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate import nccl_validate
    try:
        return nccl_validate.vf_resources(nics, nics_per_node, domain, pfs, namespace, rails)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("nccl_vf_resources: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {
            "nccl_parse": nccl_parse,
            "nccl_gate": nccl_gate,
            "nccl_expected_busbw": nccl_expected_busbw,
            "nccl_plan": nccl_plan,
            "nccl_vf_resources": nccl_vf_resources,
        }
