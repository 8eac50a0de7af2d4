"""host_files: the plain-Python plan/apply on a fake tree, and the module
in-process with systemctl and udevadm stand-ins that record their calls."""

import grp
import io
import json
import os
import pwd
import stat
from contextlib import redirect_stdout

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files as hf
from ansible_collections.gpufabric.stack.plugins.modules import host_files as module

pytestmark = pytest.mark.layers(3, 6, 8)

ME = pwd.getpwuid(os.getuid()).pw_name
MYGROUP = grp.getgrgid(os.getgid()).gr_name
UNIT = "/etc/systemd/system/gpufabric-sriov.service"
SCRIPT = "/usr/local/libexec/gpufabric/sriov-vfs.sh"
RULE = "/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules"


def _files(script="#!/bin/sh\necho vfs\n", unit="[Unit]\nDescription=x\n", rule=None):
    out = [{"path": SCRIPT, "content": script, "mode": "0755", "owner": ME, "group": MYGROUP},
           {"path": UNIT, "content": unit, "mode": "0644", "owner": ME, "group": MYGROUP}]
    if rule is not None:
        out.append({"path": RULE, "content": rule, "mode": "0644", "owner": ME, "group": MYGROUP})
    return out


def test_plan_on_empty_tree_creates_everything_with_parents(tmp_path):
    files = hf.normalize(_files())
    planned = hf.plan(files, str(tmp_path))
    assert [p["state"] for p in planned] == ["created", "created"]
    assert str(tmp_path / "usr/local/libexec/gpufabric") in planned[0]["parents"]
    written = hf.apply(files, planned)
    assert written == [SCRIPT, UNIT]
    script = tmp_path / SCRIPT.lstrip("/")
    assert script.read_text() == "#!/bin/sh\necho vfs\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "usr/local/libexec/gpufabric").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / UNIT.lstrip("/")).stat().st_mode) == 0o644
    # no temporary file left beside them
    assert os.listdir(tmp_path / "usr/local/libexec/gpufabric") == ["sriov-vfs.sh"]
    # a second plan sees nothing to do
    assert [p["state"] for p in hf.plan(files, str(tmp_path))] == ["unchanged", "unchanged"]


def test_a_parent_made_meanwhile_by_another_process_is_taken(tmp_path, monkeypatch):
    """Another process making a parent between the look and the mkdir (as two
    runs on one host, or a package install, may) is mkdir -p's race: the file
    is written into it; a parent that became a file instead still fails."""
    files = hf.normalize(_files())
    planned = hf.plan(files, str(tmp_path))
    real_mkdir = os.mkdir
    raced = str(tmp_path / "usr/local/libexec")

    def mkdir(path, mode=0o777):
        if path == raced:
            real_mkdir(path, 0o700)     # the other process's directory, with its mode
        real_mkdir(path, mode)
    monkeypatch.setattr(os, "mkdir", mkdir)
    assert hf.apply(files, planned) == [SCRIPT, UNIT]
    assert (tmp_path / SCRIPT.lstrip("/")).read_text() == "#!/bin/sh\necho vfs\n"
    assert stat.S_IMODE(os.stat(raced).st_mode) == 0o700

    other = tmp_path / "other"
    files = hf.normalize([{"path": "/usr/local/libexec/gpufabric/x.sh", "content": "x\n", "mode": "0755"}])
    planned = hf.plan(files, str(other))
    blocked = str(other / "usr/local/libexec")

    def mkdir_file(path, mode=0o777):
        if path == blocked:
            open(path, "w").close()
        real_mkdir(path, mode)
    monkeypatch.setattr(os, "mkdir", mkdir_file)
    with pytest.raises(FileExistsError):
        hf.apply(files, planned)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_parents_stay_with_the_caller_when_the_file_has_another_owner(tmp_path):
    files = hf.normalize([{"path": "/opt/gpufabric/x.conf", "content": "x\n", "owner": "nobody", "group": MYGROUP}])
    hf.apply(files, hf.plan(files, str(tmp_path)))
    assert (tmp_path / "opt/gpufabric/x.conf").stat().st_uid == pwd.getpwnam("nobody").pw_uid
    assert (tmp_path / "opt/gpufabric").stat().st_uid == os.getuid()


