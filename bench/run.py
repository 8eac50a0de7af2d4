"""Measure the collection on twin racks of growing size.

    python -m bench.run [--sizes 8,32,64] [--runs 3] [--forks 32] [--mitogen]

For each size: bring up a twin rack (`python -m simlab up --name bench<N>`),
then measure, with forks 32:

- ping            `ansible all -m ping`, --runs times (the floor: one round trip per host)
- converge_first  `site.yml --tags layer01,...,layer09` once: only the first converge of
                  a fresh rack is a first converge
- rerun           the same command again, --runs times: nothing should change
- validate        `validate.yml` (every layer it has), --runs times
- roce_switch     `site.yml --tags layer07 --limit leaf_switches`, --runs times

Every run's wall time is time.monotonic() around the subprocess. Peak
controller memory is sampled every 0.2 s from /proc over the process tree of
the command (ansible-playbook, its forks, the modules they run on the
controller and the transport processes, here `podman exec`): the summed PSS
(shared pages divided among the processes sharing them; summed RSS counts the
Python interpreter once per fork) and, for reference, summed RSS and the main
process's VmHWM. The gpufabric.stack.task_counter callback counts module
executions per host and the roce_switch commands; ansible.posix.profile_tasks
writes per-task times into the logs.

The rack is always taken down at the end, also on errors and Ctrl-C. Results
go to bench/results/<date>.json (sizes measured again replace the same sizes
of an earlier file of that day; the other sizes stay, each with its own start
time and load average); logs and callback output to bench/scratch/.
"""

from __future__ import annotations

import argparse
import configparser
import datetime as dt
import hashlib
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(REPO))
    from bench import stats  # noqa: E402
else:
    from . import stats

RESULTS = REPO / "bench" / "results"
SCRATCH = REPO / "bench" / "scratch"
VENV_BIN = REPO / ".venv" / "bin"
PAGE = os.sysconf("SC_PAGE_SIZE")
# What the measured commands run: the snapshot of the collection taken at the
# start (see snapshot()), or the working tree itself with --live.
TREE = REPO
COLLECTIONS = REPO / ".build"
COLLECTION_PARTS = ("galaxy.yml", "meta", "plugins", "roles", "playbooks", "inventories", "ansible.cfg")


def log(msg: str) -> None:
    print(f"bench: {time.strftime('%H:%M:%S')} {msg}", flush=True)


# ---------------------------------------------------------------- process tree memory
def _children(pid: int) -> list[int]:
    out = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
    return out


def tree(root: int) -> list[int]:
    """root and all its descendants (from /proc/<pid>/task/<tid>/children)."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(_children(pid))
    return seen


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _field_kb(path: str, key: str) -> int:
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak memory of a process tree, sampled every `interval` seconds.

    Summed RSS is read at every sample (cheap); PSS (smaps_rollup, costlier)
    only when the RSS sum is within 10% of its peak so far, which is where
    the PSS peak is."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_rss = self.peak_pss = self.main_hwm = 0
        self.peak_procs = 0
        self._stop_evt = threading.Event()

    def sample(self) -> None:
        pids = tree(self.pid)
        self.peak_procs = max(self.peak_procs, len(pids))
        rss = sum(_rss(p) for p in pids)
        if rss >= 0.9 * self.peak_rss:
            pss = sum(_field_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids)
            self.peak_pss = max(self.peak_pss, pss)
        self.peak_rss = max(self.peak_rss, rss)
        self.main_hwm = max(self.main_hwm, _field_kb(f"/proc/{self.pid}/status", "VmHWM:"))

    def run(self) -> None:
        while not self._stop_evt.is_set():
            self.sample()
            self._stop_evt.wait(self.interval)

    def stop(self) -> dict:
        self._stop_evt.set()
        self.join(timeout=5)
        mb = 1024 * 1024
        return {"peak_pss_mb": round(self.peak_pss / mb, 1), "peak_rss_mb": round(self.peak_rss / mb, 1),
                "main_hwm_mb": round(self.main_hwm / mb, 1), "peak_procs": self.peak_procs}


# ---------------------------------------------------------------- the collection measured
def snapshot(dest: Path) -> tuple[Path, str]:
    """Copy the collection (roles, plugins, playbooks, ...) as it is now to
    dest/ansible_collections/gpufabric/stack, so that edits to the working
    tree during a benchmark of hours do not change what is measured halfway.
    Returns the copy and a SHA-256 over its files."""
    root = dest / "ansible_collections" / "gpufabric" / "stack"
    if dest.exists():
        shutil.rmtree(dest)
    root.mkdir(parents=True)
    for part in COLLECTION_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, root / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif src.exists():
            shutil.copy2(src, root / part)
    digest = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
    return root, digest.hexdigest()


# ---------------------------------------------------------------- running commands
EXAMPLE_CFG = REPO / "inventories" / "example" / "ansible.cfg"
# The settings of the example inventory's ansible.cfg ([defaults]) a run on a
# rack takes, as the environment variables that set them: the bench runs as a
# rack set up from the example does (its fact cache in the rack's directory).
FROM_EXAMPLE = {"fact_caching": "ANSIBLE_CACHE_PLUGIN", "fact_caching_timeout": "ANSIBLE_CACHE_PLUGIN_TIMEOUT",
                "inject_facts_as_vars": "ANSIBLE_INJECT_FACT_VARS", "run_vars_plugins": "ANSIBLE_RUN_VARS_PLUGINS"}


def example_settings(path: Path = EXAMPLE_CFG) -> dict:
    """FROM_EXAMPLE's settings as ``path`` sets them: {env var: value}."""
    cfg = configparser.ConfigParser(inline_comment_prefixes=("#",), interpolation=None)
    if not cfg.read(path):
        raise SystemExit(f"bench: cannot read {path}")
    return {env: cfg.get("defaults", key) for key, env in FROM_EXAMPLE.items() if cfg.has_option("defaults", key)}


