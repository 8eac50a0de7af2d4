"""The benchmark's arithmetic (bench/stats.py), its report (bench/report.py)
and the task_counter callback's counting, without a twin or Ansible run."""

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench import report, stats  # noqa: E402
from bench import run as bench_run  # noqa: E402
from ansible_collections.gpufabric.stack.plugins.callback import task_counter  # noqa: E402

pytestmark = pytest.mark.tooling


# ---------------------------------------------------------------- medians and ratios
def test_median_odd_even_and_none():
    assert stats.median([3.0, 1.0, 2.0]) == 2.0
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert stats.median([None, 5.0, None]) == 5.0
    assert stats.median([]) is None
    assert stats.median([None]) is None


def test_ratio_to_ping_of_the_same_size():
    ms = {"ping": {"median": 4.0}, "rerun": {"median": 30.0}, "validate": {"median": None}}
    stats.add_ratios(ms)
    assert ms["ping"]["ratio"] == 1.0
    assert ms["rerun"]["ratio"] == 7.5
    assert ms["validate"]["ratio"] is None
    assert stats.ratio(3.0, 0) is None


def test_cpu_seconds_per_gpu_node():
    runs = [{"seconds": 10.0, "cpu_s": 40.0}, {"seconds": 12.0, "cpu_s": 48.0}, {"seconds": 11.0, "cpu_s": 44.0}]
    ms = {"rerun": stats.summarise(runs), "ping": stats.summarise([{"seconds": 1.0}])}
    stats.add_cpu_per_node(ms, 8)
    assert ms["rerun"]["cpu_s"] == 44.0 and ms["rerun"]["cpu_s_per_node"] == 5.5
    assert ms["ping"]["cpu_s"] is None and ms["ping"]["cpu_s_per_node"] is None


