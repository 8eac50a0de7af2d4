# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the doctor's layer 10 check reads on a node, in one pass: the
containerd unit and its start time, whether containerd answers, the
configuration it loads, the kernel modules and sysctls Kubernetes needs,
swap, the kubelet's configuration, the CNI plugins and the NVIDIA runtime.

Plain Python: `run(argv) -> (rc, stdout, stderr)` runs a command, and `root`
prefixes every absolute path, so tests read a fake tree."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re


def _path(root, path):
    return os.path.join(root or "/", str(path).lstrip("/"))


def _read(root, path):
    try:
        with open(_path(root, path)) as fh:
            return fh.read()
    except (IOError, OSError):
        return None


def parse_systemctl_show(text):
    """`systemctl show -p A -p B` output (A=value lines) as a dict."""
    props = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    return props


def boot_time(proc_stat):
    """The btime line of /proc/stat: seconds since the epoch at boot."""
    m = re.search(r"^btime\s+(\d+)", proc_stat or "", re.M)
    return int(m.group(1)) if m else 0


def active_swaps(proc_swaps):
    """The devices or files of /proc/swaps (its first line is a header)."""
    return [line.split()[0] for line in (proc_swaps or "").splitlines()[1:] if line.strip()]


def builtin_modules(modules_builtin):
    """Module names of modules.builtin (kernel/net/bridge/br_netfilter.ko)."""
    names = set()
    for line in (modules_builtin or "").splitlines():
        name = line.strip().rsplit("/", 1)[-1]
        if name:
            names.add(re.sub(r"\.ko(\..*)?$", "", name).replace("-", "_"))
    return names


def last_line(text, default):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else default


SUBSETS = ("unit", "ctr", "config", "modules", "sysctls", "swaps", "kubelet", "cni", "nvidia")
# What only the role's converge reads (never the doctor: not in "all"): the
# containerd version (its config format), swap at boot (fstab, swap.target),
# the distribution's CNI plugins, and which of the role's paths exist, so one
# call tells the role every step it can leave out.
CONVERGE_SUBSETS = ("version", "swap_boot", "cni_distro", "paths")

# a swap entry of /etc/fstab that is not commented out (the role's fstab edit
# comments out the lines this matches)
FSTAB_SWAP_RE = re.compile(r"^([^#\s]\S*\s+\S+\s+swap\s.*)$")

#: The module options that say what to read (container_runtime_facts', and
#: nic_facts' ``runtime`` suboptions): the node's sysfs root is the module's own.
OPTIONS = dict(
    unit=dict(type="str", default="containerd"),
    config_path=dict(type="path", default="/etc/containerd/config.toml"),
    modules=dict(type="list", elements="str", default=[]),
    sysctls=dict(type="dict", default={}),
    cni_bin_dir=dict(type="path", default="/opt/cni/bin"),
    nvidia_runtime_path=dict(type="path", default="/usr/bin/nvidia-container-runtime"),
    kubelet_config_path=dict(type="path", default="/var/lib/kubelet/config.yaml"),
)


def module_runner(module):
    """``run(argv)`` for :func:`gather` through an AnsibleModule: C locale,
    and rc 127 for a command the node does not have."""
    def run(argv):
        binary = module.get_bin_path(argv[0])
        if binary is None:
            return 127, "", "%s: command not found" % argv[0]
        return module.run_command([binary] + list(argv[1:]), environ_update={"LC_ALL": "C"})
    return run


