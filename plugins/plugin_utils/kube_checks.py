# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The doctor's checks of the Kubernetes layers, over API objects.

One function per layer check.  Each takes API objects as plain dicts (as
kubernetes.core.k8s_info returns them in ``resources``, or as
``kubectl get -o json`` prints them) and returns the doctor's layer result
{layer, name, status, reason, evidence, remediation} (see doctor.result).
The check files of layers 11-14 (checks/kubeadm.py, cni.py, multus.py,
sriov_operator.py) say which objects they need (``query``); the doctor's
action reads each distinct one once for the play and hands every check the
answers (``answer``); unit tests call these on recorded objects.

Plain Python, no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result
from ansible_collections.gpufabric.stack.plugins.plugin_utils.kubeadm.kube_intent import (
    config_drift, parse_version, skew_errors)

# ------------------------------------------------- the cluster's one read

VERSION = "version"


def query(kind, api_version="v1", namespace=None, name=None, label_selectors=None):
    """One read of API objects as kubernetes.core.k8s_info takes it, or
    ``query(VERSION)`` for the API server's version (k8s_cluster_info)."""
    if kind == VERSION:
        return {"kind": VERSION}
    q = {"kind": kind, "api_version": api_version}
    if namespace:
        q["namespace"] = namespace
    if name:
        q["name"] = name
    if label_selectors:
        q["label_selectors"] = list(label_selectors)
    return q


def query_key(q):
    """A query as one string (the key of its answer)."""
    return "|".join("%s=%s" % (k, ",".join(v) if isinstance(v, list) else v) for k, v in sorted(q.items()))


def answer(reading, q):
    """(objects, error) of query ``q`` in a check's cluster reading: the
    list of objects (for VERSION, the version dict in a list), and '' or
    the message of a failed read."""
    got = ((reading.get("cluster") or {}).get("answers") or {}).get(query_key(q))
    if got is None:
        return [], "%s was not read" % query_key(q)
    if got.get("error"):
        return [], str(got["error"])
    if q["kind"] == VERSION:
        return [got.get("version") or {}], ""
    return list(got.get("resources") or []), ""


def first_error(reading, queries):
    """The message of the first failed read among ``queries``, else ''."""
    for q in queries:
        err = answer(reading, q)[1]
        if err:
            return err
    return ""


def named(objects, name):
    """The object of ``objects`` whose metadata.name is ``name``, or None."""
    for obj in objects or []:
        if ((obj or {}).get("metadata") or {}).get("name") == name:
            return obj
    return None


def skipped(layer, reason):
    """A layer read through the API with no cluster to read (no control-plane
    host, its kubeconfig missing, the host unreachable)."""
    if int(layer) == 11:
        return result(11, "skipped", reason, [], "initialise the cluster: site.yml --tags layer11")
    return result(layer, "skipped", reason, [],
                  "initialise the cluster (layer 11), then site.yml --tags layer%02d" % int(layer))


# ------------------------------------------------------------------ helpers


def condition(obj, ctype):
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def _name(obj):
    meta = (obj or {}).get("metadata") or {}
    return "%s/%s" % (meta["namespace"], meta.get("name")) if meta.get("namespace") else meta.get("name")


def pod_ready(pod):
    """(ready, text): Ready condition True, and why not otherwise (the
    waiting/terminated reason of the first container that is not ready)."""
    status = pod.get("status") or {}
    name = pod["metadata"]["name"]
    phase = status.get("phase")
    cond = condition(pod, "Ready")
    if cond and cond.get("status") == "True":
        return True, "%s Ready" % name
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        if cs.get("ready"):
            continue
        state = cs.get("state") or {}
        for key in ("waiting", "terminated"):
            if state.get(key):
                detail = state[key].get("reason") or key
                msg = state[key].get("message")
                return False, "%s not ready: container %s %s%s (restarts %d)" % (
                    name, cs.get("name"), detail, (": " + msg[:160]) if msg else "", cs.get("restartCount") or 0)
        if state.get("running"):
            return False, "%s not ready: container %s running but not ready (restarts %d)" % (
                name, cs.get("name"), cs.get("restartCount") or 0)
    reason = (cond or {}).get("reason") or status.get("reason") or phase or "unknown"
    msg = (cond or {}).get("message") or status.get("message") or ""
    return False, "%s not ready: %s%s" % (name, reason, (" " + msg[:160]) if msg else "")


