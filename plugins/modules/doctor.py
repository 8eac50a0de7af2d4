#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: doctor
short_description: The doctor's check of one or more layers, each judged by its check file
version_added: "0.1.0"
description:
  - Checks layers of the stack and returns one result record per layer. Each layer's check file
    (C(plugin_utils/checks/<role>.py)) says what it needs read and judges that reading against its role's intent, as
    the role itself would see its variables (the role's defaults, the inventory and play variables over them, the
    role's C(vars/main.yml) over both), typed by the role's argument spec. No role defaults are copied; a setting
    changed for a role is the setting its check uses. Where the reading comes from is the layer's scope in the
    registry (C(plugin_utils/layers.py)).
  - Node layers (1-6, 8, 10) and the switch layer (7), the default. On a node the wishes of the checks are merged
    into one M(gpufabric.stack.nic_facts) execution (one per distinct sysfs root), and the node's BMC (Redfish
    system, current and pending BIOS attributes) is read from the controller; the same read brings what the node's
    cluster layers read on the node (the kubelet's configuration). On a leaf switch one
    M(gpufabric.stack.roce_switch) C(gathered) read; layer 8 then compares each cabled PF with its switch port when
    the switches were checked earlier in the run (their registered I(node_result)). A layer given to
    C(--skip-tags) (C(layerNN)) is C(skipped) and not read; the layers above the first failing one are C(blocked by
    N) and not judged.
  - Cluster layers (11-14). The task runs once (C(run_once)), delegated to the first C(kube_control_plane) host;
    every distinct API object the checks want is read there once (C(kubernetes.core.k8s_info),
    C(kubernetes.core.k8s_cluster_info)), and every host of the play batch is judged, each on its own objects. With
    no control-plane host, no kubeconfig on it or the host unreachable, the layers are C(skipped) with that reason.
    A host whose node layers failed earlier in the run (a failing record in its registered I(node_result)) has its
    cluster layers C(blocked by N), neither read nor judged; when every host is, the API is not read at all.
  - Fabric layers (9, 15), read across nodes by the role's C(tasks/doctor.yml), which passes what it read as
    I(reading); one layer per task.
  - Nothing is changed, in check mode or not. An action plugin; it runs on the controller and uses the host's (or
    the delegated host's) connection for its module executions.
options:
  layers:
    description:
      - The layer numbers to check, all of one kind (node and switch layers together, or cluster layers, or one
        fabric layer). Default, the registry's node and switch layers of the inventory groups the host is in.
    type: list
    elements: int
  skip_tags:
    description: Tags whose layers are reported C(skipped). Default, the run's C(--skip-tags).
    type: list
    elements: str
  reading:
    description: For a fabric layer, what its role's coordination read across nodes; its check file says the shape.
    type: dict
  node_result:
    description:
      - The name each host's node or switch check is registered under in the run, where the cluster layers find
        the node's reading and layer 8 the switches'.
    type: str
    default: doctor_node
  scope:
    description:
      - Of the layers, check only those of this scope in the registry; when none of them is, nothing is checked and
        the result has no records (C(results) and C(hosts) empty). The doctor's C(layers.yml) reads the cluster
        layers of whatever list it is given this way.
    type: str
    choices: [node, switch, cluster, fabric]
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the node once and check its node layers
  gpufabric.stack.doctor:
  register: doctor_node

- name: The health gate of a rollout, layers 1-6 only
  gpufabric.stack.doctor:
    layers: [1, 2, 3, 4, 5, 6]
  register: gate

- name: Read the Kubernetes API once and check layers 11-14 on every node of the play
  gpufabric.stack.doctor:
    layers: [11, 12, 13, 14]
  register: doctor_cluster
  run_once: true
  delegate_to: "{{ groups['kube_control_plane'] | first }}"
"""

RETURN = r"""
results:
  description:
    - One record per layer asked for, in layer order, each as C(plugin_utils/doctor.py) C(result) makes it; for the
      cluster layers, those of the host the task ran for.
  returned: success
  type: list
  elements: dict
  contains:
    layer: {description: The layer number., type: int}
    name: {description: "The layer's role.", type: str}
    status: {description: "C(pass), C(fail), C(warn), C(blocked) or C(skipped).", type: str}
    reason: {description: The verdict in one line., type: str}
    evidence: {description: "What was read that shows it, one line each.", type: list, elements: str}
    remediation: {description: "How to fix it; empty when nothing is to be fixed.", type: str}
details:
  description:
    - What a check saw beyond its record, by layer number (a string), for the checks that say more; layer 8 gives
      C(chain), each cabled PF against its switch port (C(differences), C(unchecked), C(checked)).
  returned: success
  type: dict
reading:
  description: The node's nic_facts answer under C(gpufabric_sysfs_root), for the checks that span nodes (layers 9,
    15) and the cluster layers (the kubelet's configuration).
  returned: node and switch layers
  type: dict
switch:
  description: The switch's roce_switch C(gathered) answer (its running configuration and drift), for layer 8.
  returned: node and switch layers
  type: dict
hosts:
  description: For the cluster layers, the records of every host of the play batch, by host.
  returned: cluster layers
  type: dict
api_host:
  description: For the cluster layers, the host the API was read on (empty without a kube_control_plane host).
  returned: cluster layers
  type: str
api_reads:
  description: For the cluster layers, how many API reads were made (each distinct object once).
  returned: cluster layers
  type: int
nic_facts_calls:
  description: How many nic_facts executions the read took (one per distinct sysfs root; 0 when no layer needed one).
  returned: node and switch layers
  type: int
module_executions:
  description:
    - How many modules the task executed on the host or delegated (nic_facts, roce_switch, the API reads and the
      control-plane C(stat)); 0 for a fabric layer, which judges a reading it is given. The Redfish read of the BMC
      is made from the task's own process on the controller and runs no module. The
      C(gpufabric.stack.task_counter) callback counts this figure for the task.
  returned: always
  type: int
"""