def gather(run, root="/", sysfs_root="/sys", unit="containerd", config_path="/etc/containerd/config.toml",
           modules=(), sysctls=None, cni_bin_dir="/opt/cni/bin", nvidia_runtime_path="/usr/bin/nvidia-container-runtime",
           kubelet_config_path="/var/lib/kubelet/config.yaml", kernel_release=None, subset=SUBSETS,
           cni_distro_dir=None, paths=()):
    """The layer 10 facts of this node; sysctls is {key: wanted value};
    subset names the parts to read (SUBSETS, all by default).

    Returns unit_exists, active, started_at (epoch seconds, 0 when unknown),
    ctr_rc and ctr_output (None and a note when the unit, read in the same
    pass, is not active), config_dump (text, empty when it failed),
    config_error, config_path, config_mtime, modules {name: loaded},
    sysctls {key: [live or None, wanted]}, swaps, kubelet_config (text, empty
    without one), cni_plugins, nvidia_binary; and of CONVERGE_SUBSETS:
    version_output (``containerd --version``, empty when it failed),
    fstab_exists, fstab_swaps (its swap lines not commented out),
    swap_target (swap.target's UnitFileState), cni_distro_plugins (names in
    ``cni_distro_dir``), paths_exist {path: bool} for ``paths``.  The unit
    part adds unit_file_state (enabled, disabled, masked, ...); sysctls adds
    sysctls_to_set, ``key=value`` for each whose live value differs."""
    facts = {}
    if "unit" in subset:
        facts.update(_unit(run, root, unit))
    if "ctr" in subset:
        if facts.get("active", "active") == "active":
            rc, out, err = run(["ctr", "version"])
            facts["ctr_rc"] = rc
            facts["ctr_output"] = (out or "") + "\n" + (err or "")
        else:
            # No containerd to answer: ctr would wait out its dial timeout
            # (10 s) to say so, on every node where the unit is down.
            facts["ctr_rc"] = None
            facts["ctr_output"] = "not asked: containerd.service is %s" % facts["active"]
    if "config" in subset:
        facts.update(_config(run, root, config_path))
    if "modules" in subset:
        release = kernel_release or os.uname()[2]
        builtin = builtin_modules(_read(root, "/lib/modules/%s/modules.builtin" % release))
        facts["modules"] = dict((name, os.path.exists(os.path.join(sysfs_root, "module", name)) or name in builtin)
                                for name in modules)
    if "sysctls" in subset:
        facts["sysctls"] = {}
        for key, wanted in sorted((sysctls or {}).items()):
            rc, out, err = run(["sysctl", "-n", key])
            facts["sysctls"][key] = [out.strip() if rc == 0 else None, str(wanted)]
        facts["sysctls_to_set"] = ["%s=%s" % (key, wanted) for key, (live, wanted) in sorted(facts["sysctls"].items())
                                   if live != wanted]
    if "swaps" in subset:
        facts["swaps"] = active_swaps(_read(root, "/proc/swaps"))
    if "kubelet" in subset:
        facts["kubelet_config"] = _read(root, kubelet_config_path) or ""
    if "cni" in subset:
        try:
            facts["cni_plugins"] = sorted(os.listdir(_path(root, cni_bin_dir)))
        except (IOError, OSError):
            facts["cni_plugins"] = []
    if "nvidia" in subset:
        facts["nvidia_binary"] = os.path.exists(_path(root, nvidia_runtime_path))
    if "version" in subset:
        rc, out, err = run(["containerd", "--version"])
        facts["version_output"] = out if rc == 0 else ""
    if "swap_boot" in subset:
        fstab = _read(root, "/etc/fstab")
        facts["fstab_exists"] = fstab is not None
        facts["fstab_swaps"] = [line for line in (fstab or "").splitlines() if FSTAB_SWAP_RE.match(line)]
        rc, out, err = run(["systemctl", "show", "swap.target", "-p", "UnitFileState"])
        facts["swap_target"] = (parse_systemctl_show(out).get("UnitFileState") or "unknown") if rc == 0 else "unknown"
    if "cni_distro" in subset:
        try:
            facts["cni_distro_plugins"] = sorted(os.listdir(_path(root, cni_distro_dir))) if cni_distro_dir else []
        except (IOError, OSError):
            facts["cni_distro_plugins"] = []
    if "paths" in subset:
        facts["paths_exist"] = dict((p, os.path.exists(_path(root, p))) for p in paths or ())
    return facts


def _unit(run, root, unit):
    facts = {}
    rc, out, err = run(["systemctl", "show", unit + ".service", "-p", "LoadState", "-p", "ActiveState",
                        "-p", "ActiveEnterTimestampMonotonic", "-p", "UnitFileState"])
    props = parse_systemctl_show(out) if rc == 0 else {}
    if rc != 0:
        facts["unit_exists"] = True
        facts["active"] = "unknown (systemctl show: %s)" % last_line(err, "rc %d" % rc)
    else:
        facts["unit_exists"] = props.get("LoadState", "not-found") not in ("not-found", "")
        facts["active"] = props.get("ActiveState") or "unknown"
    facts["unit_file_state"] = props.get("UnitFileState") or "unknown"
    btime = boot_time(_read(root, "/proc/stat"))
    try:
        mono_us = int(props.get("ActiveEnterTimestampMonotonic") or 0)
    except ValueError:
        mono_us = 0
    facts["started_at"] = btime + mono_us / 1e6 if btime and mono_us else 0
    return facts


def _config(run, root, config_path):
    facts = {"config_path": config_path}
    rc, out, err = run(["containerd", "--config", config_path, "config", "dump"])
    facts["config_dump"] = out if rc == 0 else ""
    facts["config_error"] = "" if rc == 0 else last_line(err, "config dump failed")
    try:
        facts["config_mtime"] = os.stat(_path(root, config_path)).st_mtime
    except (IOError, OSError):
        facts["config_mtime"] = 0
    return facts