def pods_on(pods, node):
    return [p for p in pods or [] if (p.get("spec") or {}).get("nodeName") == node]


def _labels(obj):
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _api_failed(layer, api_error):
    return result(layer, "fail", "Kubernetes API: %s" % str(api_error)[:300], [str(api_error)[:1000]],
                  "check the API server and gpufabric_kubeconfig on the first kube_control_plane host (layer 11)")


def _node_missing(layer, node):
    return result(layer, "fail", "node %s is not registered in the cluster" % node, [],
                  "join the node (layer 11): site.yml --tags layer11")


def _quantity(value):
    """Extended resources are integers; '0', '8', 8 -> int."""
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return 0


# ----------------------------------------------------------------- layer 10
# Host facts, not API objects: the container runtime is checked on the node
# before any cluster exists.


def containerd_settings(config):
    """From a parsed `containerd config dump` (config version 2 of containerd
    1.6/1.7, or 3 of containerd 2.x): the CRI runtimes, the default runtime
    and the CNI binary directories."""
    config = config or {}
    plugins = config.get("plugins") or {}
    version = int(config.get("version") or 1)
    if version >= 3:
        cri = plugins.get("io.containerd.cri.v1.runtime") or {}
        images = plugins.get("io.containerd.cri.v1.images") or {}
        sandbox = (images.get("pinned_images") or {}).get("sandbox")
    else:
        cri = plugins.get("io.containerd.grpc.v1.cri") or {}
        sandbox = cri.get("sandbox_image")
    ctd = cri.get("containerd") or {}
    cni = cri.get("cni") or {}
    bin_dirs = cni.get("bin_dirs") or ([cni["bin_dir"]] if cni.get("bin_dir") else [])
    runtimes = {}
    for name, rt in (ctd.get("runtimes") or {}).items():
        opts = rt.get("options") or {}
        runtimes[name] = {"runtime_type": rt.get("runtime_type"), "systemd_cgroup": opts.get("SystemdCgroup"),
                          "binary": opts.get("BinaryName") or ""}
    return {"version": version, "default_runtime": ctd.get("default_runtime_name") or "runc",
            "runtimes": runtimes, "cni_bin_dirs": bin_dirs, "sandbox_image": sandbox}