def test_run_measured_counts_the_cpu_of_the_whole_tree(tmp_path, monkeypatch):
    """A child that burns CPU in a grandchild: the grandchild's seconds are in the record."""
    monkeypatch.setattr(bench_run, "REPO", tmp_path)
    burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.3: pass')"
    argv = [sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', %r])" % burn]
    rec = bench_run.run_measured(argv, dict(__import__("os").environ), tmp_path / "burn.log")
    assert rec["rc"] == 0
    assert rec["cpu_s"] >= 0.3 and rec["cpu_s"] == round(rec["cpu_user_s"] + rec["cpu_system_s"], 3)


def test_rack_cpu_seconds_per_gpu_node_are_the_machine_s_less_the_controller_s():
    runs = [{"seconds": 10.0, "cpu_s": 40.0, "machine_cpu_s": 100.0}, {"seconds": 12.0, "cpu_s": 48.0},
            {"seconds": 11.0, "cpu_s": 44.0, "machine_cpu_s": 124.0}]
    ms = {"validate": stats.summarise(runs)}
    stats.add_cpu_per_node(ms, 8)
    # the run without the machine's figure is left out of the median
    assert ms["validate"]["rack_cpu_s"] == 70.0 and ms["validate"]["rack_cpu_s_per_node"] == 8.75
    assert "| 8.75 |" in stats.size_table({"measurements": ms})


def test_machine_busy_seconds_leave_out_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    hz = __import__("os").sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal
    stat.write_text("cpu  %d %d %d %d %d %d %d %d 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n"
                    % (10 * hz, hz, 2 * hz, 500 * hz, 7 * hz, 0, hz, 0))
    assert bench_run.machine_busy_s(str(stat)) == 14.0
    stat.write_text("intr 1 2 3\n")
    assert bench_run.machine_busy_s(str(stat)) is None
    assert bench_run.machine_busy_s(str(tmp_path / "none")) is None


def test_run_measured_records_what_the_machine_spent_meanwhile(tmp_path, monkeypatch):
    """A process outside the command's tree (here: one started before it)
    burns CPU while the command runs: the machine's figure holds it, the
    tree's does not."""
    import subprocess
    monkeypatch.setattr(bench_run, "REPO", tmp_path)
    outside = subprocess.Popen([sys.executable, "-c", "import time; t = time.time()\nwhile time.time() - t < 2: pass"])
    try:
        rec = bench_run.run_measured([sys.executable, "-c", "import time; time.sleep(0.8)"],
                                     dict(__import__("os").environ), tmp_path / "sleep.log")
    finally:
        outside.kill()
        outside.wait()
    assert rec["cpu_s"] < 0.3 and rec["machine_cpu_s"] >= 0.5


def test_summarise_runs():
    runs = [{"seconds": 10.0, "rc": 0, "peak_pss_mb": 100.0}, {"seconds": 12.0, "rc": 2, "peak_pss_mb": 140.0},
            {"seconds": 11.0, "rc": 0, "peak_pss_mb": 120.0}]
    s = stats.summarise(runs)
    assert (s["median"], s["min"], s["max"]) == (11.0, 10.0, 12.0)
    assert s["peak_pss_mb"] == 120.0 and s["peak_pss_mb_max"] == 140.0
    assert s["failed_runs"] == 1


def test_switches_per_size():
    assert [stats.switches_for(n) for n in (8, 32, 64)] == [2, 4, 8]
    assert stats.switches_for(2) == 2
    assert stats.switches_for(24) == 4  # three rounded up to an even number of rails


def test_site_tags_are_layers_one_to_nine():
    assert stats.site_tags() == "layer01,layer02,layer03,layer04,layer05,layer06,layer07,layer08,layer09"


# ---------------------------------------------------------------- callback output
COUNTER = {
    "hosts": {"node01": {"module_executions": 31, "delegated": 6}, "node02": {"module_executions": 29},
              "leaf1": {"module_executions": 1}},
    "recap": {"node01": {"changed": 0, "failures": 0, "unreachable": 0},
              "node02": {"changed": 2, "failures": 1, "unreachable": 0},
              "leaf1": {"changed": 0, "failures": 0, "unreachable": 1}},
    "tasks": [{"role": "kernel", "name": "Read", "path": "a.yml:1", "action": "ansible.builtin.slurp", "seconds": 2.0},
              {"role": "bios", "name": "Query", "path": "b.yml:3", "action": "ansible.builtin.uri", "seconds": 5.0},
              {"role": "kernel", "name": "Read", "path": "a.yml:1", "action": "ansible.builtin.slurp", "seconds": 1.0}],
    "roce_switch": {"leaf1": [{"commands": 0, "show_commands": 1, "command_lines": []},
                              {"commands": 2, "show_commands": 3, "command_lines": ["a", "b"]}]},
}


def test_host_counts_and_groups():
    all_hosts = stats.host_counts(COUNTER)
    assert (all_hosts["max"], all_hosts["min"]) == (31, 1)
    nodes = stats.host_counts(COUNTER, ["node01", "node02"])
    assert (nodes["max"], nodes["min"], nodes["mean"]) == (31, 29, 30.0)
    assert stats.host_counts({}, None)["max"] is None


def test_modules_by_role_takes_the_most_on_any_host():
    counter = {"hosts": {"node01": {"by_role": {"kernel": 8, "bios": 1}}, "node02": {"by_role": {"kernel": 9}},
                         "leaf1": {"by_role": {"roce_switch": 1}}}}
    assert stats.modules_by_role(counter, ["node01", "node02"]) == {"kernel": 9, "bios": 1}
    assert list(stats.modules_by_role(counter)) == ["kernel", "bios", "roce_switch"]


def test_changed_and_failures_from_the_recap():
    assert stats.changed_total(COUNTER) == 2
    assert stats.failures_total(COUNTER) == 2


def test_switch_sessions_sum_the_runs_results():
    assert stats.switch_sessions(COUNTER) == {
        "leaf1": {"commands": 2, "show_commands": 4, "sessions": 2, "command_lines": ["a", "b"]}}


def test_task_times_add_up_repeated_tasks_and_take_the_median_over_runs():
    other = dict(COUNTER, tasks=[{"role": "kernel", "name": "Read", "path": "a.yml:1", "seconds": 9.0},
                                 {"role": "bios", "name": "Query", "path": "b.yml:3", "seconds": 7.0}])
    third = dict(COUNTER, tasks=[{"role": "kernel", "name": "Read", "path": "a.yml:1", "seconds": 4.0},
                                 {"role": "bios", "name": "Query", "path": "b.yml:3", "seconds": 6.0}])
    top = stats.task_times([COUNTER, other, third])
    assert [(t["role"], t["seconds"]) for t in top] == [("bios", 6.0), ("kernel", 4.0)]
    assert stats.role_times([COUNTER, other, third]) == {"bios": 6.0, "kernel": 4.0}


def test_layers_from_list_tags_and_report():
    out = ("  play #1 (gpu_workers): Layers\tTAGS: []\n"
           "      TASK TAGS: [always, bios, layer01, layer02, layer06, sriov_vfs]\n"
           "  play #2 (leaf_switches): x\tTAGS: []\n      TASK TAGS: [layer07, roce_switch, players]\n")
    assert stats.layers_from_tags(out) == [1, 2, 6, 7]
    rep = {"node01": {"verdict": {"status": "pass"}, "layers": [{"layer": 1}, {"layer": 2}]},
           "leaf1": {"verdict": {"status": "fail"}, "layers": [{"layer": 7}]}}
    assert stats.layers_from_report(rep) == [1, 2, 7]
    assert stats.verdicts_from_report(rep) == {"pass": 1, "fail": 1}


# ---------------------------------------------------------------- targets
def _results(rerun32=(40.0, 5.0), validate32=(15.0, 5.0), mods=12, changed=(0, 0, 0), cmds=0, shows=2,
             rerun8=40.0, rerun64=100.0, val_changed=(0, 0, 0), cpu=(3.0, 1.5)):
    def size(n, rerun_med, val_med, ping):
        return {"nodes": n, "measurements": {
            "ping": {"median": ping, "ratio": 1.0},
            "rerun": {"median": rerun_med, "ratio": rerun_med / ping, "changed": list(changed),
                      "module_executions": {"max": mods, "min": mods}, "cpu_s_per_node": cpu[0]},
            "validate": {"median": val_med, "ratio": val_med / ping, "changed": list(val_changed),
                         "cpu_s_per_node": cpu[1]},
            "roce_switch": {"switches": {"leaf1": {"commands_max": cmds, "show_commands_max": shows}}}}}
    return {"sizes": {"8": size(8, rerun8, 20.0, 4.0), "32": size(32, rerun32[0], validate32[0], rerun32[1]),
                      "64": size(64, rerun64, 50.0, 6.0)}}


def _by_id(targets):
    return {t["id"]: t for t in targets}


def test_targets_met():
    t = _by_id(stats.evaluate_targets(_results()))
    assert all(v["met"] is True for v in t.values()), t
    assert t["rerun_ratio_32"]["value"] == 8.0 and t["validate_ratio_32"]["value"] == 3.0
    assert (t["rerun_cpu_32"]["value"], t["validate_cpu_32"]["value"]) == (3.0, 1.5)
    assert t["scaling_rerun"]["value"] == 2.5
    # the floor's own 64/8 quotient stands beside the scaling figures
    assert t["scaling_rerun"]["detail"] == t["scaling_validate"]["detail"] == "ping itself 1.50"


def test_targets_missed_are_false_and_named():
    t = _by_id(stats.evaluate_targets(_results(rerun32=(41.0, 5.0), validate32=(16.0, 5.0), mods=13,
                                               changed=(0, 1, 0), cmds=3, shows=3, rerun64=130.0,
                                               val_changed=(0, 0, 4), cpu=(4.1, 2.01))))
    for tid in ("rerun_ratio_32", "validate_ratio_32", "rerun_modules_12", "rerun_changed_0",
                "roce_switch_no_commands", "roce_switch_shows_2", "scaling_rerun", "validate_changed_0",
                "rerun_cpu_32", "validate_cpu_32"):
        assert t[tid]["met"] is False, tid
    assert "1 changed on 8 nodes" in t["rerun_changed_0"]["detail"]
    assert "4 changed on 8 nodes" in t["validate_changed_0"]["detail"]
    assert t["scaling_validate"]["met"] is True


def test_targets_not_measured_without_the_sizes():
    res = _results()
    del res["sizes"]["32"], res["sizes"]["64"]
    t = _by_id(stats.evaluate_targets(res))
    assert t["rerun_ratio_32"]["met"] is None and "32 nodes" in t["rerun_ratio_32"]["detail"]
    assert t["scaling_rerun"]["met"] is None
    assert t["rerun_modules_12"]["met"] is True
    assert t["validate_cpu_32"]["met"] is None and t["validate_cpu_32"]["detail"] == "32 nodes not measured"
    assert stats.evaluate_targets({"sizes": {}})[0]["met"] is None
    # results from before the CPU figure: not measured, said so
    old = _results()
    del old["sizes"]["32"]["measurements"]["rerun"]["cpu_s_per_node"]
    t = _by_id(stats.evaluate_targets(old))
    assert t["rerun_cpu_32"]["met"] is None and t["rerun_cpu_32"]["detail"] == "no CPU figure"


def test_targets_table_says_no_plainly():
    table = stats.targets_table(stats.evaluate_targets(_results(mods=40)))
    assert "| no-change re-run: <= 12 module executions per host, fact gathering included | 40 | 12 | **NO**" in table


def test_size_table_rows():
    size = {"measurements": {
        "ping": {"runs": [{}, {}, {}], "median": 4.0, "min": 3.5, "max": 4.5, "ratio": 1.0, "peak_pss_mb": 80.0},
        "rerun": {"runs": [{}, {}, {}], "median": 40.0, "min": 39.0, "max": 44.0, "ratio": 10.0, "peak_pss_mb": 300.4,
                  "module_executions": {"max": 31, "min": 1}, "changed": [0, 0, 0], "failed_runs": 1,
                  "cpu_s_per_node": 2.5, "rack_cpu_s_per_node": 1.25}}}
    lines = stats.size_table(size).splitlines()
    assert lines[2] == "| ping | 3 | 4.0 | 3.5-4.5 | 1.00 | - | - | 80 | - | - |"
    assert lines[3] == ("| no-change re-run | 3 (1 failed) | 40.0 | 39.0-44.0 | 10.00 | 2.50 | 1.25 | 300 | 1-31 "
                        "| 0,0,0 |")
    assert len(lines) == 4


# ---------------------------------------------------------------- the callback's counting
def test_classify_module_controller_and_skipped():
    c = task_counter.classify("ansible.builtin.stat", {"changed": False})
    assert (c["module_executions"], c["controller_actions"], c["results"]) == (1, 0, 1)
    c = task_counter.classify("ansible.builtin.set_fact", {})
    assert (c["module_executions"], c["controller_actions"]) == (0, 1)
    c = task_counter.classify("ansible.builtin.command", {"skipped": True})
    assert (c["module_executions"], c["skipped"]) == (0, 1)
    c = task_counter.classify("gpufabric.stack.doctor_print", {}, extra=("gpufabric.stack.doctor_print",))
    assert c["controller_actions"] == 1


def test_classify_counts_loop_items_one_by_one():
    res = {"results": [{"changed": True, "ansible_loop_var": "item"}, {"skipped": True, "ansible_loop_var": "item"},
                       {"failed": True, "ansible_loop_var": "item"}], "changed": True}
    c = task_counter.classify("ansible.builtin.template", res, delegated=True)
    assert (c["results"], c["module_executions"], c["skipped"], c["changed"], c["failed"], c["delegated"]) == \
        (3, 2, 1, 1, 1, 2)
    empty = {"results": [], "skipped": True}
    assert task_counter.classify("ansible.builtin.stat", empty)["skipped"] == 1
    # a module's own "results" (the doctor action's per-layer records) is one execution, not a loop
    own = {"results": [{"layer": 1, "status": "pass"}, {"layer": 2, "status": "fail"}], "changed": False}
    c = task_counter.classify("gpufabric.stack.doctor", own)
    assert (c["results"], c["module_executions"], c["failed"]) == (1, 1, 0)


def test_classify_delegation_from_the_result():
    c = task_counter.classify("community.general.redfish_info", {"_ansible_delegated_vars": {"ansible_host": "x"}})
    assert c["delegated"] == 1


def test_classify_takes_the_number_an_action_says_it_executed():
    # the doctor action: one nic_facts and the Redfish read on a node, none for a fabric layer's verdict
    c = task_counter.classify("gpufabric.stack.doctor", {"changed": False, "module_executions": 2})
    assert c["module_executions"] == 2 and c["controller_actions"] == 0
    c = task_counter.classify("gpufabric.stack.doctor", {"changed": False, "module_executions": 0})
    assert c["module_executions"] == 0 and c["controller_actions"] == 1
    c = task_counter.classify("gpufabric.stack.doctor", {"module_executions": 3}, delegated=True)
    assert c["module_executions"] == 3 and c["delegated"] == 3
    # a module's own key of another type is not a count
    c = task_counter.classify("some.module", {"module_executions": True})
    assert c["module_executions"] == 1


def test_roce_switch_record():
    rec = task_counter.roce_switch_record({"commands": ["a", "b"], "show_commands": 3, "changed": True,
                                           "invocation": {"module_args": {"state": "merged", "password": "x"}}})
    assert rec == {"state": "merged", "commands": 2, "command_lines": ["a", "b"], "show_commands": 3,
                   "changed": True, "failed": False}


# ---------------------------------------------------------------- runner pieces
def test_merge_keeps_other_sizes_and_replaces_the_measured_ones():
    old = {"started": "t0", "versions": {"git_commit": "aaaaaaa"},
           "sizes": {"8": {"nodes": 8, "old": True}, "64": {"nodes": 64}}}
    new = {"versions": {"git_commit": "bbbbbbb"}, "sizes": {"8": {"nodes": 8, "old": False}, "32": {"nodes": 32}}}
    merged = bench_run.merge(new, old)
    assert list(merged["sizes"]) == ["8", "32", "64"]
    assert merged["sizes"]["8"]["old"] is False
    assert merged["earlier_runs"][0]["sizes"] == ["8", "64"]
    # each size is credited to the collection it measured, not to the newest run
    assert [merged["sizes"][k]["versions"]["git_commit"] for k in ("8", "32", "64")] == ["bbbbbbb", "bbbbbbb", "aaaaaaa"]
    assert merged["earlier_runs"][0]["versions"] == {"git_commit": "aaaaaaa"}
    # a size merged before keeps its own versions through a later merge
    again = bench_run.merge({"versions": {"git_commit": "ccccccc"}, "sizes": {"32": {"nodes": 32}}}, merged)
    assert [again["sizes"][k]["versions"]["git_commit"] for k in ("8", "32", "64")] == ["bbbbbbb", "ccccccc", "aaaaaaa"]
    assert bench_run.merge({"sizes": {}}, None) == {"sizes": {}}


def test_parse_sizes():
    assert bench_run.parse_sizes("8 32,64") == [8, 32, 64]
    with pytest.raises(Exception):
        bench_run.parse_sizes("0")


def test_process_tree_of_this_process_contains_a_child(tmp_path):
    import subprocess
    child = subprocess.Popen(["sleep", "5"])
    try:
        assert child.pid in bench_run.tree(__import__("os").getpid())
    finally:
        child.kill()
        child.wait()


# ---------------------------------------------------------------- report
def test_report_renders_from_a_results_file(tmp_path):
    res = _results(mods=40)
    for s in res["sizes"].values():
        s.update(switches=2, started="t", loadavg_start=[1.0, 1.0, 1.0], loadavg_end=[2.0, 2.0, 2.0])
        for m in s["measurements"].values():
            m.setdefault("runs", [{}])
    res.update(date="2026-01-01", machine={"nproc": 2}, versions={"ansible_core": "2.19"},
               settings={"forks": 32, "runs": 3}, layers={"site.yml": [1, 2], "validate.yml": []})
    text = report.render(res, "bench/results/x.json", plotted=False)
    assert "### 32 nodes" in text
    assert "**Not met:** no-change re-run: <= 12 module executions per host" in text
    assert "$" not in text.replace("$ ", "")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(res))
    assert report.newest(tmp_path) == path


