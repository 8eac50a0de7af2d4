# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry of the 15 layers: the one place that says what a layer is.

Every list of layers in the collection comes from here or is held to it by
tests/unit/test_layer_registry.py: site.yml's tags, validate.yml's plays,
rollout's defaults, the doctor's action plugin, make bench, the README's
table and docs/layers/.  Adding a 16th layer means one entry here, one check
file (module_utils/checks/<role>.py), one role and one docs page.

Fields of a layer:

- ``number``, ``role`` (also the name of its check file and the ``name`` of
  its results), ``title`` (the report's heading for it), ``tag``
  (``layerNN``);
- ``hosts``: the inventory groups the doctor checks it on, as validate.yml
  runs it;
- ``scope``: where its reading comes from, all of it judged by the layer's
  check file (module_utils/checks/<role>.py) in the doctor's action plugin.
  ``node``: the node itself, in the action's one read of the node;
  ``switch``: a leaf switch, read by the action on the switches' own play;
  ``cluster``: the Kubernetes API, read once for the play on the first
  kube_control_plane host (one action run_once); ``fabric``: more than one
  node at a time (pairs of nodes, an MPI job), read by the role's
  coordination (tasks/doctor.yml), which hands its reading to the action;
- ``reads``: what the check reads (the names of nic_facts' options for node
  layers, for the others a description);
- ``reboot``: applying the layer can reboot a node; ``drain``: a rollout
  drains the node's pods before applying it;
- ``tiers``: the test tiers that hold the layer (``unit``: plain Python and
  ansible-playbook on stand-ins, ``twin``: a live twin rack, ``vm``: QEMU
  nodes with a real kernel).  Every test carries the layers it covers as
  ``layerNN`` markers (tests/conftest.py); tests/unit/test_layer_registry.py
  fails when a tier named here has no test of the layer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

Layer = namedtuple("Layer", "number role title scope hosts reads reboot drain tiers")

GPU = ("gpu_workers",)
KUBE_NODES = ("gpu_workers", "kube_control_plane")
# the VM nodes have a real kernel and an igb PF: no switch, no Kubernetes, no GPU
ALL_TIERS = ("unit", "twin", "vm")
NO_VM = ("unit", "twin")
TIERS = ALL_TIERS

REGISTRY = (
    Layer(1, "bmc", "Rack power and BMC", "node", GPU, ("bmc",), True, True, ALL_TIERS),
    Layer(2, "bios", "BIOS", "node", GPU, ("bmc",), True, True, ALL_TIERS),
    Layer(3, "kernel", "Kernel and IOMMU", "node", GPU, ("cmdline", "iommus", "nics"), True, True, ALL_TIERS),
    Layer(4, "nic_firmware", "NIC firmware", "node", GPU, ("nics", "firmware"), True, True, ALL_TIERS),
    Layer(5, "rdma_drivers", "Drivers and RDMA core", "node", GPU, ("nics", "modules"), False, True, ALL_TIERS),
    Layer(6, "sriov_vfs", "SR-IOV VFs", "node", GPU,
          ("nics", "units", "files", "module_probe"), False, True, ALL_TIERS),
    Layer(7, "roce_switch", "RoCE switch fabric", "switch", ("leaf_switches",),
          ("the switch's running QoS configuration (roce_switch gathered)",), False, False, NO_VM),
    Layer(8, "roce_host", "Host RoCE QoS", "node", GPU, ("qos", "units"), False, True, ALL_TIERS),
    Layer(9, "rdma_check", "RDMA fabric check", "fabric", GPU,
          ("nics", "ib_write_bw between pairs of nodes"), False, False, ALL_TIERS),
    Layer(10, "container_runtime", "Container runtime and GPU", "node", KUBE_NODES, ("runtime",), False, True, ALL_TIERS),
    Layer(11, "kubeadm", "Kubernetes", "cluster", KUBE_NODES,
          ("the Node and the API server's version", "/var/lib/kubelet/config.yaml"), True, True, NO_VM),
    Layer(12, "cni", "Primary CNI", "cluster", GPU, ("the Node, the CNI agent pods, the CNI's MTU",), False, False, NO_VM),
    Layer(13, "multus", "Multus", "cluster", GPU,
          ("the Node, the NetworkAttachmentDefinition CRD, the Multus daemonset and pods",), False, False, NO_VM),
    Layer(14, "sriov_operator", "SR-IOV Network Operator", "cluster", GPU,
          ("the Node, the operator's pods and node state, the NetworkAttachmentDefinitions",), False, False, NO_VM),
    Layer(15, "nccl_validate", "NCCL validation", "fabric", GPU,
          ("an all_reduce_perf run over the nodes, or the last recorded one",), False, False, NO_VM),
)

BY_NUMBER = dict((layer.number, layer) for layer in REGISTRY)
BY_ROLE = dict((layer.role, layer) for layer in REGISTRY)
NAMES = dict((layer.number, layer.role) for layer in REGISTRY)
TITLES = dict((layer.number, layer.title) for layer in REGISTRY)
SCOPES = ("node", "switch", "cluster", "fabric")


def tag(number):
    """The tag of a layer in site.yml, validate.yml and rollout.yml: layer07."""
    return "layer%02d" % int(number)


def get(number_or_role):
    """The layer of a number (1, '07', 'layer07') or a role name; ValueError
    naming the value when there is none."""
    key = number_or_role
    if isinstance(key, str) and key.startswith("layer"):
        key = key[len("layer"):]
    if isinstance(key, str) and key in BY_ROLE:
        return BY_ROLE[key]
    try:
        return BY_NUMBER[int(key)]
    except (TypeError, ValueError, KeyError):
        raise ValueError("%r is not a layer: the layers are 1-%d (%s)"
                         % (number_or_role, len(REGISTRY), ", ".join(NAMES[n] for n in sorted(NAMES))))


def select(group=None, scope=None, numbers=None):
    """The layers checked on hosts of inventory ``group``, of ``scope``
    (one of SCOPES or a list of them), among ``numbers``; in order."""
    scopes = (scope,) if isinstance(scope, str) else scope
    wanted = None if numbers is None else set(int(n) for n in numbers)
    return [layer for layer in REGISTRY
            if (group is None or group in layer.hosts)
            and (scopes is None or layer.scope in scopes)
            and (wanted is None or layer.number in wanted)]


def entries(layers):
    """``[{layer, role}]`` as the playbooks pass layers around."""
    return [{"layer": layer.number, "role": layer.role} for layer in layers]
