# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 15, NCCL validation: an all_reduce_perf run over the GPU nodes
whose busbw of the largest message size reaches the gate (link speed / 8 x
NICs per node x nccl_validate_efficiency) over NET/IB. The run is one
collective: a failing gate fails every node of it, except where NCCL fell
back to sockets on some nodes only; those fail and a node whose own ranks
used NET/IB warns naming them. A node without GPUs is not checked.

Read across nodes by the role's tasks/doctor.yml (or its converge,
tasks/main.yml), handed over as the reading ``{run, file, mode}``:

- ``run``: ``{plan, gate}`` of the run, the plan of nccl_validate.plan()
  and the gate of nccl_validate.gate_output() (null when nothing ran: the
  plan says why), or the last recorded run read from ``file``; null when
  ``file`` does not exist;
- ``file``: the record the run was read from (nccl_validate_result_file),
  null for a run made by this play;
- ``mode``: how layer 15 runs here (hosts, k8s or render)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufabric.stack.plugins.plugin_utils import perf_parsers
from ansible_collections.gpufabric.stack.plugins.plugin_utils.doctor import result
from ansible_collections.gpufabric.stack.plugins.plugin_utils.nccl_validate.nccl_validate import log_host, socket_hosts

LAYER = 15
INTENT = ("nccl_validate_gpus_per_node",)
RERUN = "run site.yml --tags layer15"

REMEDIATION = {
    "socket": "NCCL found no usable RDMA device: check that NCCL_IB_HCA names devices present on every node "
              "(layers 5-6), that NCCL_IB_DISABLE is not set and that the RoCE v2 GID index exists (show_gids); "
              "layer 9 (pairwise ib_write_bw) names the node and the pair",
    "timeout": "a rank hangs: run layer 9 (pairwise ib_write_bw) to find the pair, check that every node "
               "reaches the others over NCCL_SOCKET_IFNAME, then raise nccl_validate_timeout if the sizes are large",
    "no_rows": "the job failed before any result: read the NCCL WARN lines in the evidence; layers 7-9 "
               "(MTU, PFC, links) are the usual cause",
    "incomplete": "the job stopped mid-run: read the NCCL WARN lines; check layers 7-9 and the GPUs",
    "no_transport": "run with NCCL_DEBUG=INFO (nccl_validate_debug) so the transport can be checked",
    "wrong": "wrong results: check GPUDirect RDMA (ACS on PCIe switches, layer 3), GPU health (dcgmi diag) "
             "and rerun",
    "error": "wrong results: check GPUDirect RDMA (ACS on PCIe switches, layer 3), GPU health and rerun",
    "out_of_bounds": "wrong results: check GPU health (dcgmi diag) and rerun",
    "avg_failed": "unset NCCL_TESTS_MIN_BW or read the busbw of the largest size",
    "below": "a lossy or slow path: check PFC/ECN/DSCP on switch ports and hosts (layers 7-8; a lossy path "
             "delivers well under line rate), that NCCL_IB_HCA covers every rail, and layer 9's pairwise figures",
    "no_gdr": "the node's GPUs are not reached by its NICs: layer 5 names its GPUDirect RDMA mode or why it has "
              "none (the closed GPU kernel module on an inbox RDMA core, nvidia_peermem not loaded; "
              "site.yml --tags layer05 loads it where it is the way); then check NCCL_NET_GDR_LEVEL and the PCIe "
              "path between each GPU and its NIC",
    "exit_code": "read the launcher's output; the MPI job failed after the test finished",
    "no_output": "mpirun or all_reduce_perf could not start: check nccl_validate_mpirun/binary, "
                 "SSH between the nodes and the host names in the job",
    "problem": "fix what the evidence names (lower layers), then rerun layer 15",
}

PEER_SOCKET_REMEDIATION = ("this node's ranks used NET/IB: fix the NCCL transport on %s (its layer 15 verdict "
                           "names the cause: no usable RDMA device in NCCL_IB_HCA, NCCL_IB_DISABLE or no RoCE v2 "
                           "GID there; layers 5-6 and show_gids), then rerun layer 15")


def reads(intent, host):
    return {"fabric": "an all_reduce_perf run over the nodes (hosts mode), or the last recorded run "
                      "(roles/nccl_validate/tasks/doctor.yml)"}


def _env_line(env):
    return "NCCL env: " + " ".join("%s=%s" % kv for kv in env.items())


