# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 10, the container runtime: containerd running and answering, its
configuration as Kubernetes needs it (systemd cgroups, the CNI plugins, the
NVIDIA runtime on GPU nodes), the kernel modules and sysctls, swap off.
Reads container_runtime_facts' answer from the node's nic_facts (its runtime
option)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    import tomllib
except ImportError:  # pragma: no cover - Python < 3.11 on the controller
    tomllib = None

try:
    import yaml
except ImportError:  # pragma: no cover - the controller has PyYAML (ansible-core needs it)
    yaml = None

from ansible_collections.gpufabric.stack.plugins.plugin_utils import kube_checks, plain_data

LAYER = 10
INTENT = ("container_runtime_config_path", "container_runtime_modules", "container_runtime_sysctls",
          "container_runtime_cni_bin_dir", "container_runtime_nvidia_runtime_path", "container_runtime_sysfs_root",
          "container_runtime_cni_required", "container_runtime_gpu_count", "container_runtime_nvidia_runtime")


def reads(intent, host):
    return {"nic_facts": {"sysfs_root": intent["container_runtime_sysfs_root"],
                          "runtime": {"config_path": intent["container_runtime_config_path"],
                                      "modules": list(intent["container_runtime_modules"]),
                                      "sysctls": dict(intent["container_runtime_sysctls"]),
                                      "cni_bin_dir": intent["container_runtime_cni_bin_dir"],
                                      "nvidia_runtime_path": intent["container_runtime_nvidia_runtime_path"]}}}


def check(reading, intent, host):
    facts = (reading.get("nic_facts") or {}).get("runtime") or {}
    return judge(facts, {"cni_required": intent.get("container_runtime_cni_required") or [],
                         "gpu_count": intent.get("container_runtime_gpu_count") or 0,
                         "nvidia_mode": intent.get("container_runtime_nvidia_runtime"),
                         "nvidia_runtime_path": intent.get("container_runtime_nvidia_runtime_path")})


def judge(facts, settings=None):
    """The verdict from container_runtime_facts' ``runtime`` answer and the
    role's settings (cni_required, gpu_count, nvidia_mode,
    nvidia_runtime_path): the kubelet configuration and containerd's
    config dump parsed here, then kube_checks.check_container_runtime."""
    facts = dict(plain_data.plain(facts) or {})
    facts.update(plain_data.plain(settings) or {})
    facts["gpu_count"] = int(facts.get("gpu_count") or 0)
    kubelet = facts.pop("kubelet_config", "") or ""
    if kubelet.strip() and yaml is not None:
        try:
            doc = yaml.safe_load(kubelet)
        except yaml.YAMLError as exc:
            doc = None
            facts["kubelet_cgroup_driver"] = "unreadable (%s)" % str(exc).splitlines()[0]
        if isinstance(doc, dict):
            facts["kubelet_cgroup_driver"] = str(doc.get("cgroupDriver") or "")
    config_dump = facts.pop("config_dump", "") or ""
    if config_dump and not facts.get("config_error"):
        if tomllib is None:
            facts["config_error"] = "cannot parse containerd's config dump: the controller needs Python 3.11 (tomllib)"
        else:
            try:
                facts["config"] = tomllib.loads(str(config_dump))
            except tomllib.TOMLDecodeError as exc:
                facts["config_error"] = "not TOML: %s" % exc
    return kube_checks.check_container_runtime(facts)
