"""The arithmetic of the benchmark, without Ansible or a twin: medians,
ratios to ping, per-host counts from the task_counter callback, the targets
of the benchmark and the tables of docs/performance.md.

A results document (bench/results/<date>.json) looks like::

    {"date": "...", "machine": {...}, "versions": {...}, "settings": {...},
     "layers": {"requested": [1..9], "site": [...], "validate": [...]},
     "sizes": {"8": {"nodes": 8, "switches": 2,
                     "measurements": {"ping": {"runs": [{"seconds": ..}, ..],
                                               "median": .., "ratio": 1.0, ..},
                                      "converge_first": {..}, "rerun": {..},
                                      "validate": {..}, "roce_switch": {..}}}}}
"""

from __future__ import annotations

import re

# What each measurement runs; the order is the order of the tables.
MEASUREMENTS = {
    "ping": "ansible all -m ping (one round trip per host: the floor)",
    "converge_first": "first converge of layers 1-9 (site.yml --tags layer01..layer09)",
    "rerun": "no-change re-run of layers 1-9",
    "validate": "validate.yml, every layer it has",
    "roce_switch": "no-change roce_switch run over all switches (site.yml --tags layer07)",
}
SHORT = {"ping": "ping", "converge_first": "first converge", "rerun": "no-change re-run",
         "validate": "validate", "roce_switch": "roce_switch no-change"}

# Switches per rack size: a 32-port leaf per 16 nodes and rail, two at least.
SWITCHES = {8: 2, 32: 4, 64: 8}

REQUESTED_LAYERS = list(range(1, 10))


