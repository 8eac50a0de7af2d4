# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One file per layer, named after its role (plugin_utils/layers.py), each
the same shape:

- ``INTENT``: the role variables the check judges against (resolved from the
  role's defaults and the inventory by the doctor);
- ``reads(intent, host)``: what the check needs read;
- ``check(reading, intent, host)``: a pure function from that reading and
  the intent to one result record (plugin_utils/doctor.py ``result``).

A layer's scope in the registry says where its reading comes from: the node
(``reads`` names nic_facts options or ``bmc``), the switch (roce_switch's
options), the cluster (``{"cluster": {"kubeconfig", "queries"}}``, each
query a kube_checks.query; with no cluster to read the action records the
layer skipped without calling the check) or the fabric (the role's
tasks/doctor.yml reads across nodes and gives the action its reading). A
cluster or fabric check's ``NODE_READS`` are nic_facts options it also
wants from each node's one read (the doctor's reading of the node).
"""
