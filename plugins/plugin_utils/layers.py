# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry of the 15 layers: the one place that says what a layer is.

Every list of layers in the collection comes from here or is held to it by
tests/unit/test_layer_registry.py: site.yml's tags, validate.yml's plays,
rollout's defaults, the doctor's action plugin, make bench, the README's
table and docs/layers/.  Adding a 16th layer means one entry here, one check
file (plugin_utils/checks/<role>.py), one role and one docs page.  It is
also the index of the tree: ``FILES`` names every module, action, filter
file, module_utils file and twin part of each layer, ``SHARED`` what serves
them all; a file in neither fails the registry test, and the docs pages'
"Code:" lines are written from it (scripts/layer-docs.py).

Fields of a layer:

- ``number``, ``role`` (also the name of its check file and the ``name`` of
  its results), ``title`` (the report's heading for it), ``tag``
  (``layerNN``);
- ``hosts``: the inventory groups the doctor checks it on, as validate.yml
  runs it;
- ``scope``: where its reading comes from, all of it judged by the layer's
  check file (plugin_utils/checks/<role>.py) in the doctor's action plugin.
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

# The index: every file of a layer, by kind, paths relative to the
# collection's root (a file may serve more than one layer). "module_utils"
# holds both what runs on the node (plugins/module_utils/<role>/, imported by
# modules) and what runs only on the controller (plugins/plugin_utils/). Its role is
# roles/<role>, its check plugins/plugin_utils/checks/<role>.py, its tests
# the ones marked layerNN (pytest -m layerNN), its page docs/layers/NN-*.md.
# tests/unit/test_layer_registry.py fails when a file named here is missing,
# or a file of the kinds below belongs to no layer and is not in SHARED; the
# pages' "Code" lines are code_line()'s.
FILES = {
    1: {"modules": ("plugins/modules/bmc_trust.py",),
        "actions": ("plugins/action/bmc_trust.py",),
        "module_utils": ("plugins/module_utils/bios/bmc_trust.py",),
        "twin": ("simlab/bmc/server.py", "simlab/bmc/power.py", "simlab/bmc/state.py", "simlab/bmc/vendors.py",
                 "simlab/bmc/faults.py", "simlab/vm/power.py", "simlab/vm/sushy.py")},
    2: {"modules": ("plugins/modules/bios_facts.py",),
        "actions": ("plugins/action/bios_facts.py",),
        "module_utils": ("plugins/plugin_utils/bios/bios_attributes.py", "plugins/module_utils/bios/redfish_bios.py"),
        "filters": ("plugins/filter/bios.py",),
        "twin": ("simlab/bmc/server.py", "simlab/bmc/state.py", "simlab/bmc/vendors.py", "simlab/bmc/faults.py",
                 "simlab/vm/sushy.py")},
    3: {"filters": ("plugins/filter/kernel.py",),
        "twin": ("simlab/tools/grub.py", "simlab/tools/grubby.py", "simlab/node/boot.py")},
    4: {"modules": ("plugins/modules/mlx_config.py",),
        "actions": ("plugins/action/mlx_config.py",),
        "module_utils": ("plugins/module_utils/nic_firmware/mlx_config.py", "plugins/module_utils/nic_firmware/mlx_tools.py"),
        "filters": ("plugins/filter/nic_firmware.py",),
        "twin": ("simlab/tools/mlxconfig.py", "simlab/tools/mstflint.py", "simlab/tools/mstfwreset.py")},
    5: {"module_utils": ("plugins/module_utils/rdma_drivers/driver_stack.py", "plugins/module_utils/rdma_drivers/gpudirect.py"),
        "twin": ("simlab/tools/modprobe.py", "simlab/tools/modinfo.py", "simlab/node/kmod.py", "simlab/tools/nvidia_smi.py")},
    6: {"modules": ("plugins/modules/sriov_vf.py",),
        "actions": ("plugins/action/sriov_vf.py",),
        "module_utils": ("plugins/module_utils/sriov_vfs/sriov.py", "plugins/module_utils/sriov_vfs/sriov_host.py",
                         "plugins/module_utils/sriov_vfs/vfio_passthrough.py"),
        "filters": ("plugins/filter/sriov.py",),
        "twin": ("simlab/tools/ip.py", "simlab/tools/nmcli.py", "simlab/node/kernel.py", "simlab/node/sysfs.py")},
    7: {"modules": ("plugins/modules/roce_switch.py",),
        "module_utils": ("plugins/module_utils/roce_switch/__init__.py", "plugins/module_utils/roce_switch/base.py",
                         "plugins/module_utils/roce_switch/model.py", "plugins/module_utils/roce_switch/nos.py",
                         "plugins/module_utils/roce_switch/drivers.py",
                         "plugins/module_utils/roce_switch/transport.py", "plugins/module_utils/roce_switch/onyx.py",
                         "plugins/module_utils/roce_switch/nvue.py", "plugins/module_utils/roce_switch/eos.py",
                         "plugins/module_utils/roce_switch/nxos.py", "plugins/module_utils/roce_switch/dell_sonic.py",
                         "plugins/module_utils/roce_switch/sonic_community.py"),
        "twin": ("simlab/switches/server.py", "simlab/switches/models/base.py", "simlab/nos.py")},
    8: {"modules": ("plugins/modules/roce_qos.py",),
        "actions": ("plugins/action/roce_qos.py",),
        "module_utils": ("plugins/module_utils/roce_host/roce_qos.py", "plugins/module_utils/roce_host/roce_qos_host.py",
                         "plugins/module_utils/roce_host/iproute_dcb.py", "plugins/plugin_utils/roce_host/fabric_chain.py"),
        "twin": ("simlab/tools/mlnx_qos.py", "simlab/tools/cma_roce.py", "simlab/tools/dcb.py")},
    9: {"modules": ("plugins/modules/rdma_check.py", "plugins/modules/perftest_round.py"),
        "actions": ("plugins/action/rdma_check.py",),
        "module_utils": ("plugins/plugin_utils/rdma_check/rdma_pairs.py", "plugins/module_utils/rdma_check/perftest_round.py",
                         "plugins/module_utils/rdma_check/rdma_tools.py", "plugins/plugin_utils/perf_parsers.py",
                         "plugins/module_utils/rdma_check/lldp.py", "plugins/plugin_utils/rdma_check/cabling.py",
                         "plugins/module_utils/roce_switch/lldp_text.py"),
        "filters": ("plugins/filter/rdma_check.py",),
        "twin": ("simlab/tools/perftest.py", "simlab/tools/rdma.py", "simlab/fabric/model.py",
                 "simlab/tools/lldpcli.py", "simlab/fabric/cables.py")},
    10: {"modules": ("plugins/modules/container_runtime_facts.py",),
         "module_utils": ("plugins/module_utils/container_runtime/runtime_facts.py",),
         "twin": ("simlab/tools/sysctl.py", "simlab/node/sysctls.py")},
    11: {"module_utils": ("plugins/plugin_utils/kubeadm/kube_intent.py", "plugins/plugin_utils/kube_checks.py"),
         "filters": ("plugins/filter/kube.py",)},
    12: {"module_utils": ("plugins/plugin_utils/cni/kube_net.py", "plugins/plugin_utils/kube_checks.py"),
         "filters": ("plugins/filter/cni_settings.py",)},
    13: {"module_utils": ("plugins/plugin_utils/kube_checks.py",)},
    14: {"module_utils": ("plugins/plugin_utils/sriov_operator/sriov_policy.py", "plugins/plugin_utils/kube_checks.py"),
         "filters": ("plugins/filter/sriov_policy.py",)},
    15: {"module_utils": ("plugins/plugin_utils/nccl_validate/nccl_validate.py", "plugins/plugin_utils/perf_parsers.py"),
         "filters": ("plugins/filter/nccl.py",),
         "twin": ("simlab/tools/nccl.py",)},
}

# What serves every layer, and why: the doctor, reading a node once, boot
# files, reboots, rollouts and the twin's plumbing.
SHARED = {
    "plugins/modules/doctor.py": "the doctor's action: runs the layers' checks",
    "plugins/modules/doctor_print.py": "prints the doctor's table",
    "plugins/modules/doctor_report.py": "writes the doctor's reports",
    "plugins/modules/nic_facts.py": "the one reading of a node that the node layers share",
    "plugins/modules/host_files.py": "installs the layers' boot files",
    "plugins/modules/wait_for_boot.py": "the reboot role's wait",
    "plugins/modules/role_arguments.py": "site.yml's one check of the GPU node layers' variables, the doctor's of a fabric layer's",
    "plugins/action/doctor.py": "the doctor",
    "plugins/action/doctor_print.py": "the doctor",
    "plugins/action/doctor_report.py": "the doctor",
    "plugins/action/nic_facts.py": "the play's reading of a node (reuse, forget)",
    "plugins/action/wait_for_boot.py": "the reboot role's wait",
    "plugins/action/role_arguments.py": "site.yml's one check of the GPU node layers' variables, the doctor's of a fabric layer's",
    "plugins/action/host_files.py": "renders the layers' boot files, compares them with the reading",
    "plugins/plugin_utils/layers.py": "this registry",
    "plugins/plugin_utils/doctor.py": "the doctor's result record",
    "plugins/plugin_utils/doctor_report.py": "the doctor's reports",
    "plugins/plugin_utils/nic_reading.py": "the play's reading of a node",
    "plugins/plugin_utils/judged_action.py": "the actions of layers 6 and 8 that judge a node from its reading",
    "plugins/plugin_utils/role_intent.py": "a role's intent read outside it: the doctor, nic_facts' also_layers",
    "plugins/plugin_utils/plain_data.py": "Ansible's lazy containers made plain for the checks",
    "plugins/plugin_utils/main_process.py": "what every action loads before the strategy forks its workers",
    "plugins/module_utils/host/host_files.py": "the layers' boot files",
    "plugins/module_utils/host/boot_state.py": "the layers' boot units and files, read",
    "plugins/module_utils/host/sysfs_nic.py": "the NICs from sysfs, for layers 3-9",
    "plugins/module_utils/host/pcie.py": "the PCIe path between GPUs and NICs and ACS on it, for layers 3 and 5",
    "plugins/plugin_utils/rollout.py": "playbooks/rollout.yml",
    "plugins/plugin_utils/node_maintenance.py": "roles/node_maintenance",
    "plugins/filter/doctor.py": "the doctor",
    "plugins/filter/nic_reading.py": "the play's reading of a node",
    "plugins/filter/rollout.py": "playbooks/rollout.yml",
    "plugins/filter/node_maintenance.py": "roles/node_maintenance",
    "roles/doctor": "playbooks/validate.yml",
    "roles/reboot": "the layers that reboot a node (1-4, 11)",
    "roles/rollout": "playbooks/rollout.yml",
    "roles/node_maintenance": "cordon and drain around a rollout's batch",
    "simlab/tools/__main__.py": "the tool twins' entry point",
    "simlab/tools/agentclient.py": "the tool twins' way to the node agent",
    "simlab/tools/twin.py": "the tool twins' lookups",
    "simlab/tools/cargs.py": "how the tool twins read a number or an address on their command line, as libc does",
    "simlab/tools/formats.py": "the tool twins' output formats",
    "simlab/tools/forkserver.py": "the tool twins' fork server and the wrappers' client",
}
# the kinds of file every one of which belongs to a layer or to SHARED
INDEXED = ("plugins/modules/*.py", "plugins/action/*.py", "plugins/filter/*.py", "plugins/module_utils/**/*.py",
           "plugins/plugin_utils/*.py", "plugins/plugin_utils/*/*.py", "simlab/tools/*.py", "roles/*")


def files(number):
    """Every file of a layer, by kind; with ``role``, ``check`` and ``docs``."""
    layer = get(number)
    out = dict((kind, list(paths)) for kind, paths in FILES.get(layer.number, {}).items())
    out["role"] = ["roles/%s" % layer.role]
    out["check"] = ["plugins/plugin_utils/checks/%s.py" % layer.role]
    return out


def code_line(number, docs_dir="docs/layers"):
    """The "Code:" line of a layer's docs page, from the index (links
    relative to ``docs_dir``)."""
    up = "../" * len([p for p in docs_dir.split("/") if p])
    index = files(number)
    parts = []
    utils = index.get("module_utils") or []
    index["node_utils"] = [p for p in utils if p.startswith("plugins/module_utils/")]
    index["controller_utils"] = [p for p in utils if p.startswith("plugins/plugin_utils/")]
    for kind, label in (("role", "role"), ("modules", "modules"), ("actions", "actions"),
                        ("node_utils", "module_utils"), ("controller_utils", "plugin_utils"), ("filters", "filters"),
                        ("check", "check"), ("twin", "twin")):
        paths = index.get(kind) or []
        if paths:
            end = "/" if kind == "role" else ""
            links = ", ".join("[`%s%s`](%s%s%s)" % (p, end, up, p, end) for p in paths)
            parts.append("%s %s" % (label, links))
    parts.append("registry entry in [`plugins/plugin_utils/layers.py`](%splugins/plugin_utils/layers.py)" % up)
    return "Code: " + "; ".join(parts) + "."


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
