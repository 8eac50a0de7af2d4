"""Regenerate docs/performance.md and docs/performance.png from the newest
bench/results/*.json (or the file given).

    python bench/report.py [bench/results/<date>.json]

The prose lives in bench/performance.md.tmpl; the tables, the targets and the
plot come from the results.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(REPO))
    from bench import stats  # noqa: E402
else:
    from . import stats

RESULTS = REPO / "bench" / "results"
TEMPLATE = REPO / "bench" / "performance.md.tmpl"
DOC = REPO / "docs" / "performance.md"
PLOT = REPO / "docs" / "performance.png"
PLOTTED = ("ping", "converge_first", "rerun", "validate", "roce_switch")


def newest(results_dir: Path = RESULTS) -> Path:
    files = sorted(p for p in results_dir.glob("*.json"))
    if not files:
        raise SystemExit(f"no results in {results_dir}; run 'make bench' first")
    return files[-1]


def plot(results: dict, path: Path) -> bool:
    """Median time and ratio to ping against node count. False when
    matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sizes = sorted(int(s) for s in results.get("sizes") or {})
    fig, (ax_t, ax_r) = plt.subplots(1, 2, figsize=(11, 4.2))
    colors = dict(zip(PLOTTED, ("tab:grey", "tab:blue", "tab:orange", "tab:green", "tab:purple")))
    series = [(name, name, lambda size, n=name: size["measurements"].get(n), "-") for name in PLOTTED]
    series += [(f"mitogen:{name}", name, lambda size, n=name: (size.get("mitogen") or {}).get(n), "--")
               for name in ("rerun", "validate")]
    for key, name, get, style in series:
        xs, ys, lo, hi, rs = [], [], [], [], []
        for s in sizes:
            m = get(results["sizes"][str(s)])
            if not m or m.get("median") is None or m.get("failed_runs"):
                continue
            xs.append(s)
            ys.append(m["median"])
            lo.append(m["median"] - (m.get("min") or m["median"]))
            hi.append((m.get("max") or m["median"]) - m["median"])
            rs.append(m.get("ratio"))
        if not xs:
            continue
        label = stats.SHORT[name] + (" (mitogen)" if key.startswith("mitogen:") else "")
        ax_t.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, ls=style, color=colors[name], label=label)
        if name != "ping":
            ax_r.plot(xs, rs, marker="o", ls=style, color=colors[name], label=label)
    ax_t.set_xlabel("GPU nodes (leaf switches: 2, 4, 8 at 8, 32, 64 nodes)")
    ax_t.set_ylabel("wall time, median of the runs (s)")
    ax_t.set_yscale("log")
    ax_t.set_xticks(sizes)
    ax_t.grid(True, which="both", alpha=0.3)
    ax_t.legend(fontsize=8)
    ax_r.set_xlabel("GPU nodes")
    ax_r.set_ylabel("x ping of the same run")
    ax_r.set_xticks(sizes)
    ax_r.axhline(12, color="grey", ls="--", lw=0.8)
    ax_r.axhline(6, color="grey", ls=":", lw=0.8)
    ax_r.text(sizes[0], 12, " re-run target 12x", va="bottom", fontsize=7, color="grey")
    ax_r.text(sizes[0], 6, " validate target 6x", va="bottom", fontsize=7, color="grey")
    ax_r.grid(True, alpha=0.3)
    ax_r.legend(fontsize=8)
    fig.suptitle(f"gpufabric.stack on the rack twin, {results.get('date')}, forks "
                 f"{(results.get('settings') or {}).get('forks')}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _load(v):
    return "-" if not v else ", ".join(f"{x:.1f}" for x in v)


def sizes_section(results: dict) -> str:
    out = []
    for key in sorted(results.get("sizes") or {}, key=int):
        size = results["sizes"][key]
        out.append(f"### {size['nodes']} nodes, {size['switches']} switches\n")
        sv = size.get("versions") or results.get("versions") or {}
        out.append(f"Collection {sv.get('collection', '?')} at {sv.get('git_commit', '?')}"
                   + (" (working tree with changes)" if sv.get("git_dirty") else "") + ". "
                   f"Measured from {size.get('started', '?')}; load average (1, 5, 15 min) "
                   f"{_load(size.get('loadavg_start'))} at the start, {_load(size.get('loadavg_end'))} at the end; "
                   f"the rack came up in {size.get('lab_up_seconds', '?')} s.\n")
        if size.get("warning"):
            out.append(f"**Warning:** {size['warning']}.\n")
        out.append(stats.size_table(size) + "\n")
        for name, m in (size.get("measurements") or {}).items():
            if m.get("warning"):
                out.append(f"**Warning ({stats.SHORT[name]}):** {m['warning']}.\n")
        rerun = size["measurements"].get("rerun") or {}
        groups = ((rerun.get("module_executions") or {}).get("by_group") or {})
        if groups:
            parts = [f"{g}: {v['min']}-{v['max']}" if v.get("min") != v.get("max") else f"{g}: {v.get('max')}"
                     for g, v in groups.items() if v.get("max") is not None]
            out.append(f"Module executions per host in the re-run, by group: {'; '.join(parts)} "
                       f"(of them delegated to the controller, at most {(rerun['module_executions'] or {}).get('delegated_max')}).\n")
        for name in ("rerun", "validate"):
            by_role = (((size["measurements"].get(name) or {}).get("module_executions") or {}).get("by_role") or {})
            if by_role:
                out.append(f"Module executions per host and role, {stats.SHORT[name]} (most on any host): "
                           + ", ".join(f"{r} {n}" for r, n in by_role.items()) + ".\n")
        sw = (size["measurements"].get("roce_switch") or {}).get("switches") or {}
        if sw:
            out.append("roce_switch no-change run, per switch (most over the runs): "
                       + "; ".join(f"{h}: {v['commands_max']} configuration commands, {v['show_commands_max']} show commands"
                                   for h, v in sorted(sw.items())) + ".\n")
        if size.get("validate_layers"):
            out.append(f"validate.yml checked layers {', '.join(map(str, size['validate_layers']))}; verdicts "
                       f"{size.get('validate_verdicts')}.\n")
    return "\n".join(out)


def targets_section(results: dict) -> str:
    targets = stats.evaluate_targets(results)
    lines = [stats.targets_table(targets), ""]
    missed = [t for t in targets if t["met"] is False]
    unmeasured = [t for t in targets if t["met"] is None]
    if missed:
        lines.append("**Not met:** " + "; ".join(f"{t['target']} (measured {t['value']})" for t in missed) + ".")
    else:
        lines.append("Every measured target is met.")
    if unmeasured:
        lines.append("")
        lines.append("**Not measured in these results:** " + "; ".join(
            f"{t['target']}{' (' + t['detail'] + ')' if t['detail'] else ''}" for t in unmeasured) + ".")
    return "\n".join(lines)


def where_section(results: dict) -> str:
    """Per-role time and the most expensive tasks of the smallest rack's re-run."""
    sizes = sorted(results.get("sizes") or {}, key=int)
    out = []
    for key in sizes[:1]:
        for name in ("rerun", "validate"):
            m = results["sizes"][key]["measurements"].get(name) or {}
            if not m.get("top_tasks"):
                continue
            roles = m.get("role_seconds") or {}
            out.append(f"**{stats.SHORT[name]}, {key} nodes** (median {m['median']:.1f} s). Seconds per role: "
                       + ", ".join(f"{r} {s:.1f}" for r, s in sorted(roles.items(), key=lambda kv: -kv[1])) + ".\n")
            out.append("| task | role | action | s |\n|---|---|---|---:|")
            for t in m["top_tasks"][:12]:
                out.append(f"| {t['name']} | {t['role'] or '-'} | {t['action']} | {t['seconds']:.1f} |")
            out.append("")
    return "\n".join(out) if out else "(no per-task times in these results)"


def mitogen_section(results: dict) -> str:
    out = []
    for key in sorted(results.get("sizes") or {}, key=int):
        mg = results["sizes"][key].get("mitogen")
        if not mg:
            continue
        base = results["sizes"][key]["measurements"]
        line = f"- {key} nodes, mitogen {mg.get('version')}: "
        parts = []
        for name in ("rerun", "validate"):
            m = mg.get(name)
            if not m:
                continue
            b = base.get(name) or {}
            if m.get("failed_runs"):
                parts.append(f"{stats.SHORT[name]} failed ({m['failed_runs']} of {len(m.get('runs') or [])} runs)")
            elif m.get("median") is not None and b.get("median"):
                parts.append(f"{stats.SHORT[name]} {m['median']:.1f} s against {b['median']:.1f} s with the linear "
                             f"strategy ({m['median'] / b['median']:.2f}x), changed {m.get('changed')}")
        if mg.get("error"):
            parts.append(mg["error"])
        out.append(line + "; ".join(parts) + ".")
        tail = next((mg[n].get("error_tail") for n in ("rerun", "validate") if (mg.get(n) or {}).get("error_tail")), None)
        if tail:
            out.append("\n  Last lines of its log:\n\n  ```\n" + "\n".join("  " + ln for ln in tail[-8:]) + "\n  ```")
    return "\n".join(out) if out else "(these results have no mitogen runs; `make bench MITOGEN=1` adds them)"


def versions_line(results: dict) -> str:
    """The tool versions of the newest run, and the collection's commit, or
    each size's when sizes kept from earlier runs measured other commits."""
    v = results.get("versions") or {}
    line = ", ".join(f"{k} {v[k]}" for k in ("ansible_core", "ansible", "python", "podman", "mitogen", "collection")
                     if v.get(k))
    commits = {key: (size.get("versions") or v).get("git_commit") for key, size in (results.get("sizes") or {}).items()}
    if len(set(commits.values())) > 1:
        return line + "; the sizes measured different commits of the collection: " + ", ".join(
            f"{key} nodes at {commits[key]}" for key in sorted(commits, key=int))
    if v.get("git_commit"):
        line = ", ".join(p for p in (line, f"git_commit {v['git_commit']}") if p)
    return line + (" (working tree with changes)" if v.get("git_dirty") else "")


def runs_phrase(results: dict) -> str:
    """How many runs each median is of: "3 runs", or, when sizes kept from
    earlier runs had another count, "3 runs (64 nodes: 1)"."""
    counts = {key: len(((size.get("measurements") or {}).get("ping") or {}).get("runs") or [])
              for key, size in (results.get("sizes") or {}).items()}
    counts = {key: n for key, n in counts.items() if n}
    if len(set(counts.values())) <= 1:
        n = next(iter(counts.values()), (results.get("settings") or {}).get("runs"))
        return f"{n} run{'' if n == 1 else 's'}"
    values = list(counts.values())
    common = max(set(values), key=lambda n: (values.count(n), n))
    others = ", ".join(f"{key} nodes: {n}" for key, n in sorted(counts.items(), key=lambda kv: int(kv[0]))
                       if n != common)
    return f"{common} run{'' if common == 1 else 's'} ({others})"


def render(results: dict, source: str, plotted: bool) -> str:
    m, v = results.get("machine") or {}, results.get("versions") or {}
    layers = results.get("layers") or {}
    tmpl = string.Template(TEMPLATE.read_text())
    return tmpl.substitute(
        source=source,
        date=results.get("date"),
        machine=f"{m.get('nproc')} CPUs, {m.get('mem_total_mb')} MB, kernel {m.get('kernel')}; load average "
                f"{_load(m.get('loadavg_start'))} at the start, {_load(m.get('loadavg_end'))} at the end",
        versions=versions_line(results),
        forks=(results.get("settings") or {}).get("forks"),
        runs=runs_phrase(results),
        site_layers=", ".join(map(str, layers.get("site.yml") or [])) or "none",
        validate_layers=", ".join(map(str, sorted({n for s in (results.get("sizes") or {}).values()
                                                   for n in s.get("validate_layers") or []}))) or "unknown",
        sizes=sizes_section(results),
        plot="![median wall time and ratio to ping against node count](performance.png)" if plotted
             else "(no plot: matplotlib is not installed; `pip install -r requirements-bench.txt`)",
        targets=targets_section(results),
        where=where_section(results),
        mitogen=mitogen_section(results),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?", type=Path, help="results file (default: the newest in bench/results)")
    ap.add_argument("--doc", type=Path, default=DOC)
    ap.add_argument("--plot", type=Path, default=PLOT)
    args = ap.parse_args(argv)
    path = args.results or newest()
    results = json.loads(path.read_text())
    plotted = plot(results, args.plot)
    try:
        source = str(path.resolve().relative_to(REPO))
    except ValueError:
        source = str(path)
    args.doc.write_text(render(results, source, plotted))
    print(f"wrote {args.doc}" + (f" and {args.plot}" if plotted else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