def test_plan_names_what_differs(tmp_path):
    files = hf.normalize(_files())
    hf.apply(files, hf.plan(files, str(tmp_path)))
    os.chmod(tmp_path / SCRIPT.lstrip("/"), 0o644)
    changed = hf.normalize(_files(unit="[Unit]\nDescription=y\n"))
    planned = hf.plan(changed, str(tmp_path))
    assert planned[0]["state"] == "updated" and planned[0]["changes"] == ["mode"]
    assert planned[1]["state"] == "updated" and planned[1]["changes"] == ["content"]
    assert planned[1]["before"] == "[Unit]\nDescription=x\n"
    diffs = hf.diffs(planned)
    assert diffs[1]["before"] == "[Unit]\nDescription=x\n" and diffs[1]["after"] == "[Unit]\nDescription=y\n"
    assert "mode" in diffs[0]["before"]
    hf.apply(changed, planned)
    assert stat.S_IMODE((tmp_path / SCRIPT.lstrip("/")).stat().st_mode) == 0o755
    assert (tmp_path / UNIT.lstrip("/")).read_text() == "[Unit]\nDescription=y\n"


@pytest.mark.parametrize("bad, message", [
    ({"path": "etc/x", "content": ""}, "absolute file path"),
    ({"path": "/etc/x/", "content": ""}, "absolute file path"),
    ({"path": "/etc/../x", "content": ""}, "normalized"),
    ({"path": "/etc/x", "content": None}, "(/etc/x): no content (give content, or a template"),
    ({"path": "/etc/x", "content": 7}, "content must be a string"),
    ({"path": "/etc/x", "content": "", "mode": "rw-r--r--"}, "mode must be an octal string"),
    ({"path": "/etc/x", "content": "", "mode": "0999"}, "mode must be an octal string"),
    ({"path": "/etc/x", "content": "", "owner": "no-such-user-gpufabric"}, "owner 'no-such-user-gpufabric'"),
    ({"path": "/etc/x", "content": "", "group": "no-such-group-gpufabric"}, "group 'no-such-group-gpufabric'"),
])
def test_bad_input_names_the_file_and_value(bad, message):
    with pytest.raises(hf.HostFilesError) as e:
        hf.normalize([{"path": "/etc/ok", "content": "", "owner": ME, "group": MYGROUP},
                      dict({"owner": ME, "group": MYGROUP}, **bad)])
    assert message in str(e.value)
    assert str(e.value).startswith("files[1]")


def test_duplicate_path_and_non_regular_file(tmp_path):
    with pytest.raises(hf.HostFilesError, match="given twice"):
        hf.normalize([{"path": "/etc/a", "content": ""}, {"path": "/etc/a", "content": "x"}])
    (tmp_path / "etc/a").mkdir(parents=True)
    with pytest.raises(hf.HostFilesError, match="not a regular file"):
        hf.plan(hf.normalize([{"path": "/etc/a", "content": "", "owner": ME, "group": MYGROUP}]), str(tmp_path))
    (tmp_path / "opt").write_text("")
    with pytest.raises(hf.HostFilesError, match="not a directory"):
        hf.plan(hf.normalize([{"path": "/opt/b/c", "content": "", "owner": ME, "group": MYGROUP}]), str(tmp_path))


def test_reloads_follow_the_changed_paths():
    assert hf.reloads_needed([SCRIPT]) == {"systemd": False, "udev": False}
    assert hf.reloads_needed([UNIT]) == {"systemd": True, "udev": False}
    assert hf.reloads_needed([RULE]) == {"systemd": False, "udev": True}
    assert hf.reloads_needed(["/etc/udev/rules.d/README"]) == {"systemd": False, "udev": False}