def check_container_runtime(facts):
    """Layer 10 on one node: containerd active and answering, every runc
    runtime with SystemdCgroup = true in the configuration containerd loads
    (and the kubelet, when configured, on the systemd cgroup driver too), the
    NVIDIA runtime where GPUs and the toolkit are, the kernel modules and
    sysctls Kubernetes needs, swap off, the CNI plugins in place.

    facts: unit_exists, active (systemd ActiveState), ctr_rc, ctr_output,
    config (parsed config dump) or config_error, config_path, config_mtime
    and started_at (epoch seconds), modules {name: loaded}, sysctls
    {key: [live, wanted]}, swaps [device], kubelet_cgroup_driver,
    cni_plugins [names in the CNI bin dir], cni_required [names],
    gpu_count, nvidia_mode (auto, enabled, disabled), nvidia_binary (bool),
    nvidia_runtime_path."""
    f = facts or {}
    evidence = []
    fix = "site.yml --tags layer10 on this host"
    if not f.get("unit_exists", True):
        return result(10, "fail", "containerd is not installed (no containerd.service)", evidence, fix)
    state = f.get("active") or "unknown"
    evidence.append("containerd.service %s" % state)
    if state != "active":
        return result(10, "fail", "containerd is %s" % state, evidence,
                      "journalctl -u containerd -b shows why; then %s" % fix)
    if f.get("ctr_rc", 0) != 0:
        out = (f.get("ctr_output") or "").strip().splitlines()
        return result(10, "fail", "containerd does not answer on its socket: %s" % (out[-1] if out else "ctr version failed"),
                      evidence + out[-3:], "systemctl restart containerd; journalctl -u containerd -b")
    server = [ln.strip() for ln in (f.get("ctr_output") or "").splitlines() if ln.strip().startswith("Version:")]
    if server:
        evidence.append("ctr version: server %s" % server[-1].split(":", 1)[1].strip())
    path = f.get("config_path") or "/etc/containerd/config.toml"
    if f.get("config_error"):
        return result(10, "fail", "containerd config does not load: %s" % str(f["config_error"])[:200], evidence,
                      "containerd config dump names the line in %s; %s" % (path, fix))
    cfg = containerd_settings(f.get("config"))
    evidence.append("config version %d, default runtime %s, runtimes %s"
                    % (cfg["version"], cfg["default_runtime"], ", ".join(sorted(cfg["runtimes"])) or "none"))
    if cfg["default_runtime"] not in cfg["runtimes"]:
        return result(10, "fail", "default runtime %s is not configured in %s" % (cfg["default_runtime"], path),
                      evidence, fix)
    for name in sorted(cfg["runtimes"]):
        rt = cfg["runtimes"][name]
        if rt["runtime_type"] != "io.containerd.runc.v2":
            continue
        evidence.append("runtime %s: SystemdCgroup = %s" % (name, str(rt["systemd_cgroup"]).lower()))
        if rt["systemd_cgroup"] is not True:
            return result(10, "fail", "SystemdCgroup is not true for runtime %s in %s: containerd uses the cgroupfs driver, "
                          "the kubelet the systemd one" % (name, path), evidence, fix)
    driver = f.get("kubelet_cgroup_driver")
    if driver:
        evidence.append("kubelet cgroupDriver %s" % driver)
        if driver != "systemd":
            return result(10, "fail", "cgroup driver mismatch: kubelet cgroupDriver is %s, containerd uses systemd" % driver,
                          evidence, "set cgroupDriver: systemd in /var/lib/kubelet/config.yaml (site.yml --tags layer11)")
    gpus = int(f.get("gpu_count") or 0)
    mode = f.get("nvidia_mode") or "auto"
    binary = bool(f.get("nvidia_binary"))
    rpath = f.get("nvidia_runtime_path") or "/usr/bin/nvidia-container-runtime"
    if gpus > 0 and mode != "disabled":
        evidence.append("%d GPUs; NVIDIA container toolkit %s" % (gpus, "installed" if binary else "not installed (%s)" % rpath))
        if mode == "enabled" and not binary:
            return result(10, "fail", "%d GPUs but %s is missing (container_runtime_nvidia_runtime: enabled)" % (gpus, rpath),
                          evidence, "install nvidia-container-toolkit (container_runtime_nvidia_toolkit_install: true)")
        if binary and "nvidia" not in cfg["runtimes"]:
            return result(10, "fail", "%d GPUs and the NVIDIA toolkit, but containerd has no nvidia runtime" % gpus,
                          evidence, fix)
    missing = sorted(m for m, loaded in (f.get("modules") or {}).items() if not loaded)
    evidence.append("modules: %s" % ", ".join("%s %s" % (m, "loaded" if ok else "missing")
                                              for m, ok in sorted((f.get("modules") or {}).items())))
    if missing:
        return result(10, "fail", "kernel module %s not loaded" % missing[0], evidence,
                      "modprobe %s (site.yml --tags layer10 loads it and lists it in modules-load.d)" % missing[0])
    for key, (live, wanted) in sorted((f.get("sysctls") or {}).items()):
        evidence.append("%s = %s" % (key, "(absent)" if live is None else live))
        if str(live if live is not None else "").strip() != str(wanted).strip():
            return result(10, "fail", "%s is %s, Kubernetes needs %s" % (key, "absent" if live is None else live, wanted),
                          evidence, "site.yml --tags layer10 (sysctl.d file and the running value)")
    swaps = f.get("swaps") or []
    evidence.append("swap: %s" % (", ".join(swaps) if swaps else "off"))
    if swaps:
        return result(10, "fail", "swap is on (%s): the kubelet refuses to start" % ", ".join(swaps), evidence,
                      "swapoff -a and remove the swap entries from /etc/fstab (site.yml --tags layer10)")
    required = f.get("cni_required") or []
    present = set(f.get("cni_plugins") or [])
    bin_dirs = ", ".join(cfg["cni_bin_dirs"]) or "(none)"
    absent = [p for p in required if p not in present]
    evidence.append("CNI plugins in %s: %d (%s)" % (bin_dirs, len(present), ", ".join(sorted(present)[:8])))
    if absent:
        return result(10, "fail", "CNI plugin %s missing from %s" % (absent[0], bin_dirs), evidence,
                      "site.yml --tags layer10 links the distribution's CNI plugins there")
    started, mtime = f.get("started_at"), f.get("config_mtime")
    if started and mtime and float(mtime) > float(started) + 1:
        return result(10, "warn", "%s changed after containerd started: the running daemon has the old settings" % path,
                      evidence, "systemctl restart containerd")
    return result(10, "pass", "containerd active, SystemdCgroup true, modules, sysctls and swap as Kubernetes needs",
                  evidence)