def base_env(forks: int, facts_dir: Path) -> dict:
    env = dict(os.environ)
    env.update({
        "CONTAINERS_CONF": str(REPO / "simlab" / "containers.conf"),
        "ANSIBLE_CONFIG": str(TREE / "ansible.cfg"),
        # the twin's connection is the lab's, not the collection's: ansible.cfg names it
        # relative to itself, where the snapshot of the collection has no simlab/
        "ANSIBLE_CONNECTION_PLUGINS": str(REPO / "simlab" / "ansible_plugins" / "connection"),
        # every module through podman exec, as in every results file so far (the
        # connection's runc path costs the machine about 0.1 CPU-s less per module run,
        # ping's most of all, so the ratios would move with the transport, not the collection)
        "SIMLAB_EXEC": "podman",
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
        "PYTHONPATH": str(REPO),
        "PATH": f"{VENV_BIN}:{env.get('PATH', '')}",
        "ANSIBLE_FORKS": str(forks),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        # the fact cache's directory is the rack's own (the rest of its settings: example_settings)
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(facts_dir),
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_CALLBACKS_ENABLED": "gpufabric.stack.task_counter,ansible.posix.profile_tasks",
        "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "40",
    })
    env.update(example_settings())
    env.pop("GPUFABRIC_TASK_COUNTER_FILE", None)
    return env


def machine_busy_s(stat: str = "/proc/stat") -> float | None:
    """CPU seconds the whole machine has been busy since boot (all CPUs:
    /proc/stat's first line less idle and iowait), None where it cannot be read."""
    try:
        with open(stat) as f:
            fields = f.readline().split()
        ticks = [int(x) for x in fields[1:9]]
    except (OSError, ValueError):
        return None
    if fields[:1] != ["cpu"] or len(ticks) < 5:
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def run_measured(argv: list[str], env: dict, logfile: Path, counter: Path | None = None,
                 timeout: float = 6 * 3600) -> dict:
    """Run one command; wall time, peak memory, rc, load average, callback output."""
    env = dict(env)
    if counter is not None:
        env["GPUFABRIC_TASK_COUNTER_FILE"] = str(counter)
        if counter.exists():
            counter.unlink()
    load = os.getloadavg()
    # CPU of the command's process tree: what the finished, waited-for
    # processes under it used (a daemon it leaves behind, such as an SSH
    # ControlPersist master, is not counted); one command runs at a time
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # and what the whole machine spent meanwhile: the rest is the twin rack's
    # nodes, BMCs and switches (and whatever else ran)
    busy0 = machine_busy_s()
    with open(logfile, "w") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=str(REPO), env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        try:
            rc = proc.wait(timeout=timeout)
        except BaseException:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            sampler.stop()
            raise
        seconds = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy1 = machine_busy_s()
    rec = {"seconds": round(seconds, 3), "rc": rc, "loadavg": [round(x, 2) for x in load],
           "cpu_user_s": round(cpu1.ru_utime - cpu0.ru_utime, 3), "cpu_system_s": round(cpu1.ru_stime - cpu0.ru_stime, 3),
           "log": str(logfile.relative_to(REPO))}
    rec["cpu_s"] = round(rec["cpu_user_s"] + rec["cpu_system_s"], 3)
    if busy0 is not None and busy1 is not None:
        rec["machine_cpu_s"] = round(busy1 - busy0, 3)
    rec.update(sampler.stop())
    if counter is not None and counter.exists():
        doc = json.loads(counter.read_text())
        rec["counter"] = str(counter.relative_to(REPO))
        rec["_counter"] = doc
        rec["changed"] = stats.changed_total(doc)
        rec["failures"] = stats.failures_total(doc)
    return rec


