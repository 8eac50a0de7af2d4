# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind layer 15 (roles/nccl_validate): parse nccl-tests output,
gate it, plan the run and give the doctor's verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: nccl_gate
short_description: Gate an nccl-tests all_reduce_perf run on the busbw of its largest message size
description:
  - Takes the output of C(all_reduce_perf) (text, or the result of C(nccl_parse)) and decides pass or fail.
  - The figure gated on is the bus bandwidth of the largest message size (the lower of out-of-place and in-place),
    not the C(# Avg bus bandwidth) footer, which is a mean over every size.
  - "It fails, with the reason, when NCCL used NET/Socket, the run timed out, printed no rows or stopped before the
    footer, had #wrong values, out-of-bounds values or old-format errors, or the busbw is below
    expected_busbw_gbs x efficiency."
  - "The same plugin file provides C(nccl_parse) (every row, the footers, the NET/IB or NET/Socket lines),
    C(nccl_expected_busbw) (link speed / 8 x NICs per node), C(nccl_plan) (NCCL environment and mpirun command
    from the intent and nic_facts), C(nccl_vf_resources) (the VF resources and networks of a worker pod) and
    C(nccl_doctor_result) (the layer 15 verdict of one node; when NCCL fell back to sockets on some nodes of the
    job only, those fail and a node whose own ranks used NET/IB gets warn naming them)."
positional: _input, expected_busbw_gbs, efficiency
options:
  _input:
    description: all_reduce_perf output as text, or the dict C(nccl_parse) returns.
    type: raw
    required: true
  expected_busbw_gbs:
    description: Ideal bus bandwidth in GB/s (C(nccl_expected_busbw)).
    type: float
    required: true
  efficiency:
    description: Share of the ideal the run must reach.
    type: float
    default: 0.85
  require_ib:
    description: Fail when the log does not show the transport (no NCCL_DEBUG=INFO lines).
    type: bool
    default: false
  timed_out:
    description: The run was stopped by a timeout. Defaults to exit_code 124 or 137 (the timeout command).
    type: bool
  timeout_s:
    description: The time limit, named in the reason.
    type: int
  exit_code:
    description: Exit status of the run.
    type: int
"""

EXAMPLES = r"""
gate: "{{ run.stdout | gpufabric.stack.nccl_gate(100.0, 0.85, require_ib=true, exit_code=run.rc) }}"
parsed: "{{ run.stdout | gpufabric.stack.nccl_parse }}"
expected: "{{ 400 | gpufabric.stack.nccl_expected_busbw(2) }}"
"""

RETURN = r"""
_value:
  description:
    - "C(passed), C(kind) (pass, socket, timeout, no_rows, incomplete, no_transport, wrong, error, out_of_bounds,
      avg_failed, below, exit_code, no_output), C(reason), C(largest_size), C(busbw), C(busbw_oop), C(busbw_ip),
      C(threshold), C(expected_busbw_gbs), C(efficiency), C(transport) and C(parsed)."
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

nccl_validate = deferred("nccl_validate")
perf_parsers = deferred("perf_parsers")


def nccl_parse(text):
    try:
        return perf_parsers.parse_all_reduce_perf(text)
    except ValueError as exc:
        raise AnsibleFilterError("nccl_parse: %s" % exc)


def nccl_gate(data, expected_busbw_gbs, efficiency=0.85, require_ib=False, timed_out=None, timeout_s=None,
              exit_code=None):
    try:
        if isinstance(data, dict):
            if timed_out is None:
                timed_out = exit_code in nccl_validate.TIMEOUT_EXIT_CODES
            g = perf_parsers.nccl_gate(data, expected_busbw_gbs, efficiency, require_ib=require_ib,
                                       timed_out=timed_out, timeout_s=timeout_s, exit_code=exit_code)
            g["parsed"] = data
            return g
        return nccl_validate.gate_output(data, expected_busbw_gbs, efficiency, require_ib=require_ib,
                                         exit_code=exit_code, timed_out=timed_out, timeout_s=timeout_s)
    except ValueError as exc:
        raise AnsibleFilterError("nccl_gate: %s" % exc)


def nccl_expected_busbw(link_speed_gbps, nics_per_node):
    try:
        return perf_parsers.expected_busbw_gbs(link_speed_gbps, nics_per_node)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("nccl_expected_busbw: %s" % exc)


def nccl_plan(hosts, roce, settings=None):
    try:
        return nccl_validate.plan(hosts, roce, settings)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("nccl_plan: %s" % exc)


def nccl_vf_resources(nics, nics_per_node=None, domain="openshift.io", pfs=None, namespace=None):
    try:
        return nccl_validate.vf_resources(nics, nics_per_node, domain, pfs, namespace)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("nccl_vf_resources: %s" % exc)


def nccl_doctor_result(run_plan, host, gate=None):
    return nccl_validate.doctor_result(host, run_plan, gate)


class FilterModule(object):
    def filters(self):
        return {
            "nccl_parse": nccl_parse,
            "nccl_gate": nccl_gate,
            "nccl_expected_busbw": nccl_expected_busbw,
            "nccl_plan": nccl_plan,
            "nccl_vf_resources": nccl_vf_resources,
            "nccl_doctor_result": nccl_doctor_result,
        }