# ----------------------------------------------------------------- layer 11

KUBELET_INTENT_KEYS = ("cgroupDriver", "cpuManagerPolicy", "reservedSystemCPUs", "topologyManagerPolicy",
                       "topologyManagerScope")


def check_kubeadm(node_name, node, server_version=None, wanted_version=None, kubelet_config=None,
                  wanted_kubelet=None, skip_reason=None, api_error=None):
    """Layer 11 on one node: registered, Ready, kubelet within the version
    skew policy of the kube-apiserver, and the kubelet running the
    configuration the inventory wants (on GPU workers the static CPU manager
    and the single-numa-node topology manager).

    node: the Node object or None; kubelet_config: the node's
    /var/lib/kubelet/config.yaml (dict) or None; wanted_kubelet: the
    KubeletConfiguration the role renders for the node."""
    if skip_reason:
        return result(11, "skipped", skip_reason, [], "initialise the cluster: site.yml --tags layer11")
    if api_error:
        return _api_failed(11, api_error)
    if not node:
        return result(11, "fail", "node %s is not registered in the cluster" % node_name, [],
                      "site.yml --tags layer11 joins it (kubeadm join); journalctl -u kubelet on the node shows why not")
    status = node.get("status") or {}
    info = status.get("nodeInfo") or {}
    kubelet = info.get("kubeletVersion") or ""
    evidence = ["kubelet %s, kube-apiserver %s, runtime %s" % (kubelet or "?", server_version or "?",
                                                               info.get("containerRuntimeVersion") or "?")]
    ready = condition(node, "Ready")
    if ready:
        evidence.append("Ready %s (%s)" % (ready.get("status"), ready.get("reason")))
    warn = None
    if not ready or ready.get("status") == "Unknown":
        return result(11, "fail", "node %s: kubelet stopped posting status (Ready %s)" % (
            node_name, (ready or {}).get("reason") or "missing"), evidence,
            "systemctl status kubelet; journalctl -u kubelet -b on the node")
    if ready.get("status") != "True":
        msg = ready.get("message") or ""
        if "network" in msg.lower() or "cni" in msg.lower():
            warn = "node %s NotReady until the pod network is up (layer 12): %s" % (node_name, msg[:160])
        else:
            return result(11, "fail", "node %s NotReady: %s %s" % (node_name, ready.get("reason") or "", msg[:200]),
                          evidence, "journalctl -u kubelet -b on the node")
    if server_version and kubelet:
        errors = skew_errors(server_version, kubelet, node_name)
        if errors:
            return result(11, "fail", "version skew: %s" % errors[0], evidence,
                          "install the kubelet of the control plane's version (gpufabric_kube_version) and restart it")
    live = kubelet_config or {}
    if live and wanted_kubelet:
        for key in KUBELET_INTENT_KEYS:
            if key in wanted_kubelet or key in live:
                evidence.append("kubelet %s: %s" % (key, live.get(key, "(default)")))
        drift = config_drift(live, wanted_kubelet, [k for k in KUBELET_INTENT_KEYS if k in wanted_kubelet])
        if drift:
            d = drift[0]
            return result(11, "fail", "kubelet %s is %s, the inventory wants %s" % (
                d["key"], d["live"] if d["live"] is not None else "unset (default)", d["wanted"]), evidence,
                "site.yml --tags layer11 drains the node, rewrites /var/lib/kubelet/config.yaml, restarts the kubelet")
    if warn:
        return result(11, "warn", warn, evidence, "site.yml --tags layer12")
    pressure = [c.get("type") for c in status.get("conditions") or []
                if c.get("type") in ("MemoryPressure", "DiskPressure", "PIDPressure") and c.get("status") == "True"]
    if pressure:
        return result(11, "warn", "node %s has %s" % (node_name, ", ".join(pressure)), evidence,
                      "free memory, disk or PIDs on the node; the kubelet evicts pods meanwhile")
    if (node.get("spec") or {}).get("unschedulable"):
        return result(11, "warn", "node %s is cordoned (spec.unschedulable)" % node_name, evidence,
                      "kubectl uncordon %s once its maintenance is over" % node_name)
    if wanted_version and kubelet:
        try:
            if parse_version(kubelet) != parse_version(wanted_version):
                return result(11, "warn", "kubelet %s, the inventory wants %s" % (kubelet, wanted_version), evidence,
                              "upgrade with kubeadm, one minor version at a time")
        except ValueError:
            pass
    return result(11, "pass", "node %s Ready, kubelet %s" % (node_name, kubelet), evidence)