# --- the module, in-process ------------------------------------------------

@pytest.fixture
def tools(tmp_path):
    """systemctl and udevadm stand-ins: is-enabled answers from a state file."""
    log = tmp_path / "calls.log"
    enabled = tmp_path / "enabled"
    enabled.write_text("")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text(
        "#!/bin/sh\necho \"systemctl $*\" >> %s\n"
        "case \"$1\" in\n"
        "  is-enabled) if grep -qx \"$2\" %s; then echo enabled; exit 0; else echo disabled; exit 1; fi;;\n"
        "  enable) echo \"$2\" >> %s;;\n"
        "esac\nexit 0\n" % (log, enabled, enabled))
    (bindir / "udevadm").write_text("#!/bin/sh\necho \"udevadm $*\" >> %s\n" % log)
    for t in ("systemctl", "udevadm"):
        os.chmod(bindir / t, 0o755)
    root = tmp_path / "root"
    root.mkdir()

    def calls():
        return log.read_text().splitlines() if log.exists() else []
    return {"root": str(root), "systemctl": str(bindir / "systemctl"), "udevadm": str(bindir / "udevadm"),
            "calls": calls, "log": log}


def _call(args, check=False, diff=False):
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    out = io.StringIO()
    with patch_module_args(args), redirect_stdout(out), pytest.raises(SystemExit):
        module.main()
    return json.loads(out.getvalue())


def _args(tools, files, units=("gpufabric-sriov.service",)):
    return {"files": files, "enable_units": list(units), "root": tools["root"],
            "systemctl": tools["systemctl"], "udevadm": tools["udevadm"]}


def test_module_check_then_apply_then_nothing(tools):
    os.makedirs(os.path.join(tools["root"], "run/udev"))
    open(os.path.join(tools["root"], "run/udev/control"), "w").close()
    files = _files(rule='SUBSYSTEM=="net", KERNELS=="0000:3b:00.2", ENV{NM_UNMANAGED}="1"\n')

    r = _call(_args(tools, files), check=True, diff=True)
    assert r["changed"] and r["written"] == [SCRIPT, UNIT, RULE]
    assert r["daemon_reloaded"] and r["udev_reloaded"]
    assert r["units_enabled"] == ["gpufabric-sriov.service"]
    assert [d["after_header"] for d in r["diff"]] == [SCRIPT, UNIT, RULE]
    assert not os.path.exists(os.path.join(tools["root"], SCRIPT.lstrip("/")))
    assert tools["calls"]() == ["systemctl is-enabled gpufabric-sriov.service"]

    tools["log"].write_text("")
    r = _call(_args(tools, files))
    assert r["changed"] and [f["state"] for f in r["files"]] == ["created"] * 3
    assert tools["calls"]() == ["systemctl daemon-reload", "udevadm control --reload",
                                "systemctl is-enabled gpufabric-sriov.service",
                                "systemctl enable gpufabric-sriov.service"]

    tools["log"].write_text("")
    r = _call(_args(tools, files))
    assert not r["changed"] and r["written"] == [] and r["units_enabled"] == []
    assert not r["daemon_reloaded"] and not r["udev_reloaded"]
    assert tools["calls"]() == ["systemctl is-enabled gpufabric-sriov.service"]


def test_module_script_change_reloads_nothing_and_udev_waits_for_udevd(tools):
    files = _files(rule="# none\n")
    _call(_args(tools, files))
    tools["log"].write_text("")
    # udevd does not run (no control socket): the rule is written, udev not told
    r = _call(_args(tools, _files(script="#!/bin/sh\necho other\n", rule="# one\n")))
    assert r["written"] == [SCRIPT, RULE]
    assert not r["daemon_reloaded"] and not r["udev_reloaded"]
    assert tools["calls"]() == ["systemctl is-enabled gpufabric-sriov.service"]


