#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: doctor
short_description: The doctor's node layers on one host, in one read of the node
version_added: "0.1.0"
description:
  - Checks the layers of the stack that are judged from the node itself (layers 1-6, 8 and 10; the registry in
    C(module_utils/layers.py) says which) and returns one result per layer.
  - Each layer's check file (C(module_utils/checks/<role>.py)) says what it needs read. The action merges those
    wishes into one M(gpufabric.stack.nic_facts) execution on the node (one per distinct sysfs root) and reads the
    node's BMC (Redfish system, current and pending BIOS attributes) from the controller, then judges every layer
    on the controller against its role's intent, as the role itself would see its variables (the role's defaults,
    the inventory and play variables over them, the role's C(vars/main.yml) over both). No role defaults are
    copied; a setting changed for a role is the setting its check uses.
  - Layer 8 compares each cabled PF with its switch port when the leaf switches were checked earlier in the same
    run (their registered C(roce_switch_check)).
  - A layer given to C(--skip-tags) (C(layerNN)) is C(skipped) and not read; the layers above the first failing
    one are C(blocked by N) and not judged. The node is never changed, in check mode or not.
  - An action plugin; it runs on the controller and uses the host's connection for the one module execution.
options:
  layers:
    description:
      - The layer numbers to check, each a node layer of the registry. Default, the registry's node layers of the
        inventory groups the host is in.
    type: list
    elements: int
  skip_tags:
    description: Tags whose layers are reported C(skipped). Default, the run's C(--skip-tags).
    type: list
    elements: str
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
"""

RETURN = r"""
results:
  description:
    - One record per layer asked for, in layer order, each as C(module_utils/doctor.py) C(result) makes it.
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
  description: The node's nic_facts answer under C(gpufabric_sysfs_root), for the checks that span hosts (layers 9, 15).
  returned: success
  type: dict
nic_facts_calls:
  description: How many nic_facts executions the read took (one per distinct sysfs root; 0 when no layer needed one).
  returned: success
  type: int
"""