def test_report_says_how_many_runs_each_size_had():
    def res(**runs):
        return {"settings": {"runs": 3}, "sizes": {key[1:]: {"measurements": {"ping": {"runs": [{}] * n}}}
                                                   for key, n in runs.items()}}
    assert report.runs_phrase(res(s8=3, s32=3)) == "3 runs"
    assert report.runs_phrase(res(s8=3, s32=3, s64=1)) == "3 runs (64 nodes: 1)"
    assert report.runs_phrase(res(s8=1, s64=3)) == "3 runs (8 nodes: 1)"
    assert report.runs_phrase({"settings": {"runs": 5}, "sizes": {}}) == "5 runs"
    # `make bench RUNS=1`: one run, not "1 runs"
    assert report.runs_phrase(res(s8=1, s32=1)) == "1 run"
    assert report.runs_phrase(res(s8=1, s32=1, s64=3)) == "1 run (64 nodes: 3)"


def test_report_names_the_commit_each_size_measured():
    res = {"versions": {"ansible_core": "2.19", "collection": "0.1.0", "git_commit": "bbbbbbb"},
           "sizes": {"8": {"versions": {"collection": "0.1.0", "git_commit": "bbbbbbb"}},
                     "32": {"versions": {"collection": "0.1.0", "git_commit": "aaaaaaa"}}}}
    line = report.versions_line(res)
    assert line == ("ansible_core 2.19, collection 0.1.0; the sizes measured different commits of the collection: "
                    "8 nodes at bbbbbbb, 32 nodes at aaaaaaa")
    res["sizes"]["32"]["versions"]["git_commit"] = "bbbbbbb"
    assert report.versions_line(res) == "ansible_core 2.19, collection 0.1.0, git_commit bbbbbbb"
    # results written before sizes carried their versions: the run's commit
    assert report.versions_line({"versions": {"git_commit": "ccccccc"}, "sizes": {"8": {}}}) == "git_commit ccccccc"


def test_the_bench_runs_with_the_example_inventorys_settings(tmp_path):
    """The fact cache, facts not injected as variables and vars plugins at
    inventory load come from inventories/example/ansible.cfg, the one place
    that says how a rack's controller runs; the cache directory is the rack's."""
    settings = bench_run.example_settings()
    assert settings == {"ANSIBLE_CACHE_PLUGIN": "jsonfile", "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "86400",
                        "ANSIBLE_INJECT_FACT_VARS": "False", "ANSIBLE_RUN_VARS_PLUGINS": "start"}
    env = bench_run.base_env(8, tmp_path / "facts")
    assert {k: env[k] for k in settings} == settings
    assert env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] == str(tmp_path / "facts")
    # the twin's nodes through podman exec, as every results file measured them
    assert env["SIMLAB_EXEC"] == "podman"
    cfg = tmp_path / "ansible.cfg"
    cfg.write_text("[defaults]\nfact_caching = redis  # a comment\n")
    assert bench_run.example_settings(cfg) == {"ANSIBLE_CACHE_PLUGIN": "redis"}
