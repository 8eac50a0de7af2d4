# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node maintenance decisions for a rollout: may this node be cordoned and
drained now, must the rollout wait for another actor, or is the node already
held drained by someone else?

Inputs are Kubernetes objects as the API returns them (``kubectl get -o json``
or kubernetes.core.k8s_info ``resources``): the Node, and any of

* ``SriovNetworkNodeState`` (sriovnetwork.openshift.io/v1) of the node, whose
  annotations ``sriovnetwork.openshift.io/desired-state`` (written by the
  config daemon) and ``sriovnetwork.openshift.io/current-state`` (written by
  the operator's drain controller) walk Idle -> Drain_Required or
  Reboot_Required -> Draining -> DrainComplete -> Idle.  The config daemon
  also writes the desired state on the Node as ``sriovnetwork.openshift.io/state``.
* ``NodeMaintenance`` of the NVIDIA maintenance operator
  (maintenance.nvidia.com/v1alpha1, namespaced, ``spec.nodeName``,
  ``spec.requestorID``; condition Ready with reasons Pending, Scheduled,
  Cordon, WaitForPodCompletion, Draining, Ready, RequestorFailed).
* ``NodeMaintenance`` of the medik8s node maintenance operator
  (nodemaintenance.medik8s.io/v1beta1, cluster-scoped, ``spec.nodeName``,
  ``status.phase`` Running, Succeeded or Failed).

and the node labels of the NVIDIA GPU/Network Operator driver upgrade state
machines (``nvidia.com/ofed-driver-upgrade-state``,
``nvidia.com/gpu-driver-upgrade-state``).

The rule is to wait rather than fight: an actor in the middle of its own
drain or configuration is waited for; a maintenance window another actor
holds open (drain complete) is joined without a second drain and left for
its owner to close; a failed one stops the rollout for a human.

Also here: what a kubernetes.core.k8s_drain result means (drained, or why not
and whether deleting pods instead of evicting them could help), and the state
changes of the twin's stand-in for the Kubernetes API.

Plain Python, unit-tested on recorded API responses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SRIOV_NODE_STATE = "sriovnetwork.openshift.io/state"
SRIOV_DESIRED = "sriovnetwork.openshift.io/desired-state"
SRIOV_CURRENT = "sriovnetwork.openshift.io/current-state"
SRIOV_IDLE = "Idle"
SRIOV_BUSY_CURRENT = ("Draining", "DrainComplete")
DRIVER_UPGRADE_LABELS = ("nvidia.com/ofed-driver-upgrade-state", "nvidia.com/gpu-driver-upgrade-state")
DRIVER_UPGRADE_IDLE = ("", "upgrade-done")
DRIVER_UPGRADE_FAILED = ("upgrade-failed",)
NVIDIA_NM_GROUP = "maintenance.nvidia.com"
MEDIK8S_NM_GROUP = "nodemaintenance.medik8s.io"
SRIOV_GROUP = "sriovnetwork.openshift.io"

# The annotation the rollout puts on a node it cordons, and removes when it
# uncordons: a node that carries it was left cordoned by an earlier run.
ROLLOUT_ANNOTATION = "gpufabric.stack/rollout"

ACTIONS = ("drain", "wait", "join", "blocked")


class MaintenanceError(ValueError):
    """Input that is not what the Kubernetes API returns."""


def _meta(obj):
    return obj.get("metadata") or {}


def _group(obj):
    api = obj.get("apiVersion") or ""
    return api.split("/")[0] if "/" in api else ""


def kind_of(obj):
    """'node', 'sriov_node_state', 'nvidia_maintenance', 'medik8s_maintenance'
    or None for objects the decision does not read."""
    if not isinstance(obj, dict):
        raise MaintenanceError("expected a Kubernetes object (a dict), got %r" % (obj,))
    kind, group = obj.get("kind"), _group(obj)
    if kind == "Node" and group == "":
        return "node"
    if kind == "SriovNetworkNodeState" and group == SRIOV_GROUP:
        return "sriov_node_state"
    if kind == "NodeMaintenance" and group == NVIDIA_NM_GROUP:
        return "nvidia_maintenance"
    if kind == "NodeMaintenance" and group == MEDIK8S_NM_GROUP:
        return "medik8s_maintenance"
    return None


def _flatten(objects):
    """Objects may be given as a list of objects, of k8s_info results
    ({resources: [...]}) or of List objects ({items: [...]})."""
    out = []
    for obj in objects or []:
        if not obj:
            continue
        if isinstance(obj, dict) and "resources" in obj and "kind" not in obj:
            out.extend(_flatten(obj.get("resources")))
        elif isinstance(obj, dict) and isinstance(obj.get("items"), list):
            out.extend(_flatten(obj["items"]))
        elif isinstance(obj, list):
            out.extend(_flatten(obj))
        else:
            out.append(obj)
    return out


def _condition(obj, ctype):
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def _holder(owner, name, phase, state, detail):
    return {"owner": owner, "object": name, "phase": phase, "state": state, "detail": detail}


def node_summary(node):
    meta = _meta(node)
    return {
        "name": meta.get("name"),
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
        "annotations": dict(meta.get("annotations") or {}),
        "labels": dict(meta.get("labels") or {}),
    }


def holders(node, objects=None, node_name=None):
    """Every other actor that holds or is about to hold the node.  Each is
    {owner, object, phase, state, detail}; phase is 'busy' (in the middle of
    its own drain or change: wait), 'drained' (holds the node drained for a
    maintenance window: join it) or 'failed' (needs a human)."""
    objs = _flatten(objects)
    name = node_name or (_meta(node).get("name") if node else None)
    out = []
    if node:
        summary = node_summary(node)
        state = summary["annotations"].get(SRIOV_NODE_STATE, "")
        if state and state != SRIOV_IDLE:
            out.append(_holder("sriov-network-operator", "Node/%s" % name, "busy", state,
                               "%s=%s on the node: the SR-IOV config daemon is changing it" % (SRIOV_NODE_STATE, state)))
        for label in DRIVER_UPGRADE_LABELS:
            if label not in summary["labels"]:
                continue
            value = summary["labels"][label] or ""
            if value in DRIVER_UPGRADE_IDLE:
                continue
            phase = "failed" if value in DRIVER_UPGRADE_FAILED else "busy"
            owner = "nvidia-network-operator" if "ofed" in label else "nvidia-gpu-operator"
            what = "failed on this node" if phase == "failed" else "is in progress on this node"
            out.append(_holder(owner, "Node/%s" % name, phase, value,
                               "%s=%s: a driver upgrade %s" % (label, value, what)))
    for obj in objs:
        kind = kind_of(obj)
        meta = _meta(obj)
        ref = "%s/%s%s" % (obj.get("kind"), (meta.get("namespace") + "/") if meta.get("namespace") else "", meta.get("name"))
        if kind == "sriov_node_state" and meta.get("name") == name:
            ann = meta.get("annotations") or {}
            desired, current = ann.get(SRIOV_DESIRED, ""), ann.get(SRIOV_CURRENT, "")
            if (desired and desired != SRIOV_IDLE) or current in SRIOV_BUSY_CURRENT:
                out.append(_holder("sriov-network-operator", ref, "busy", current or desired,
                                   "desired-state %s, current-state %s: the operator drains or configures this node"
                                   % (desired or "-", current or "-")))
        elif kind == "nvidia_maintenance" and (obj.get("spec") or {}).get("nodeName") == name:
            spec = obj.get("spec") or {}
            requestors = [spec.get("requestorID")] + list(spec.get("additionalRequestors") or [])
            who = "maintenance-operator (%s)" % ", ".join(r for r in requestors if r)
            ready = _condition(obj, "Ready")
            failed = _condition(obj, "RequestorFailed")
            reason = (ready or {}).get("reason") or "Pending"
            if meta.get("deletionTimestamp"):
                out.append(_holder(who, ref, "busy", "Deleting", "being released: the node is uncordoned next"))
            elif (failed and failed.get("status") == "True") or reason == "RequestorFailed":
                out.append(_holder(who, ref, "failed", "RequestorFailed",
                                   (failed or ready or {}).get("message") or "the requestor's maintenance failed"))
            elif ready and ready.get("status") == "True" and reason == "Ready":
                out.append(_holder(who, ref, "drained", "Ready", "node cordoned and drained for this maintenance"))
            else:
                out.append(_holder(who, ref, "busy", reason,
                                   (ready or {}).get("message") or "maintenance %s" % reason.lower()))
        elif kind == "medik8s_maintenance" and (obj.get("spec") or {}).get("nodeName") == name:
            status = obj.get("status") or {}
            phase = status.get("phase") or "Running"
            who = "node-maintenance-operator"
            why = (obj.get("spec") or {}).get("reason")
            if meta.get("deletionTimestamp"):
                out.append(_holder(who, ref, "busy", "Deleting", "being released: the node is uncordoned next"))
            elif phase == "Succeeded":
                out.append(_holder(who, ref, "drained", phase,
                                   "node cordoned and drained" + (" (%s)" % why if why else "")))
            elif phase == "Failed":
                out.append(_holder(who, ref, "failed", phase, status.get("lastError") or "maintenance failed"))
            else:
                out.append(_holder(who, ref, "busy", phase,
                                   "draining, %s%% done" % status.get("drainProgress", 0)
                                   + ("; last error: %s" % status["lastError"] if status.get("lastError") else "")))
    return out


def decide(node, objects=None, node_name=None, annotation=ROLLOUT_ANNOTATION, join_maintenance=True):
    """What the rollout does with this node before changing it.

    Returns {node, found, unschedulable, ours, holders, action, uncordon, reason}:

    * action 'drain': cordon (if needed) and drain; 'uncordon' tells whether
      the rollout uncordons it afterwards (not when someone else had cordoned
      it before the rollout came).
    * 'wait': another actor is in the middle of its own drain or change.
    * 'join': another actor holds the node drained for a maintenance window;
      change it inside that window without a second drain and leave the
      uncordon to the owner (only with join_maintenance, else 'wait').
    * 'blocked': the node is missing or another actor's maintenance failed.
    """
    name = node_name or (_meta(node).get("name") if node else None)
    if not node:
        return {"node": name, "found": False, "unschedulable": False, "ours": False, "holders": [],
                "action": "blocked", "uncordon": False,
                "reason": "no Node %s in the cluster: set kube_node_name for this host if its Node has another name"
                          % name}
    summary = node_summary(node)
    ours = annotation in summary["annotations"]
    held = holders(node, objects, name)
    base = {"node": name, "found": True, "unschedulable": summary["unschedulable"], "ours": ours, "holders": held}

    def text(hs):
        return "; ".join("%s %s: %s" % (h["owner"], h["object"], h["detail"]) for h in hs)

    failed = [h for h in held if h["phase"] == "failed"]
    busy = [h for h in held if h["phase"] == "busy"]
    drained = [h for h in held if h["phase"] == "drained"]
    if failed:
        return dict(base, action="blocked", uncordon=False, reason="held by a failed maintenance: " + text(failed))
    if busy:
        return dict(base, action="wait", uncordon=False, reason="waiting for " + text(busy))
    if drained:
        if join_maintenance:
            return dict(base, action="join", uncordon=False,
                        reason="already drained by " + text(drained) + "; changed inside that maintenance, "
                               "which its owner ends")
        return dict(base, action="wait", uncordon=False, reason="waiting for " + text(drained))
    if summary["unschedulable"] and not ours:
        return dict(base, action="drain", uncordon=False,
                    reason="cordoned before this rollout by someone else: drained, changed and left cordoned")
    if ours:
        return dict(base, action="drain", uncordon=True,
                    reason="left cordoned by an earlier rollout (%s=%s): resumed"
                           % (annotation, summary["annotations"].get(annotation)))
    return dict(base, action="drain", uncordon=True, reason="schedulable, no other maintenance")


# --------------------------------------------------------------------------- drain results

_PDB_RE = re.compile(r"disruption budget|TooManyRequests|\b429\b", re.I)
_TIMEOUT_TEXT = "timeout reached while pods were still running"
_DELETED_RE = re.compile(r"(\d+) Pod\(s\) deleted from node")


def drain_outcome(result):
    """What a kubernetes.core.k8s_drain (state drain) result means.

    Returns {drained, kind, fallback, evicted, reason}: kind is 'drained',
    'pdb' (an eviction refused by a PodDisruptionBudget), 'timeout' (pods
    still running when wait_timeout ran out), 'unmanaged', 'local_storage',
    'daemonset' (pods the options forbid deleting), 'not_found' or 'error';
    fallback tells whether draining again with disable_eviction (delete
    instead of evict, as kubectl drain --disable-eviction) can succeed.
    A result registered with failed_when: false counts as failed when it has
    a msg and no result text.
    """
    if not isinstance(result, dict):
        raise MaintenanceError("expected a k8s_drain result (a dict), got %r" % (result,))
    msg = str(result.get("msg") or "")
    warnings = [str(w) for w in result.get("warnings") or []]
    text = str(result.get("result") or "")
    m = _DELETED_RE.search(text)
    evicted = int(m.group(1)) if m else 0
    # registered with failed_when: false, a failure keeps its msg but loses
    # failed; k8s_drain reports success only through result
    if result.get("failed") or (msg and not text):
        if _PDB_RE.search(msg):
            kind, fallback = "pdb", True
        elif "not managed by ReplicationController" in msg:
            kind, fallback = "unmanaged", False
        elif "with local storage" in msg:
            kind, fallback = "local_storage", False
        elif "DaemonSet-managed" in msg:
            kind, fallback = "daemonset", False
        elif "not found" in msg.lower():
            kind, fallback = "not_found", False
        else:
            kind, fallback = "error", False
        return {"drained": False, "kind": kind, "fallback": fallback, "evicted": evicted, "reason": msg}
    late = [w for w in warnings if _TIMEOUT_TEXT in w]
    if late:
        return {"drained": False, "kind": "timeout", "fallback": True, "evicted": evicted,
                "reason": "pods still running when the drain timeout ran out (%s)" % text}
    return {"drained": True, "kind": "drained", "fallback": False, "evicted": evicted, "reason": text}


# --------------------------------------------------------------------------- the twin's stand-in

def twin_node(name):
    """The Node object the twin stand-in starts from."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}, "annotations": {}},
            "spec": {}}


TWIN_REFUSE = "simlab.gpufabric.stack/drain-refused"


def twin_drain_result(state, name, disable_eviction=False):
    """What kubernetes.core.k8s_drain would return for the twin's node: a
    node annotated simlab.gpufabric.stack/drain-refused=pdb refuses
    evictions the way a PodDisruptionBudget does (deleting still works)."""
    node = (state or {}).get("node") or twin_node(name)
    ann = (node.get("metadata") or {}).get("annotations") or {}
    if ann.get(TWIN_REFUSE) == "pdb" and not disable_eviction:
        return {"failed": True, "changed": True,
                "msg": "Failed to delete pod default/trainer-0 due to: Cannot evict pod as it would violate the "
                       "pod's disruption budget."}
    already = "already " if (node.get("spec") or {}).get("unschedulable") else ""
    return {"failed": False, "changed": True, "result": "node %s %smarked unschedulable." % (name, already)}


def twin_apply(state, op, name, annotation=ROLLOUT_ANNOTATION, rollout_id=""):
    """The twin stand-in's state after op (read, cordon, drain, uncordon).  State is
    {node: <Node>, objects: [...]}; a missing or empty state starts from a
    schedulable Node.  Returns the new state (the input is not changed)."""
    state = dict(state or {})
    node = state.get("node") or twin_node(name)
    meta = dict(node.get("metadata") or {})
    spec = dict(node.get("spec") or {})
    annotations = dict(meta.get("annotations") or {})
    if op == "cordon":
        spec["unschedulable"] = True
        annotations[annotation] = rollout_id or "cordoned"
    elif op == "drain":
        spec["unschedulable"] = True     # kubectl drain cordons first
    elif op == "uncordon":
        spec.pop("unschedulable", None)
        annotations.pop(annotation, None)
    elif op != "read":
        raise MaintenanceError("unknown operation %r: read, cordon, drain or uncordon" % (op,))
    meta["annotations"] = annotations
    state["node"] = dict(node, metadata=meta, spec=spec)
    state.setdefault("objects", [])
    return state