def playbook(inv: Path, name: str, *extra: str) -> list[str]:
    return [str(VENV_BIN / "ansible-playbook"), "-i", str(inv / "hosts.yml"), str(TREE / "playbooks" / name), *extra]


# ---------------------------------------------------------------- one size
def finish(m: dict, groups: dict) -> dict:
    """Summaries of a measurement's runs; moves callback documents out of the runs."""
    counters = [r.pop("_counter") for r in m["runs"] if "_counter" in r]
    m.update(stats.summarise(m["runs"]))
    if counters:
        m["changed"] = [r.get("changed") for r in m["runs"] if "changed" in r]
        roles = [sorted({t.get("role") for t in c.get("tasks") or [] if t.get("role")}) for c in counters]
        m["roles"] = sorted({r for run in roles for r in run})
        if any(run != roles[0] for run in roles):
            m["warning"] = "the runs did not run the same roles (the playbook changed during the measurement): " \
                           + "; ".join(f"run {i + 1}: {', '.join(run)}" for i, run in enumerate(roles))
        # the run with the most module executions on a host (the runs should agree)
        last = max(counters, key=lambda c: stats.host_counts(c)["max"] or 0)
        m["module_executions"] = {k: v for k, v in stats.host_counts(last).items() if k != "per_host"}
        m["module_executions"]["by_group"] = {
            g: {k: v for k, v in stats.host_counts(last, hosts).items() if k != "per_host"}
            for g, hosts in groups.items()}
        m["module_executions"]["by_role"] = stats.modules_by_role(last)
        m["module_executions"]["delegated_max"] = max(
            (h.get("delegated", 0) for h in (last.get("hosts") or {}).values()), default=None)
        m["top_tasks"] = stats.task_times(counters)
        m["role_seconds"] = stats.role_times(counters)
        sessions = [stats.switch_sessions(c) for c in counters]
        if any(sessions):
            sw = {}
            for run in sessions:
                for host, s in run.items():
                    cur = sw.setdefault(host, {"commands_max": 0, "show_commands_max": 0, "command_lines": []})
                    cur["commands_max"] = max(cur["commands_max"], s["commands"])
                    cur["show_commands_max"] = max(cur["show_commands_max"], s["show_commands"])
                    cur["command_lines"] = sorted(set(cur["command_lines"]) | set(s["command_lines"]))
            m["switches"] = sw
    return m