def test_module_disabled_unit_is_enabled_again(tools):
    _call(_args(tools, _files()))
    tools["log"].write_text("")
    open(tools["log"].parent / "enabled", "w").close()
    r = _call(_args(tools, _files()))
    assert r["changed"] and r["written"] == [] and r["units_enabled"] == ["gpufabric-sriov.service"]
    assert tools["calls"]()[-1] == "systemctl enable gpufabric-sriov.service"


def test_module_bad_input_fails_before_writing(tools):
    files = _files() + [{"path": "/etc/x", "content": "", "mode": "644x"}]
    r = _call(_args(tools, files))
    assert r["failed"] and "files[2] (/etc/x): mode must be an octal string" in r["msg"]
    assert os.listdir(tools["root"]) == []
    assert tools["calls"]() == []


def test_module_failing_systemctl_is_reported(tools):
    with open(tools["systemctl"], "w") as f:
        f.write("#!/bin/sh\necho 'Failed to connect to bus' >&2\nexit 1\n")
    r = _call(_args(tools, _files(), units=()))
    assert r["failed"] and "systemctl daemon-reload failed (rc 1): Failed to connect to bus" in r["msg"]


# --- inspect() and pending(): the skip a role takes on the controller --------

def _inspect_and_units(tools, files, units):
    def run(argv):
        import subprocess
        p = subprocess.run(argv, capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr
    states = hf.inspect([f["path"] for f in files], tools["root"])
    return states, dict((u, hf.is_enabled(run, tools["systemctl"], u)) for u in units)


def test_inspect_reports_digest_mode_owner_group_and_absence(tmp_path):
    files = hf.normalize(_files())
    hf.apply(files, hf.plan(files, str(tmp_path)))
    os.makedirs(tmp_path / "etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules")
    states = hf.inspect([SCRIPT, UNIT, RULE, "/etc/absent"], str(tmp_path))
    import hashlib
    assert states[SCRIPT] == {"sha256": hashlib.sha256(b"#!/bin/sh\necho vfs\n").hexdigest(), "mode": "0755",
                              "owner": ME, "group": MYGROUP}
    assert states[UNIT]["mode"] == "0644"
    assert states[RULE] == {"type": "other"}
    assert states["/etc/absent"] is None
    with pytest.raises(hf.HostFilesError, match="'etc/x' is not an absolute path"):
        hf.inspect(["etc/x"], str(tmp_path))


def test_pending_agrees_with_the_module_in_every_state(tools):
    """Whatever the disk holds, pending() is empty exactly when host_files
    (check mode) would change nothing: the skip never hides a change."""
    units = ["gpufabric-sriov.service"]
    files = _files()
    real_script = os.path.join(tools["root"], SCRIPT.lstrip("/"))
    steps = [
        ("empty tree", lambda: None),
        ("after an apply", lambda: _call(_args(tools, files))),
        ("content edited", lambda: open(real_script, "a").write("# edited\n")),
        ("put back", lambda: _call(_args(tools, files))),
        ("mode changed", lambda: os.chmod(real_script, 0o700)),
        ("put back", lambda: _call(_args(tools, files))),
        ("unit disabled", lambda: open(tools["log"].parent / "enabled", "w").close()),
        ("put back", lambda: _call(_args(tools, files))),
        ("file removed", lambda: os.unlink(real_script)),
        ("put back", lambda: _call(_args(tools, files))),
    ]
    seen = []
    for name, step in steps:
        step()
        states, enabled = _inspect_and_units(tools, files, units)
        would = _call(_args(tools, files, units), check=True)["changed"]
        left = hf.pending(files, states, units, enabled)
        assert bool(left) == would, (name, left)
        seen.append((name, left))
    assert seen[1] == ("after an apply", [])
    assert seen[2] == ("content edited", [SCRIPT + ": content"])
    assert seen[4] == ("mode changed", [SCRIPT + ": mode"])
    assert seen[6] == ("unit disabled", ["gpufabric-sriov.service: not enabled"])
    assert seen[8] == ("file removed", [SCRIPT + ": absent"])


MODULES_LOAD = "/etc/modules-load.d/gpufabric-rdma.conf"


def test_inspect_dir_lists_the_conf_files_only(tmp_path):
    assert hf.inspect_dir("/etc/modules-load.d", root=str(tmp_path)) == {}
    d = tmp_path / "etc/modules-load.d"
    d.mkdir(parents=True)
    (d / "gpufabric-rdma.conf").write_text("mlx5_ib\n")
    (d / "other.conf").write_text("br_netfilter\n")
    (d / "README").write_text("not read at boot\n")
    got = hf.inspect_dir("/etc/modules-load.d/", root=str(tmp_path))
    assert sorted(got) == [MODULES_LOAD, "/etc/modules-load.d/other.conf"]
    assert got[MODULES_LOAD] == hf.inspect([MODULES_LOAD], str(tmp_path))[MODULES_LOAD]
    with pytest.raises(hf.HostFilesError, match="'etc/modules-load.d' is not an absolute directory"):
        hf.inspect_dir("etc/modules-load.d", root=str(tmp_path))


def test_pending_over_a_directory_listing_agrees_with_the_module(tools):
    """Layer 5 judges its modules-load file from the listing every NIC reading
    carries: absent, applied, edited, re-moded and removed give the module's answer."""
    files = [{"path": MODULES_LOAD, "content": "mlx5_core\nmlx5_ib\n", "mode": "0644", "owner": ME, "group": MYGROUP}]
    real = os.path.join(tools["root"], MODULES_LOAD.lstrip("/"))
    steps = [
        ("no directory", lambda: None),
        ("after an apply", lambda: _call(_args(tools, files, ()))),
        ("content edited", lambda: open(real, "a").write("# edited\n")),
        ("put back", lambda: _call(_args(tools, files, ()))),
        ("mode changed", lambda: os.chmod(real, 0o600)),
        ("put back", lambda: _call(_args(tools, files, ()))),
        ("file removed", lambda: os.unlink(real)),
    ]
    seen = []
    for name, step in steps:
        step()
        listing = hf.inspect_dir("/etc/modules-load.d", root=tools["root"])
        would = _call(_args(tools, files, ()), check=True)["changed"]
        left = hf.pending(files, listing)
        assert bool(left) == would, (name, left)
        seen.append(left)
    assert seen == [[MODULES_LOAD + ": not read"], [], [MODULES_LOAD + ": content"], [], [MODULES_LOAD + ": mode"], [],
                    [MODULES_LOAD + ": not read"]]


def test_pending_counts_what_was_not_read_as_a_change():
    files = [{"path": UNIT, "content": "x\n", "mode": "0644"}]
    assert hf.pending(files, {}, [], {}) == [UNIT + ": not read"]
    assert hf.pending(files, None, ["u.service"], None) == [UNIT + ": not read", "u.service: not read"]
    assert hf.pending(files, {UNIT: {"type": "other"}}) == [UNIT + ": not a regular file"]
    import hashlib
    same = {UNIT: {"sha256": hashlib.sha256(b"x\n").hexdigest(), "mode": "0644", "owner": "root", "group": "root"}}
    assert hf.pending(files, same) == []
    assert hf.pending([dict(files[0], owner="nobody", mode="0600")], same) == [UNIT + ": mode, owner"]
    with pytest.raises(hf.HostFilesError, match=r"files\[0\] \(/etc/x\): mode must be an octal string"):
        hf.pending([{"path": "/etc/x", "content": "", "mode": "rw"}], {"/etc/x": same[UNIT]})


def _action_runs(tmp_path, cases):
    """Each case's host_files task in one local play (check mode) beside a
    templates/ directory: [(its registered answer, the systemctl calls it
    made)], in the order of the cases. A case is a dict of files and, as
    wanted, inspected (a reading), wanted (the template's value, 7), units
    and diff; each task has its own systemctl stand-in."""
    from local_playbook import run_check, stand_ins, write_play
    play_dir = tmp_path / "play"
    (play_dir / "templates").mkdir(parents=True)
    (play_dir / "templates" / "x.conf.j2").write_text("value={{ wanted }}\n")
    tasks, bindirs = [], []
    for n, case in enumerate(cases):
        bindir = play_dir / ("bin%d" % n)
        stand_ins(bindir, {"systemctl": 'echo "$*" >> %s/systemctl.calls' % bindir})
        bindirs.append(bindir)
        args = {"files": case["files"], "systemctl": str(bindir / "systemctl"),
                "enable_units": list(case.get("units", ()))}
        if "inspected" in case:
            args["inspected"] = case["inspected"]
        tasks.append("""\
    - name: Install, case %d
      gpufabric.stack.host_files: %s
      vars: {wanted: %d}
      diff: %s
      register: put%d
      ignore_errors: true
""" % (n, json.dumps(args), case.get("wanted", 7), json.dumps(case.get("diff", False)), n))
    out = play_dir / "out.json"
    answers = ", ".join("put%d" % n for n in range(len(cases)))
    run_check(write_play(play_dir / "pb.yml", "".join(tasks) + """\
    - name: Save them
      ansible.builtin.copy: {content: "{{ [%s] | to_json }}", dest: %s, mode: "0644"}
      check_mode: false
""" % (answers, out)), bindirs[0])
    got = []
    for answer, bindir in zip(json.loads(out.read_text()), bindirs):
        calls = bindir / "systemctl.calls"
        got.append((answer, calls.read_text().splitlines() if calls.exists() else []))
    return got


def test_the_action_renders_templates_and_runs_nothing_when_the_reading_agrees(tmp_path):
    conf = tmp_path / "etc" / "x.conf"
    conf.parent.mkdir()
    conf.write_text("value=7\n")
    conf.chmod(0o644)
    files = [{"path": str(conf), "template": "x.conf.j2", "mode": "0644", "owner": ME, "group": MYGROUP}]
    reading = {"files": hf.inspect([str(conf)]), "units": {}}
    (same, calls), (other, _), (enabled, enabled_calls), (unit, unit_calls), (unread, _), (none, _) = _action_runs(
        tmp_path, [{"files": files, "inspected": reading},
                   # another value renders another content
                   {"files": files, "inspected": reading, "wanted": 8},
                   # a unit the reading read, one it did not, a file it did not, no reading at all
                   {"files": files, "inspected": dict(reading, units={"x.service": True}), "units": ["x.service"]},
                   {"files": files, "inspected": reading, "units": ["x.service"]},
                   {"files": [dict(files[0], path=str(conf) + ".new")], "inspected": reading},
                   {"files": files}])
    assert same["skipped"] is True and same["changed"] is False and same["module_executions"] == 0, same
    assert same["skip_reason"] == "every file and unit is as the reading of the host shows"
    assert same["files"] == [{"path": str(conf), "state": "unchanged", "changes": []}] and calls == []
    # another value renders another content: the module runs (check mode) and names it
    assert "skipped" not in other and other["module_executions"] == 1, other
    assert other["changed"] is True and other["written"] == [str(conf)]
    assert other["files"] == [{"path": str(conf), "state": "updated", "changes": ["content"]}]
    # a unit the reading did not read, or no reading at all: the module runs
    assert enabled["module_executions"] == 0 and enabled_calls == []
    assert unit["module_executions"] == 1 and unit_calls == ["is-enabled x.service"], unit
    assert unread["module_executions"] == 1 and unread["written"] == [str(conf) + ".new"], unread
    assert none["module_executions"] == 1 and none["changed"] is False and "skipped" not in none, none


def test_the_action_names_a_file_with_both_or_a_bad_template(tmp_path):
    (both, _), (gone, _), (empty, _), (neither, _) = _action_runs(tmp_path, [
        {"files": [{"path": "/etc/x.conf", "template": "x.conf.j2", "content": "a"}]},
        {"files": [{"path": "/etc/x.conf", "template": "missing.j2"}]},
        {"files": [{"path": "/etc/x.conf", "template": ""}]},
        {"files": [{"path": "/etc/x.conf"}]}])
    assert both["failed"] is True and both["msg"] == "files[0] (/etc/x.conf): give content or template, not both"
    assert gone["failed"] is True and gone["msg"].startswith("template missing.j2: "), gone
    assert empty["failed"] is True and "template must be a template's name" in empty["msg"]
    # neither: the module's normalize names it, before anything is written
    assert neither["failed"] is True and neither["msg"].startswith("files[0] (/etc/x.conf): no content"), neither


def test_inspected_names_the_option_of_a_relative_path():
    class FakeModule:
        params = {"inspect_files": ["/etc/ok", "etc/x"], "inspect_units": []}
    with pytest.raises(hf.HostFilesError, match=r"^inspect_files: 'etc/x' is not an absolute path$"):
        hf.inspected(FakeModule())


def test_inspected_takes_the_units_already_read_and_asks_the_others():
    asked = []

    class FakeModule:
        params = {"inspect_files": [], "inspect_units": ["a.service", "b.service", "c.service"]}

        def get_bin_path(self, tool):
            return "/bin/" + tool

        def run_command(self, argv):
            asked.append(argv[-1])
            return 0, "enabled\n", ""
    got = hf.inspected(FakeModule(), unit_states={"a.service": "static", "b.service": "disabled"})
    assert got["units"] == {"a.service": True, "b.service": False, "c.service": True}
    assert asked == ["c.service"]
    # is-enabled's exit status and answer, per UnitFileState (systemctl(1))
    assert [s for s in ("enabled", "enabled-runtime", "linked", "alias", "masked", "static", "indirect",
                        "disabled", "generated", "transient", "bad", "") if hf.state_enabled(s)] == [
        "enabled", "enabled-runtime", "alias", "static", "generated", "transient"]


def test_one_template_renders_into_several_files_with_each_entrys_vars(tmp_path):
    """An entry's vars go over the task's variables for its template only:
    one task renders one template into several files (the render mode of the
    Kubernetes layers: one object per file)."""
    one, two = tmp_path / "out" / "one.conf", tmp_path / "out" / "sub" / "two.conf"
    files = [{"path": str(one), "template": "x.conf.j2", "vars": {"wanted": 1}, "owner": None, "group": None},
             {"path": str(two), "template": "x.conf.j2", "vars": {"wanted": 2}, "owner": None, "group": None},
             {"path": str(tmp_path / "out" / "task.conf"), "template": "x.conf.j2", "owner": None, "group": None}]
    (got, _), (bad, _), (notmap, _) = _action_runs(tmp_path, [
        {"files": files, "diff": True},
        {"files": [{"path": "/etc/x.conf", "content": "a", "vars": {"wanted": 1}}]},
        {"files": [{"path": "/etc/x.conf", "template": "x.conf.j2", "vars": [1]}]}])
    assert got["module_executions"] == 1 and got["changed"] is True, got
    # check mode: nothing written; the diff of each file shows what it would hold
    assert not one.exists()
    afters = dict((d["after_header"], d["after"]) for d in got["diff"])
    assert afters == {str(one): "value=1\n", str(two): "value=2\n", str(tmp_path / "out" / "task.conf"): "value=7\n"}
    assert bad["failed"] is True and bad["msg"] == "files[0] (/etc/x.conf): vars go with a template", bad
    assert notmap["failed"] is True and "vars must be a mapping" in notmap["msg"], notmap