def run_verdict(host, run_plan, gate=None):
    """The layer 15 record of ``host`` from a plan (nccl_validate.plan())
    and the gate of the run (nccl_validate.gate_output()), or from the plan
    alone when it has problems or nothing to run.

    Nodes the log does not name (a log without NCCL_DEBUG=INFO prefixes,
    pods named differently) fail with the gate's reason."""
    name_ev = list(run_plan.get("evidence") or [])
    nodes = run_plan.get("hosts") or []
    if run_plan.get("skip"):
        return result(LAYER, "skipped", run_plan["skip"], ["nodes in the run: %s" % (", ".join(nodes) or "none")])
    if run_plan.get("problems"):
        return result(LAYER, "fail", run_plan["problems"][0], run_plan["problems"] + name_ev, REMEDIATION["problem"])
    if gate is None:
        return result(LAYER, "skipped", "no NCCL run recorded", [], RERUN)
    ev = ["nodes: %s (%s ranks)" % (", ".join(nodes), run_plan.get("np")), _env_line(run_plan.get("env") or {})]
    if gate.get("largest_size") is not None:
        ev.append("largest size %d B: busbw out-of-place %s, in-place %s GB/s" % (
            gate["largest_size"], gate.get("busbw_oop"), gate.get("busbw_ip")))
    if gate.get("threshold") is not None:
        ev.append("gate %.2f GB/s = %.2f x %.2f GB/s expected" % (
            gate["threshold"], gate.get("efficiency", 0), gate.get("expected_busbw_gbs") or 0))
    ev += name_ev
    if (run_plan.get("rail_order") or {}).get(host):
        ev.append(run_plan["rail_order"][host])
    parsed = gate.get("parsed") or {}
    # which network this node's ranks and the others' used (NCCL_DEBUG prefixes)
    by_host = parsed.get("transports_by_host") or {}
    logged = log_host(host, run_plan, by_host)
    own, peers = socket_hosts(host, run_plan, by_host)
    if parsed:
        if parsed.get("avg_busbw") is not None:
            ev.append("# Avg bus bandwidth %s GB/s (mean over every size; not gated)" % parsed["avg_busbw"])
        seen = by_host.get(logged) if logged else None
        if seen:
            ev.append("%s: NCCL transport %s" % (host, "/".join("NET/" + t for t in seen)))
        if own is False and peers and gate.get("kind") == "socket":
            for p in peers:
                pk = log_host(p, run_plan, by_host) or p
                ev.append("%s: NCCL transport %s" % (p, "/".join("NET/" + t for t in by_host.get(pk) or [])))
        key = logged or host
        mine = (parsed.get("net_lines_by_host") or {}).get(key) or \
            [ln for ln in parsed.get("net_lines") or [] if ln.startswith(key + ":")]
        ev += (mine or parsed.get("net_lines") or [])[:4]
        # what each of this node's ranks sent over, and whether the NIC reached the GPU's memory
        for r in [r for r in parsed.get("rails") or [] if logged and r.get("host") == logged][:8]:
            how = "GPUDirect RDMA" if r["gdr"] else "through host memory (no /GDRDMA)"
            ev.append("rank %d GPU %s: %s: %s" % (r["rank"], r["gpu"], perf_parsers.rail_text(r), how))
        # the node's own warnings and failures when the log has some
        warns = parsed.get("nccl_warnings") or []
        ev += ["NCCL WARN " + w for w in ([w for w in warns if w.startswith(key + ": ")] or warns)[:4]]
        fails = parsed.get("test_failures") or []
        ev += ([t for t in fails if t.startswith((key + ": ", ".. %s pid " % key))] or fails)[:2]
    ev += ["output: " + ln for ln in gate.get("output_tail") or []]
    if gate.get("passed"):
        return result(LAYER, "pass", gate["reason"], ev)
    if gate.get("kind") == "socket" and own is not None:
        if own:
            return result(LAYER, "fail", perf_parsers.SOCKET_REASON, ev, REMEDIATION["socket"])
        if peers:
            names = ", ".join(peers)
            return result(LAYER, "warn", "all_reduce_perf with %s failed: %s used NET/Socket" % (names, names), ev,
                          PEER_SOCKET_REMEDIATION % names)
    if gate.get("kind") == "no_gdr" and logged:
        mine = [r for r in gate.get("no_gdr") or [] if r.get("host") == logged]
        if mine:
            r = mine[0]
            return result(LAYER, "fail", "GPUDirect RDMA not used on %s: rank %d (GPU %s) over %s went through "
                                         "host memory" % (host, r["rank"], r["gpu"], perf_parsers.rail_text(r)),
                          ev, REMEDIATION["no_gdr"])
        others = sorted({r["host"] for r in gate.get("no_gdr") or [] if r.get("host")})
        if others:
            return result(LAYER, "warn", "all_reduce_perf with %s failed: GPUDirect RDMA not used on %s"
                          % (", ".join(others), ", ".join(others)), ev,
                          "this node's ranks used GPUDirect RDMA: fix %s (its layer 5 and 15 verdicts name the "
                          "cause), then rerun layer 15" % ", ".join(others))
    return result(LAYER, "fail", gate["reason"], ev, REMEDIATION.get(gate.get("kind"), REMEDIATION["problem"]))


def check(reading, intent, host):
    gpus = intent.get("nccl_validate_gpus_per_node")
    if gpus is not None and str(gpus).strip() == "0":
        # a storage or VM node has no all-reduce to gate
        return result(LAYER, "skipped", "not applicable: %s has no GPUs (nccl_validate_gpus_per_node 0)" % host,
                      ["nccl_validate_gpus_per_node=%s (gpu_count)" % gpus], "none; layer 15 runs on GPU nodes")
    run, path = reading.get("run"), reading.get("file")
    if run is None:
        if not path:
            raise ValueError("%s: layer 15's reading has neither a run nor the file of the last run, got %r"
                             % (host, reading))
        return result(LAYER, "skipped", "rendered only (gpufabric_render_dir)" if reading.get("mode") == "render"
                      else "no NCCL run recorded", ["%s does not exist" % path], RERUN)
    plan = run.get("plan") if isinstance(run, dict) else None
    if not isinstance(plan, dict):
        raise ValueError("%s: layer 15's run has no plan (%s), got %r" % (host, path or "this play's run", run))
    nodes = plan.get("hosts") or []
    if host not in nodes:
        which = "last" if path else "play's"
        return result(LAYER, "skipped", "not in the %s NCCL run (%s)" % (which, ", ".join(nodes)),
                      [path] if path else ["nodes in the run: %s" % (", ".join(nodes) or "none")], RERUN)
    return run_verdict(host, plan, run.get("gate"))