def bench_size(nodes: int, args) -> dict:
    """Bring up a rack of `nodes`, measure, take it down. The runs are
    interleaved round-robin (ping 1, first converge, re-run 1, validate 1,
    roce_switch 1, ping 2, ...) so that every measurement samples the same
    stretch of the machine's load."""
    switches = stats.switches_for(nodes)
    lab = f"{args.lab_prefix}{nodes}"
    work = SCRATCH / f"{nodes}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    inv = work / "inventory"
    env = base_env(args.forks, work / "facts")
    py = str(VENV_BIN / "python")
    size = {"nodes": nodes, "switches": switches, "lab": lab,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
            "site_layers_start": site_layers(env)["site.yml"], "measurements": {}}
    if lab_exists(lab, env):
        raise SystemExit(f"bench: a twin lab named {lab!r} exists already; it is not ours to replace. "
                         f"Take it down (python -m simlab down --name {lab}) or use --lab-prefix.")
    log(f"{nodes} nodes, {switches} switches: lab {lab} up")
    t0 = time.monotonic()
    try:
        with open(work / "lab-up.log", "w") as up_log:
            up = subprocess.run([py, "-m", "simlab", "up", "--name", lab, "--nodes", str(nodes), "--switches",
                                 str(switches), "--inventory", str(inv)], cwd=str(REPO), env=env,
                                stdout=up_log, stderr=subprocess.STDOUT)
        size["lab_up_seconds"] = round(time.monotonic() - t0, 1)
        if up.returncode != 0:
            raise RuntimeError(f"simlab up failed; see {work / 'lab-up.log'}")
        groups = {"gpu_workers": [f"node{i:0{max(2, len(str(nodes)))}d}" for i in range(1, nodes + 1)],
                  "leaf_switches": [f"leaf{i}" for i in range(1, switches + 1)]}
        tags = stats.site_tags()
        ping = [str(VENV_BIN / "ansible"), "all", "-i", str(inv / "hosts.yml"), "-m", "ansible.builtin.ping", "-o"]
        # (key, log name, argv of run i, env, directory, callback, runs, stop on failure)
        steps = [
            ("ping", "ping", lambda i: ping, env, work, False, args.runs, False),
            ("converge_first", "converge_first", lambda i: playbook(inv, "site.yml", "--tags", tags), env, work,
             True, 1, False),
            ("rerun", "rerun", lambda i: playbook(inv, "site.yml", "--tags", tags), env, work, True, args.runs, False),
            ("validate", "validate", lambda i: playbook(inv, "validate.yml", "-e",
                                                        f"doctor_report_dir={work / f'reports-{i}'}"),
             env, work, True, args.runs, False),
            ("roce_switch", "roce_switch", lambda i: playbook(inv, "site.yml", "--tags", "layer07", "--limit",
                                                              "leaf_switches"), env, work, True, args.runs, False),
        ]
        mitogen = None
        if args.mitogen:
            mitogen, msteps = mitogen_steps(inv, work, env, args.runs)
            steps.extend(msteps)
        recs = {key: {"runs": []} for key, *_ in steps}
        stopped = set()
        for i in range(1, args.runs + 1):
            for key, name, argvs, senv, sdir, counter, runs, fragile in steps:
                if i > runs or key in stopped:
                    continue
                cfile = sdir / f"{name}-{i}.counter.json" if counter else None
                rec = run_measured(argvs(i), senv, sdir / f"{name}-{i}.log", cfile)
                log(f"  {key} run {i}/{runs}: {rec['seconds']:.1f} s, {rec['cpu_s']:.1f} CPU-s, rc {rec['rc']}, "
                    f"peak {rec['peak_pss_mb']:.0f} MB PSS, load {rec['loadavg'][0]:.1f}"
                    + (f", changed {rec['changed']}" if "changed" in rec else ""))
                recs[key]["runs"].append(rec)
                if fragile and rec["rc"] != 0:
                    stopped.add(key)
                    recs[key]["error_tail"] = tail(REPO / rec["log"], 25)
        ms = size["measurements"]
        for key in ("ping", "converge_first", "rerun", "validate", "roce_switch"):
            ms[key] = finish(recs[key], groups)
        ms["converge_first"]["note"] = ("one run by definition: only the first converge of a fresh rack is a "
                                        "first converge")
        stats.add_ratios(ms)
        stats.add_cpu_per_node(ms, nodes)
        report = work / f"reports-{args.runs}" / "report.json"
        if report.exists():
            doc = json.loads(report.read_text())
            size["validate_layers"] = stats.layers_from_report(doc)
            size["validate_verdicts"] = stats.verdicts_from_report(doc)
        if mitogen is not None:
            for key in ("rerun", "validate"):
                m = recs.get(f"mitogen:{key}")
                if m is None:
                    continue
                mitogen[key] = finish(m, groups)
                mitogen[key]["ratio"] = stats.ratio(mitogen[key]["median"], ms["ping"]["median"])
                if f"mitogen:{key}" in stopped:
                    mitogen["error"] = f"{key} failed under mitogen (rc {m['runs'][-1]['rc']}); no further runs"
            size["mitogen"] = mitogen
        elif args.mitogen:
            size["mitogen"] = {"error": "mitogen is not installed in this Python (pip install -r requirements-bench.txt)"}
    finally:
        size["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        size["site_layers_end"] = site_layers(env)["site.yml"]
        if size["site_layers_end"] != size["site_layers_start"]:
            size["warning"] = (f"site.yml changed during the measurement: layers {size['site_layers_start']} at "
                               f"the start, {size['site_layers_end']} at the end")
        if args.keep:
            log(f"lab {lab} kept (--keep); take it down with: python -m simlab down --name {lab}")
        else:
            subprocess.run([py, "-m", "simlab", "down", "--name", lab], cwd=str(REPO), env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            log(f"lab {lab} down")
    return size


def lab_exists(lab: str, env: dict) -> bool:
    proc = subprocess.run([str(VENV_BIN / "python"), "-m", "simlab", "status", "--name", lab], cwd=str(REPO),
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc.returncode == 0


# ---------------------------------------------------------------- mitogen
def mitogen_strategy_dir() -> Path | None:
    try:
        import ansible_mitogen
    except ImportError:
        return None
    return Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"


def mitogen_steps(inv: Path, work: Path, env: dict, runs: int):
    """The no-change re-run and validate.yml again with mitogen's strategy,
    interleaved with the others. The twin's nodes use containers.podman.podman,
    which mitogen does not take over; a copy of the inventory names the
    connection 'podman', which mitogen replaces with its own."""
    out = {"strategy": "mitogen_linear"}
    try:
        import importlib.metadata as md
        out["version"] = md.version("mitogen")
    except Exception:  # noqa: BLE001 - reported, not fatal
        out["version"] = None
    sdir = mitogen_strategy_dir()
    if sdir is None:
        return None, []
    minv = work / "inventory-mitogen"
    shutil.copytree(inv, minv)
    gv = minv / "group_vars" / "gpu_workers.yml"
    gv.write_text(gv.read_text().replace("ansible_connection: containers.podman.podman",
                                         "ansible_connection: podman"))
    menv = dict(env, ANSIBLE_STRATEGY_PLUGINS=str(sdir), ANSIBLE_STRATEGY="mitogen_linear")
    mwork = work / "mitogen"
    mwork.mkdir()
    tags = stats.site_tags()
    steps = [
        ("mitogen:rerun", "rerun", lambda i: playbook(minv, "site.yml", "--tags", tags), menv, mwork, True, runs, True),
        ("mitogen:validate", "validate", lambda i: playbook(minv, "validate.yml", "-e",
                                                            f"doctor_report_dir={mwork / f'reports-{i}'}"),
         menv, mwork, True, runs, True),
    ]
    return out, steps


def tail(path: Path, n: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-n:]
    except OSError:
        return []


# ---------------------------------------------------------------- the document
def versions() -> dict:
    def cmd(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, cwd=str(REPO), timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    out = {"python": platform.python_version()}
    core = cmd(str(VENV_BIN / "ansible"), "--version")
    out["ansible_core"] = core.splitlines()[0].split("core ")[-1].rstrip("]") if core else None
    try:
        import importlib.metadata as md
        for pkg in ("ansible", "netmiko", "matplotlib", "mitogen"):
            try:
                out[pkg] = md.version(pkg)
            except md.PackageNotFoundError:
                out[pkg] = None
    except ImportError:
        pass
    out["podman"] = (cmd("podman", "--version") or "").replace("podman version ", "") or None
    try:
        import yaml
        out["collection"] = yaml.safe_load((REPO / "galaxy.yml").read_text()).get("version")
    except Exception:  # noqa: BLE001
        out["collection"] = None
    out["git_commit"] = cmd("git", "rev-parse", "--short", "HEAD")
    out["git_dirty"] = bool(cmd("git", "status", "--porcelain", "--untracked-files=no"))
    return out


def machine() -> dict:
    mem = _field_kb("/proc/meminfo", "MemTotal:")
    return {"nproc": os.cpu_count(), "mem_total_mb": round(mem / 1024 / 1024), "kernel": platform.release(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def site_layers(env: dict) -> dict:
    out = {}
    for book in ("site.yml", "validate.yml"):
        proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(TREE / "inventories/example/hosts.yml"),
                               str(TREE / "playbooks" / book), "--list-tags"], capture_output=True, text=True,
                              cwd=str(REPO), env=env)
        out[book] = stats.layers_from_tags(proc.stdout)
    return out


def load_earlier(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def merge(doc: dict, old: dict | None) -> dict:
    """Sizes measured now replace the same sizes of an earlier results
    document (of the same day); the others stay. Each size keeps the
    versions (collection commit, tree SHA-256, tools) it was measured with,
    so a size kept from an earlier run is never credited to this one."""
    for size in (doc.get("sizes") or {}).values():
        size.setdefault("versions", doc.get("versions"))
    if not old:
        return doc
    sizes = dict(old.get("sizes") or {})
    for size in sizes.values():
        size.setdefault("versions", old.get("versions"))
    sizes.update(doc["sizes"])
    doc["sizes"] = dict(sorted(sizes.items(), key=lambda kv: int(kv[0])))
    doc.setdefault("earlier_runs", []).extend(old.get("earlier_runs", []))
    doc["earlier_runs"].append({"started": old.get("started"), "sizes": sorted(old.get("sizes") or {}, key=int),
                                "machine": old.get("machine"), "versions": old.get("versions")})
    return doc


def parse_sizes(text: str) -> list[int]:
    sizes = [int(s) for s in text.replace(",", " ").split()]
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be positive node counts, not {text!r}")
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=parse_sizes, default=[8, 32, 64], help="node counts (default 8,32,64)")
    ap.add_argument("--runs", type=int, default=3, help="runs per measurement (default 3; the first converge runs once)")
    ap.add_argument("--forks", type=int, default=32)
    ap.add_argument("--mitogen", action="store_true",
                    help="also run the re-run and validate.yml with mitogen's strategy")
    ap.add_argument("--lab-prefix", default="bench", help="lab name is <prefix><nodes> (default bench)")
    ap.add_argument("--keep", action="store_true", help="leave the last lab up")
    ap.add_argument("--fresh", action="store_true", help="do not merge with an earlier results file of the day")
    ap.add_argument("--out", type=Path, help="results file (default bench/results/<date>.json)")
    ap.add_argument("--live", action="store_true",
                    help="run the working tree itself instead of a snapshot of the collection taken at the start")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    link = REPO / ".build" / "ansible_collections" / "gpufabric" / "stack"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path("../../.."))
    SCRATCH.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    global TREE, COLLECTIONS
    tree_sha = None
    if not args.live:
        TREE, tree_sha = snapshot(SCRATCH / "tree")
        COLLECTIONS = SCRATCH / "tree"
    env = base_env(args.forks, SCRATCH / "facts")
    today = dt.date.today().isoformat()
    out = args.out or RESULTS / f"{today}.json"
    doc = {
        "schema": 1,
        "date": today,
        "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": dict(versions(), tree_sha256=tree_sha,
                         tree="snapshot of the collection taken at the start" if tree_sha else "working tree"),
        "settings": {"forks": args.forks, "runs": args.runs, "fact_caching": "jsonfile (per rack, empty at start)",
                     "pipelining": "on (the twin's simlab_podman connection pipelines)",
                     "strategy": "linear", "node_connection": "simlab_podman (twin: podman exec -i, pipelined)",
                     "node_python": "the twin node's Python keeps what it compiles from AnsiballZ payloads "
                                    "(simlab/node/simlab_zipcache.py); a real node compiles them at every module run",
                     "callbacks": env["ANSIBLE_CALLBACKS_ENABLED"]},
        "method": {
            "time": "time.monotonic() around each command, median of the runs",
            "ratio": "median / median of ansible all -m ping on the same rack in the same run",
            "memory": "process tree of the command sampled from /proc every 0.2 s: peak of the summed PSS "
                      "(and summed RSS, and the main process's VmHWM); includes forks, controller-side "
                      "module processes and podman exec transport processes",
            "module_executions": "gpufabric.stack.task_counter callback: non-skipped results of tasks that run a "
                                 "module (loop items counted one by one), per host; set_fact, debug, assert, "
                                 "includes and other controller-only actions are not counted",
        },
        "measurements": stats.MEASUREMENTS,
        "layers": {"requested": stats.REQUESTED_LAYERS, **site_layers(env)},
        "sizes": {},
    }
    log(f"sizes {args.sizes}, {args.runs} runs, forks {args.forks}; load {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs; results to {out}")
    earlier = None if args.fresh else load_earlier(out)
    try:
        for nodes in args.sizes:
            doc["sizes"][str(nodes)] = bench_size(nodes, args)
            write(out, doc, earlier)
    finally:
        doc["finished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        doc["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        if doc["sizes"]:
            write(out, doc, earlier)
            log(f"wrote {out}")
    return 0


def write(out: Path, doc: dict, earlier: dict | None) -> None:
    merged = merge(json.loads(json.dumps(doc)), earlier)
    merged["targets"] = stats.evaluate_targets(merged)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(merged, indent=1) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    sys.exit(main())