def switches_for(nodes: int) -> int:
    if nodes in SWITCHES:
        return SWITCHES[nodes]
    n = max(2, -(-nodes // 8))
    return n + (n % 2)


def site_tags(layers=REQUESTED_LAYERS) -> str:
    return ",".join(f"layer{n:02d}" for n in layers)


def median(values):
    """Median of the numbers in values (None entries ignored); None if empty."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    mid = len(xs) // 2
    return float(xs[mid]) if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def ratio(value, base):
    if value is None or not base:
        return None
    return value / base


def summarise(runs: list[dict]) -> dict:
    """Median and spread of the runs' wall times and peak memory."""
    secs = [r.get("seconds") for r in runs]
    secs_ok = [s for s in secs if s is not None]
    return {
        "median": median(secs),
        "min": min(secs_ok) if secs_ok else None,
        "max": max(secs_ok) if secs_ok else None,
        "peak_pss_mb": median(r.get("peak_pss_mb") for r in runs),
        "peak_pss_mb_max": max((r["peak_pss_mb"] for r in runs if r.get("peak_pss_mb") is not None), default=None),
        "peak_rss_mb": median(r.get("peak_rss_mb") for r in runs),
        "main_hwm_mb": median(r.get("main_hwm_mb") for r in runs),
        "failed_runs": sum(1 for r in runs if r.get("rc") not in (0, None)),
        # user+system CPU seconds of the ansible process tree (None in results older than the field)
        "cpu_s": median(r.get("cpu_s") for r in runs),
        # what the runs' rest of the machine spent: the twin rack (nodes, BMCs,
        # switches), busy CPU of the whole machine less the ansible tree's
        "rack_cpu_s": median(max(0.0, round(r["machine_cpu_s"] - r["cpu_s"], 3)) for r in runs
                             if r.get("machine_cpu_s") is not None and r.get("cpu_s") is not None),
    }


def add_ratios(measurements: dict) -> dict:
    """Each measurement's median as a ratio to the same size's ping median."""
    base = (measurements.get("ping") or {}).get("median")
    for m in measurements.values():
        m["ratio"] = ratio(m.get("median"), base)
    return measurements


def add_cpu_per_node(measurements: dict, nodes: int) -> dict:
    """Each measurement's median CPU seconds per GPU node of the rack: what a
    controller spends per node it manages (the switches ride along), and
    what the rest of the machine, the twin rack, spent meanwhile."""
    for m in measurements.values():
        for key in ("cpu_s", "rack_cpu_s"):
            cpu = m.get(key)
            m[key + "_per_node"] = None if cpu is None or not nodes else round(cpu / nodes, 3)
    return measurements


# ---------------------------------------------------------------- callback output
def host_counts(counter: dict, hosts=None) -> dict:
    """Module executions per host from one task_counter document, for the
    given hosts (all when None): {max, min, mean, per_host}."""
    per = {h: v.get("module_executions", 0) for h, v in (counter.get("hosts") or {}).items()
           if hosts is None or h in hosts}
    if not per:
        return {"max": None, "min": None, "mean": None, "per_host": {}}
    vals = list(per.values())
    return {"max": max(vals), "min": min(vals), "mean": round(sum(vals) / len(vals), 2), "per_host": per}


def modules_by_role(counter: dict, hosts=None) -> dict:
    """Module executions per role: the most on any of the given hosts."""
    out: dict[str, int] = {}
    for h, v in (counter.get("hosts") or {}).items():
        if hosts is not None and h not in hosts:
            continue
        for role, n in (v.get("by_role") or {}).items():
            out[role] = max(out.get(role, 0), n)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def changed_total(counter: dict) -> int:
    """Changed results of a run, from the recap the callback copied."""
    return sum(v.get("changed", 0) for v in (counter.get("recap") or {}).values())


def failures_total(counter: dict) -> int:
    return sum(v.get("failures", 0) + v.get("unreachable", 0) for v in (counter.get("recap") or {}).values())


def switch_sessions(counter: dict) -> dict:
    """Per switch: configuration commands sent and show commands used, summed
    over the roce_switch results of one run."""
    out = {}
    for host, records in (counter.get("roce_switch") or {}).items():
        out[host] = {"commands": sum(r.get("commands") or 0 for r in records),
                     "show_commands": sum(r.get("show_commands") or 0 for r in records),
                     "sessions": len(records),
                     "command_lines": [c for r in records for c in r.get("command_lines") or []]}
    return out


def task_times(counters: list[dict], top: int = 15) -> list[dict]:
    """The most expensive tasks of several runs of one playbook: per task
    (role, name, file:line), the median of its wall time over the runs."""
    acc: dict[tuple, dict] = {}
    for counter in counters:
        seen: dict[tuple, float] = {}
        for t in counter.get("tasks") or []:
            key = (t.get("role"), t.get("name"), t.get("path"))
            seen[key] = seen.get(key, 0.0) + (t.get("seconds") or 0.0)
            acc.setdefault(key, {"role": t.get("role"), "name": t.get("name"), "path": t.get("path"),
                                 "action": t.get("action"), "samples": []})
        for key, secs in seen.items():
            acc[key]["samples"].append(secs)
    rows = []
    for v in acc.values():
        rows.append({"role": v["role"], "name": v["name"], "path": v["path"], "action": v["action"],
                     "seconds": round(median(v["samples"]), 3)})
    rows.sort(key=lambda r: -r["seconds"])
    return rows[:top]


def role_times(counters: list[dict]) -> dict:
    """Median over runs of the wall time spent in each role's tasks."""
    per_run = []
    for counter in counters:
        acc: dict[str, float] = {}
        for t in counter.get("tasks") or []:
            role = t.get("role") or "(play)"
            acc[role] = acc.get(role, 0.0) + (t.get("seconds") or 0.0)
        per_run.append(acc)
    roles = sorted({r for run in per_run for r in run})
    return {r: round(median(run.get(r) for run in per_run), 3) for r in roles}


# ---------------------------------------------------------------- layers
_LAYER_TAG = re.compile(r"\blayer(\d{2})\b")


def layers_from_tags(list_tags_output: str) -> list[int]:
    """Layer numbers of the layerNN tags in `ansible-playbook --list-tags` output."""
    return sorted({int(m) for m in _LAYER_TAG.findall(list_tags_output)})


def layers_from_report(report: dict) -> list[int]:
    """Layer numbers the doctor reported on (reports/report.json)."""
    layers = set()
    for host in (report or {}).values():
        for layer in host.get("layers") or []:
            try:
                layers.add(int(layer.get("layer")))
            except (TypeError, ValueError):
                pass
    return sorted(layers)


def verdicts_from_report(report: dict) -> dict:
    """How many hosts the doctor found in each verdict status."""
    out: dict[str, int] = {}
    for host in (report or {}).values():
        status = (host.get("verdict") or {}).get("status", "unknown")
        out[status] = out.get(status, 0) + 1
    return out


# ---------------------------------------------------------------- targets
# (id, description); checked by evaluate_targets.
TARGETS = [
    ("rerun_ratio_32", "no-change re-run of layers 1-9 on 32 nodes <= 8x ping"),
    ("rerun_changed_0", "no-change re-run reports changed=0 (every size, every run)"),
    ("rerun_modules_12", "no-change re-run: <= 12 module executions per host, fact gathering included"),
    ("rerun_cpu_32", "no-change re-run on 32 nodes: <= 4 controller CPU-s per GPU node"),
    ("validate_ratio_32", "validate.yml on 32 nodes <= 3x ping"),
    ("validate_changed_0", "validate.yml reports changed=0 (every size, every run)"),
    ("validate_cpu_32", "validate.yml on 32 nodes: <= 2 controller CPU-s per GPU node"),
    ("roce_switch_no_commands", "no-change roce_switch run sends zero configuration commands"),
    ("roce_switch_shows_2", "no-change roce_switch run uses <= 2 show commands per switch"),
    ("scaling_rerun", "no-change re-run: time(64 nodes) / time(8 nodes) <= 3 with forks 32"),
    ("scaling_validate", "validate.yml: time(64 nodes) / time(8 nodes) <= 3 with forks 32"),
]


def _m(results: dict, size: int, name: str) -> dict | None:
    return ((results.get("sizes") or {}).get(str(size)) or {}).get("measurements", {}).get(name)


def _target(tid, text, value, limit, met, detail=""):
    return {"id": tid, "target": text, "value": value, "limit": limit, "met": met, "detail": detail}


def evaluate_targets(results: dict) -> list[dict]:
    """Every target with the measured value and met: True, False or None
    (not measured: the size or the measurement is missing)."""
    text = dict(TARGETS)
    sizes = sorted(int(s) for s in (results.get("sizes") or {}))
    out = []

    def ratio_target(tid, name, size, limit):
        m = _m(results, size, name)
        r = m.get("ratio") if m else None
        out.append(_target(tid, text[tid], None if r is None else round(r, 2), limit,
                           None if r is None else r <= limit,
                           "" if m else f"{size} nodes not measured"))

    def cpu_target(tid, name, size, limit):
        m = _m(results, size, name)
        v = m.get("cpu_s_per_node") if m else None
        out.append(_target(tid, text[tid], None if v is None else round(v, 2), limit,
                           None if v is None else v <= limit,
                           "" if v is not None else (f"{size} nodes not measured" if not m else "no CPU figure")))

    def changed_target(tid, name):
        changed = []
        for s in sizes:
            m = _m(results, s, name)
            if m and m.get("changed") is not None:
                changed.extend((s, c) for c in m["changed"])
        bad = [f"{c} changed on {s} nodes" for s, c in changed if c]
        out.append(_target(tid, text[tid], max((c for _, c in changed), default=None), 0,
                           None if not changed else not bad, "; ".join(bad)))

    ratio_target("rerun_ratio_32", "rerun", 32, 8)
    changed_target("rerun_changed_0", "rerun")

    mods = []
    for s in sizes:
        m = _m(results, s, "rerun")
        mx = ((m or {}).get("module_executions") or {}).get("max")
        if mx is not None:
            mods.append((s, mx))
    out.append(_target("rerun_modules_12", text["rerun_modules_12"], max((v for _, v in mods), default=None), 12,
                       None if not mods else all(v <= 12 for _, v in mods),
                       ", ".join(f"{v} on {s} nodes" for s, v in mods)))

    cpu_target("rerun_cpu_32", "rerun", 32, 4)
    ratio_target("validate_ratio_32", "validate", 32, 3)
    changed_target("validate_changed_0", "validate")
    cpu_target("validate_cpu_32", "validate", 32, 2)

    cmds, shows = [], []
    for s in sizes:
        m = _m(results, s, "roce_switch")
        for sw in ((m or {}).get("switches") or {}).values():
            cmds.append(sw.get("commands_max", sw.get("commands")))
            shows.append(sw.get("show_commands_max", sw.get("show_commands")))
    cmds = [c for c in cmds if c is not None]
    shows = [c for c in shows if c is not None]
    out.append(_target("roce_switch_no_commands", text["roce_switch_no_commands"], max(cmds, default=None), 0,
                       None if not cmds else max(cmds) == 0))
    out.append(_target("roce_switch_shows_2", text["roce_switch_shows_2"], max(shows, default=None), 2,
                       None if not shows else max(shows) <= 2))

    for tid, name in (("scaling_rerun", "rerun"), ("scaling_validate", "validate")):
        small, large = _m(results, 8, name), _m(results, 64, name)
        if small and large and small.get("median") and large.get("median") is not None:
            r = large["median"] / small["median"]
            # the floor scales too: the same quotient for ping says how much of r is the machine
            p8, p64 = _m(results, 8, "ping"), _m(results, 64, "ping")
            floor = (f"ping itself {p64['median'] / p8['median']:.2f}"
                     if p8 and p64 and p8.get("median") and p64.get("median") is not None else "")
            out.append(_target(tid, text[tid], round(r, 2), 3, r <= 3, floor))
        else:
            out.append(_target(tid, text[tid], None, 3, None, "needs the 8- and 64-node sizes"))
    return out


# ---------------------------------------------------------------- tables
def _fmt(v, spec="{:.1f}", none="-"):
    return none if v is None else spec.format(v)


def size_table(size: dict) -> str:
    """Markdown table of one rack size."""
    rows = ["| measurement | runs | median s | min-max s | x ping | CPU-s / GPU node | rack CPU-s / GPU node "
            "| peak MB (PSS) | module executions / host | changed |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in MEASUREMENTS:
        m = (size.get("measurements") or {}).get(name)
        if not m:
            continue
        execs = (m.get("module_executions") or {})
        execs_s = "-" if execs.get("max") is None else (
            str(execs["max"]) if execs.get("min") == execs.get("max") else f"{execs['min']}-{execs['max']}")
        changed = m.get("changed")
        changed_s = "-" if changed is None else ",".join(str(c) for c in changed)
        spread = "-" if m.get("min") is None else f"{m['min']:.1f}-{m['max']:.1f}"
        failed = f" ({m['failed_runs']} failed)" if m.get("failed_runs") else ""
        rows.append(f"| {SHORT[name]} | {len(m.get('runs') or [])}{failed} | {_fmt(m.get('median'))} | {spread} | "
                    f"{_fmt(m.get('ratio'), '{:.2f}')} | {_fmt(m.get('cpu_s_per_node'), '{:.2f}')} | "
                    f"{_fmt(m.get('rack_cpu_s_per_node'), '{:.2f}')} | "
                    f"{_fmt(m.get('peak_pss_mb'), '{:.0f}')} | {execs_s} | {changed_s} |")
    return "\n".join(rows)


def targets_table(targets: list[dict]) -> str:
    rows = ["| target | measured | limit | met |", "|---|---:|---:|---|"]
    for t in targets:
        met = {True: "yes", False: "**NO**", None: "not measured"}[t["met"]]
        detail = f" ({t['detail']})" if t.get("detail") else ""
        rows.append(f"| {t['target']} | {_fmt(t['value'], '{}')} | {t['limit']} | {met}{detail} |")
    return "\n".join(rows)