# ----------------------------------------------------------------- layer 12

CNI_PODS = {"calico": "calico-node", "cilium": "cilium"}


def check_cni(node_name, node, pods, plugin="calico", expected_mtu=None, installation=None,
              cilium_config=None, api_error=None):
    """Layer 12: the node's network is up (NetworkUnavailable False, Ready
    not blocked by the network plugin), the CNI agent pod on the node is
    ready, and the pod MTU the CNI uses is the one derived from the
    underlay."""
    if api_error:
        return _api_failed(12, api_error)
    if not node:
        return _node_missing(12, node_name)
    agent = CNI_PODS.get(plugin, plugin)
    evidence = []
    unavailable = condition(node, "NetworkUnavailable")
    if unavailable:
        evidence.append("NetworkUnavailable %s (%s)" % (unavailable.get("status"), unavailable.get("reason")))
        if unavailable.get("status") == "True":
            return result(12, "fail", "node %s: NetworkUnavailable: %s %s" % (
                node_name, unavailable.get("reason"), unavailable.get("message") or ""), evidence,
                "check the %s pod on the node (kubectl -n <ns> logs) and site.yml --tags layer12" % agent)
    ready = condition(node, "Ready")
    if ready:
        evidence.append("Ready %s (%s)" % (ready.get("status"), ready.get("reason")))
    if ready and ready.get("status") != "True":
        msg = ready.get("message") or ""
        if "network" in msg.lower() or "cni" in msg.lower():
            return result(12, "fail", "node %s NotReady: %s" % (node_name, msg[:200]), evidence,
                          "the container runtime has no CNI config: install the CNI (site.yml --tags layer12)")
    mine = pods_on(pods, node_name)
    if not mine:
        return result(12, "fail", "no %s pod on node %s" % (agent, node_name), evidence,
                      "check the %s DaemonSet (node selector, tolerations) or install it: site.yml --tags layer12" % agent)
    for pod in mine:
        ok, text = pod_ready(pod)
        evidence.append(text)
        if not ok:
            return result(12, "fail", "%s pod on %s: %s" % (agent, node_name, text), evidence,
                          "kubectl -n %s logs %s; then site.yml --tags layer12"
                          % (pod["metadata"].get("namespace"), pod["metadata"]["name"]))
    seen, source = None, None
    if installation:
        status_mtu = (installation.get("status") or {}).get("mtu")
        spec_mtu = ((installation.get("spec") or {}).get("calicoNetwork") or {}).get("mtu")
        seen = status_mtu or spec_mtu
        source = "Installation %s %s" % (_name(installation), "status.mtu" if status_mtu else "spec.calicoNetwork.mtu")
    elif cilium_config:
        data = cilium_config.get("data") or {}
        if data.get("mtu") not in (None, "", "0"):
            seen = data.get("mtu")
            source = "ConfigMap %s data.mtu (device MTU)" % _name(cilium_config)
    if seen is not None:
        evidence.append("%s: %s" % (source, seen))
        if expected_mtu and int(seen) != int(expected_mtu):
            return result(12, "fail", "%s MTU %s differs from the intent %s (underlay MTU minus encapsulation)"
                          % (plugin, seen, expected_mtu), evidence,
                          "site.yml --tags layer12 sets it; pods keep their old MTU until restarted")
    return result(12, "pass", "%s ready on %s" % (agent, node_name), evidence)


