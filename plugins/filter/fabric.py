# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the cross-layer RoCE chain and the layer 8 verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fabric_chain
short_description: Compare every cabled PF's host QoS with its switch port and name the first link that differs
description:
  - Walks the cabling plan. For each cabled PF it compares the switch port (the data model that
    gpufabric.stack.roce_switch returns with state gathered) with the PF's host QoS and MTU (what
    gpufabric.stack.roce_qos returns with state gathered) on PFC priorities, trust, the priority of the RoCE and
    CNP DSCPs, ECN on the RoCE priority and MTU (the port must carry the PF's MTU).
  - Returns C(differences), first link first (differences where the switch departs from the intent, then those
    where only the host does, each in cabling order), C(unchecked) (links with an end that was not read) and
    C(checked) (links compared). Each difference has C(text), like
    C(node03 ens2f0np1 PFC {3} vs leaf2 Ethernet1/7 PFC {}), C(departs), C(layer) and C(remediation).
positional: _input, intent, switches, hosts
options:
  _input:
    description: The cabling plan (gpufabric_cabling), entries with node, pf, pci_address, switch and port.
    type: list
    elements: dict
    required: true
  intent:
    description: The fabric intent (gpufabric_roce).
    type: dict
    required: true
  switches:
    description: Switch name to its roce_switch gathered result (or the result's C(gathered) model).
    type: dict
    required: true
  hosts:
    description: Node name to its roce_qos gathered result (or a mapping of PF netdev to state).
    type: dict
    required: true
  nodes:
    description: Only the links of these nodes.
    type: list
    elements: str
"""

EXAMPLES = r"""
chain: >-
  {{ gpufabric_cabling | gpufabric.stack.fabric_chain(gpufabric_roce, {'leaf1': hostvars['leaf1'].roce_switch_check},
     {inventory_hostname: roce_qos_gathered}, nodes=[inventory_hostname]) }}
"""

RETURN = r"""
_value:
  description: C(differences) (list of dicts), C(unchecked) (list of str) and C(checked) (int).
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

C = deferred("fabric_chain")
Q = deferred("roce_qos")


def fabric_chain(cabling, intent, switches, hosts, nodes=None):
    try:
        return C.compare(intent, cabling, switches, hosts, nodes)
    except Q.RoceQosError as exc:
        raise AnsibleFilterError("fabric_chain: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"fabric_chain": fabric_chain}