# ----------------------------------------------------------------- layer 13


def check_multus(node_name, node, crd, daemonset, pods, api_error=None):
    """Layer 13: the NetworkAttachmentDefinition CRD is established, the
    thick Multus DaemonSet exists and its pod on this node is ready."""
    if api_error:
        return _api_failed(13, api_error)
    if not node:
        return _node_missing(13, node_name)
    evidence = []
    if not crd:
        return result(13, "fail", "CRD network-attachment-definitions.k8s.cni.cncf.io missing", evidence,
                      "site.yml --tags layer13 applies it")
    est = condition(crd, "Established")
    evidence.append("CRD %s Established %s" % (_name(crd), (est or {}).get("status")))
    if not est or est.get("status") != "True":
        return result(13, "fail", "CRD %s not established: %s" % (_name(crd), (est or {}).get("message") or "no condition"),
                      evidence, "kubectl describe crd %s" % _name(crd))
    if not daemonset:
        return result(13, "fail", "Multus DaemonSet missing", evidence, "site.yml --tags layer13 applies it")
    st = daemonset.get("status") or {}
    desired, ready = st.get("desiredNumberScheduled") or 0, st.get("numberReady") or 0
    evidence.append("DaemonSet %s: %d of %d ready" % (_name(daemonset), ready, desired))
    mine = pods_on(pods, node_name)
    if not mine:
        return result(13, "fail", "no Multus pod on node %s" % node_name, evidence,
                      "check the DaemonSet %s tolerations and node selector" % _name(daemonset))
    for pod in mine:
        ok, text = pod_ready(pod)
        evidence.append(text)
        if not ok:
            return result(13, "fail", "Multus pod on %s: %s" % (node_name, text), evidence,
                          "kubectl -n %s logs %s (the primary CNI config must exist first, layer 12)"
                          % (pod["metadata"].get("namespace"), pod["metadata"]["name"]))
    if ready < desired:
        return result(13, "warn", "Multus ready on %s, but %d of %d Multus pods are ready cluster-wide"
                      % (node_name, ready, desired), evidence, "the other nodes' doctor rows name theirs")
    return result(13, "pass", "Multus ready on %s" % node_name, evidence)


# ----------------------------------------------------------------- layer 14

NODE_COMPONENTS = {
    "sriov-network-operator": ["sriov-network-config-daemon", "sriov-device-plugin"],
    "nvidia-network-operator": ["rdma-shared-dp"],
}


def check_sriov_operator(node_name, node, operator_pods, resources, expected_nads, nads,
                         provider="sriov-network-operator", node_state=None, nic_cluster_policy=None,
                         api_error=None):
    """Layer 14: the operator's pods are ready (its controller and, on this
    node, the config daemon and device plugin), the node's sync succeeded,
    every resource the policies give this node is allocatable (> 0), and
    every tenant namespace has its NetworkAttachmentDefinition.

    resources: full extended resource names this node must offer
    (``openshift.io/gpu_rail0``); expected_nads: [{namespace, name,
    resource}]; nads: NetworkAttachmentDefinition objects."""
    if api_error:
        return _api_failed(14, api_error)
    if not node:
        return _node_missing(14, node_name)
    evidence = []
    pods = [p for p in operator_pods or [] if (p.get("status") or {}).get("phase") != "Succeeded"]
    if not pods:
        return result(14, "fail", "%s is not running: no pod in its namespace" % provider, evidence,
                      "site.yml --tags layer14 installs it")
    controllers = [p for p in pods
                   if not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])]
    for pod in controllers + pods_on(pods, node_name):
        ok, text = pod_ready(pod)
        evidence.append(text)
        if not ok:
            return result(14, "fail", "%s: %s" % (provider, text), evidence,
                          "kubectl -n %s describe pod %s" % (pod["metadata"].get("namespace"), pod["metadata"]["name"]))
    if not controllers:
        return result(14, "fail", "%s controller pod missing" % provider, evidence,
                      "kubectl -n <namespace> get deploy; site.yml --tags layer14")
    apps = {_labels(p).get("app") for p in pods_on(pods, node_name)}
    # A node no policy gives a resource has no device plugin to check.
    for comp in NODE_COMPONENTS.get(provider, []) if resources else []:
        if comp not in apps:
            why = " (no policy selects the node: check its gpufabric.io/nic-profile label)" \
                if comp == "sriov-device-plugin" else ""
            return result(14, "fail", "no %s pod on node %s%s" % (comp, node_name, why), evidence,
                          "site.yml --tags layer14 (labels the node and applies the policies)")
    if node_state:
        st = node_state.get("status") or {}
        evidence.append("SriovNetworkNodeState %s: syncStatus %s" % (_name(node_state), st.get("syncStatus")))
        if st.get("syncStatus") == "Failed":
            return result(14, "fail", "operator sync failed on %s: %s" % (node_name, (st.get("lastSyncError") or "")[:240]),
                          evidence, "compare the policies with the VFs layer 6 created (numVfs, MTU); "
                          "make render and tests/integration/test_sriov_policy_twin.py show the mismatch")
    if nic_cluster_policy:
        st = nic_cluster_policy.get("status") or {}
        evidence.append("NicClusterPolicy %s: %s" % (_name(nic_cluster_policy), st.get("state")))
        if st.get("state") not in ("ready", None):
            bad = [a for a in st.get("appliedStates") or [] if a.get("state") != "ready"]
            detail = "; ".join("%s %s %s" % (a.get("name"), a.get("state"), a.get("message") or "") for a in bad)
            return result(14, "fail", "NicClusterPolicy %s: %s" % (st.get("state"), detail or st.get("reason") or ""),
                          evidence, "kubectl get nicclusterpolicy -o yaml; kubectl -n nvidia-network-operator get pods")
    alloc = (node.get("status") or {}).get("allocatable") or {}
    for res in resources or []:
        have = _quantity(alloc.get(res))
        evidence.append("allocatable %s: %d" % (res, have))
        if have <= 0:
            return result(14, "fail", "allocatable %s is %d on %s" % (res, have, node_name), evidence,
                          "the device plugin found no VF for it: check the VFs (layer 6), the policy's nicSelector "
                          "and kubectl -n <namespace> logs of the device plugin pod on the node")
    present = {(n["metadata"].get("namespace"), n["metadata"]["name"]): n for n in nads or []}
    for want in expected_nads or []:
        key = (want["namespace"], want["name"])
        if key not in present:
            return result(14, "fail", "NetworkAttachmentDefinition %s/%s missing in tenant namespace %s"
                          % (want["namespace"], want["name"], want["namespace"]), evidence,
                          "site.yml --tags layer14 (the operator renders it from the SriovNetwork of the same name)")
        ann = (present[key]["metadata"].get("annotations") or {}).get("k8s.v1.cni.cncf.io/resourceName", "")
        if want.get("resource") and ann.split("/")[-1] != want["resource"]:
            return result(14, "fail", "NetworkAttachmentDefinition %s/%s requests %r, intent is %s"
                          % (want["namespace"], want["name"], ann, want["resource"]), evidence,
                          "site.yml --tags layer14")
    if expected_nads:
        evidence.append("%d NetworkAttachmentDefinitions present in %d tenant namespaces"
                        % (len(expected_nads), len({n["namespace"] for n in expected_nads})))
    if node_state and (node_state.get("status") or {}).get("syncStatus") == "InProgress":
        return result(14, "warn", "operator sync in progress on %s" % node_name, evidence, "wait and re-run the doctor")
    return result(14, "pass", "%s ready on %s; %d resource(s) allocatable" % (provider, node_name, len(resources or [])),
                  evidence)
