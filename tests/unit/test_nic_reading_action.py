"""The play's reading of a host's NICs (plugin_utils/nic_reading.py, kept by
the gpufabric.stack.nic_facts action): which task may take it instead of
reading again."""

import pytest

from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading as R

pytestmark = pytest.mark.layers(3, 4, 5, 6, 8)

RUN = "4242:1234567"
ANSWER = {"changed": False, "nics": [{"pci_address": "0000:3b:00.0", "vendor": "15b3"}], "cmdline": "ro quiet",
          "sysfs_root": "/run/simlab/sys", "proc_root": "/run/simlab/proc", "modules_load": {},
          "invocation": {"module_args": {"sysfs_root": "/run/simlab/sys", "proc_root": "/run/simlab/proc",
                                         "vendor": "", "inspect_files": ["/etc/default/grub.d/gpufabric.cfg"],
                                         "units": [], "files": []}}}


def keep():
    return R.kept(ANSWER, {"sysfs_root": "/run/simlab/sys", "proc_root": "/run/simlab/proc",
                           "inspect_files": ["/etc/default/grub.d/gpufabric.cfg"]}, RUN)


def test_the_kept_reading_is_the_answer_with_the_options_it_was_read_with():
    got = keep()
    assert got["nics"] == ANSWER["nics"] and got["cmdline"] == "ro quiet"
    assert "invocation" not in got and "changed" not in got
    assert got["options"]["inspect_files"] == ["/etc/default/grub.d/gpufabric.cfg"]
    assert got["options"]["vendor"] == ""


def test_no_reading_is_kept_from_a_failure_or_a_skip():
    assert R.kept({"failed": True, "msg": "no sysfs"}, {}, RUN) is None
    assert R.kept({"unreachable": True}, {}, RUN) is None
    assert R.kept({"skipped": True, "changed": False}, {}, RUN) is None
    assert R.kept(None, {}, RUN) is None


def test_a_later_layer_under_the_same_sysfs_takes_it():
    got = keep()
    # layers 4, 5 and 9 give the sysfs root only
    assert R.answers(got, {"sysfs_root": "/run/simlab/sys"}, RUN)
    assert R.answers(got, {"sysfs_root": "/run/simlab/sys/", "reuse": True}, RUN)
    # layer 3's second read gives the proc root too
    assert R.answers(got, {"sysfs_root": "/run/simlab/sys", "proc_root": "/run/simlab/proc"}, RUN)


def test_a_task_that_wants_something_else_reads_again():
    got = keep()
    assert not R.answers(got, {"sysfs_root": "/sys"}, RUN)
    assert not R.answers(got, {}, RUN)  # /sys by default
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys", "proc_root": "/proc"}, RUN)
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys", "vendor": "15b3"}, RUN)
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys", "units": ["gpufabric-sriov.service"]}, RUN)
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys", "inspect_files": ["/etc/other"]}, RUN)


def test_no_reading_or_a_forgotten_one_answers_nothing():
    assert not R.answers(None, {"sysfs_root": "/sys"}, RUN)
    assert not R.answers({}, {"sysfs_root": "/sys"}, RUN)
    assert not R.answers({"msg": "x"}, {"sysfs_root": "/sys"}, RUN)


def test_a_reading_of_an_earlier_run_answers_nothing():
    # a fact cache (fact_caching = jsonfile) keeps the fact between runs
    got = keep()
    assert got["run"] == RUN
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys"}, "4343:7654321")
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys"}, "")


LAYER5 = {"stack": {"module": "mlx5_core", "flavor": "inbox"}, "gpudirect": {"mode": "auto"},
          "pcie": {"topo": True}, "lldp": True}


def test_a_read_with_a_later_layers_options_answers_that_layer():
    """Layer 3 reads with layer 5's options (also): the reading it keeps then
    answers layer 5's read and layer 9's, not only its own."""
    layer3 = {"sysfs_root": "/run/simlab/sys", "proc_root": "/run/simlab/proc", "acs": {"p2p": "auto"}}
    options = R.with_also(layer3, LAYER5)
    assert options == dict(layer3, **LAYER5) and "also" not in options
    answer = dict(ANSWER, invocation={"module_args": dict(ANSWER["invocation"]["module_args"], **options)})
    got = R.kept(answer, options, RUN)
    assert R.answers(got, dict(LAYER5, sysfs_root="/run/simlab/sys", reuse=True), RUN)
    assert R.answers(got, {"sysfs_root": "/run/simlab/sys", "lldp": True, "pcie": {"topo": True},
                           "gpudirect": {"mode": "auto"}}, RUN)
    # without them, layer 5 reads again
    plain = R.kept(ANSWER, layer3, RUN)
    assert not R.answers(plain, dict(LAYER5, sysfs_root="/run/simlab/sys"), RUN)
    # nothing asked, nothing added
    assert R.with_also(layer3, None) == layer3 and R.with_also(layer3, {}) == layer3


@pytest.mark.parametrize("also, message", [
    (["lldp"], r"takes a dict of nic_facts options, got \['lldp'\]"),
    ({"reuse": True}, "reuse is not a reading option"),
    ({"also": {}}, "also is not a reading option"),
    ({"sysfs_root": "/sys"}, r"sysfs_root is '/sys', where the task gives '/run/simlab/sys'"),
])
def test_also_that_is_no_set_of_reading_options_or_contradicts_the_task_is_an_error(also, message):
    with pytest.raises(ValueError, match=message):
        R.with_also({"sysfs_root": "/run/simlab/sys"}, also)


def test_the_doctors_merged_read_and_also_join_options_the_same_way():
    """One merge of reading options (nic_reading.join): the doctor's one read
    of the node for every layer (merge_reads) and a task's `also` join list
    options such as `files`, and fail on another value of any other option,
    naming who gave it."""
    calls = R.merge_reads([
        (3, {"sysfs_root": "/run/simlab/sys", "files": ["/etc/default/grub"], "acs": {"p2p": "auto"}}),
        (5, {"sysfs_root": "/run/simlab/sys/", "files": ["/etc/modprobe.d/x.conf", "/etc/default/grub"],
             "stack": {"module": "mlx5_core"}}),
        (8, {"qos": {"pfs": []}}),                                    # no root: joins the first call
        (6, {"sysfs_root": "/other/sys", "vf_settings": True}),
    ])
    assert list(calls) == ["/run/simlab/sys", "/other/sys"]
    assert calls["/run/simlab/sys"] == {
        "sysfs_root": "/run/simlab/sys", "files": ["/etc/default/grub", "/etc/modprobe.d/x.conf"],
        "acs": {"p2p": "auto"}, "stack": {"module": "mlx5_core"}, "qos": {"pfs": []}}
    assert calls["/other/sys"] == {"sysfs_root": "/other/sys", "vf_settings": True}
    with pytest.raises(ValueError, match=r"layers 3 and 5 want different nic_facts acs on /sys: "
                                         r"\{'p2p': 'auto'\} and \{'p2p': 'off'\}"):
        R.merge_reads([(3, {"acs": {"p2p": "auto"}}), (5, {"acs": {"p2p": "off"}})])
    # also: the task's files and a later layer's joined, as the doctor joins them
    task = {"sysfs_root": "/sys", "files": ["/etc/default/grub"]}
    got = R.with_also(task, {"files": ["/etc/modprobe.d/x.conf", "/etc/default/grub"], "lldp": True})
    assert got == {"sysfs_root": "/sys", "files": ["/etc/default/grub", "/etc/modprobe.d/x.conf"], "lldp": True}
    assert task == {"sysfs_root": "/sys", "files": ["/etc/default/grub"]}     # the task's own options untouched


def test_a_reading_taken_with_more_files_and_units_answers_a_task_asking_for_some():
    """List options (inspect_files, units, ...) join across layers' wishes,
    and the reading answers a task asking for any part of them: layer 8's
    boot files ride on layer 3's read of its drop-in."""
    options = R.with_also({"sysfs_root": "/run/simlab/sys", "inspect_files": ["/etc/default/grub.d/gpufabric.cfg"]},
                          {"inspect_files": ["/usr/local/libexec/gpufabric/roce-qos.sh"],
                           "inspect_units": ["gpufabric-roce-qos.service"]})
    assert options["inspect_files"] == ["/etc/default/grub.d/gpufabric.cfg", "/usr/local/libexec/gpufabric/roce-qos.sh"]
    got = R.kept(dict(ANSWER, invocation={"module_args": dict(options, vendor="")}), options, RUN)
    assert R.answers(got, {"sysfs_root": "/run/simlab/sys", "inspect_files": ["/usr/local/libexec/gpufabric/roce-qos.sh"],
                           "inspect_units": ["gpufabric-roce-qos.service"]}, RUN)
    assert R.answers(got, {"sysfs_root": "/run/simlab/sys", "inspect_files": ["/etc/default/grub.d/gpufabric.cfg/"]}, RUN)
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys", "inspect_files": ["/etc/other"]}, RUN)
    assert not R.answers(got, {"sysfs_root": "/run/simlab/sys", "inspect_units": ["gpufabric-sriov.service"]}, RUN)


def _nic_facts_action():
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible_collections.gpufabric.stack.plugins.action.nic_facts import ActionModule
    action = object.__new__(ActionModule)
    action._loader = DataLoader()
    action._templar = Templar(loader=action._loader)
    return action


def test_also_layers_adds_what_the_doctors_check_of_the_layer_reads():
    """nic_facts' also_layers: layer 8's wish is the roce_host check's reads
    against the role's intent (its defaults under the inventory); a layer
    whose variables do not resolve, or that reads under another sysfs root,
    is left out and named; a number that is no layer is an error."""
    from ansible.errors import AnsibleActionFail
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import roce_host
    action = _nic_facts_action()
    nics = [{"match": {"name": "enp59s0f0np0"}, "num_vfs": 4}]
    roce = {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp", "host_mtu": 9000}
    task_vars = {"inventory_hostname": "node01", "gpufabric_nics": nics, "gpufabric_roce": roce,
                 "gpufabric_sysfs_root": "/run/simlab/sys", "omit": "__omit__"}
    mine = {"sysfs_root": "/run/simlab/sys", "inspect_files": ["/etc/default/grub.d/gpufabric.cfg"]}
    options, left = action._with_layers(dict(mine), [8], task_vars, "node01")
    assert left == {}
    assert options["qos"] == dict(roce_host.options({"roce_host_pfs": [{"name": "enp59s0f0np0"}],
                                                     "roce_host_roce": roce, "roce_host_roce_mode": 2,
                                                     "roce_host_tos": 0, "roce_host_rdma_port": 1}, "node01"))
    assert options["inspect_files"] == ["/etc/default/grub.d/gpufabric.cfg", "/usr/local/libexec/gpufabric/roce-qos.sh",
                                        "/etc/systemd/system/gpufabric-roce-qos.service"]
    assert options["inspect_units"] == ["gpufabric-roce-qos.service"]
    assert options["units"] == ["gpufabric-roce-qos.service"]
    # no RoCE intent in the inventory: layer 8 reads for itself, the read goes on
    bare = dict((k, v) for k, v in task_vars.items() if k != "gpufabric_roce")
    options, left = action._with_layers(dict(mine), [8], bare, "node01")
    assert options == mine and list(left) == [8] and "gpufabric_roce" in left[8]
    # layer 8 under another sysfs root than this read's
    options, left = action._with_layers(dict(mine, sysfs_root="/sys"), [8], task_vars, "node01")
    assert options == dict(mine, sysfs_root="/sys") and "sysfs_root" in left[8]
    with pytest.raises(AnsibleActionFail, match="node01: nic_facts also_layers: 16 is not a layer"):
        action._with_layers(dict(mine), [16], task_vars, "node01")


class _Task(object):
    def __init__(self, args, register=None, loop=None):
        self.args, self.register, self.loop, self.loop_with = args, register, loop, None
        self.async_val, self.check_mode, self.action = 0, False, "gpufabric.stack.nic_facts"


def _run(task, task_vars, executed):
    """The nic_facts action's run of ``task`` with ``task_vars``; each module
    execution is appended to ``executed`` and answers ANSWER."""
    from types import SimpleNamespace
    action = _nic_facts_action()
    action._task = task
    action._connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/tmp/x"))
    action._supports_async = action._supports_check_mode = True

    def execute(module_name, module_args, task_vars):
        executed.append(module_args)
        return dict(ANSWER, invocation={"module_args": dict(ANSWER["invocation"]["module_args"], **module_args)})
    action._execute_module = execute
    return action.run(task_vars=task_vars)


def _register(host_vars, task, result):
    """What the strategy does with an action's result: the fact, the
    registered variable."""
    if "ansible_facts" in result:
        host_vars.setdefault("ansible_facts", {}).update(result["ansible_facts"])
    if task.register:
        host_vars[task.register] = result


def test_the_fact_names_the_registered_answer_and_holds_nothing_of_the_reading():
    """A fact is copied for every task and host (and a fact cache decodes it
    from JSON each time): the reading stays in the answer the task
    registers, the fact names that variable. A later task with reuse takes
    it without executing; once the variable holds another answer, or a read
    registers nothing, the next task reads again."""
    import json
    host, executed = {"inventory_hostname": "node01"}, []
    read = {"sysfs_root": "/run/simlab/sys", "proc_root": "/run/simlab/proc"}
    first = _Task(dict(read, reuse=True), register="kernel_read")
    result = _run(first, dict(host), executed)
    _register(host, first, result)
    fact = host["ansible_facts"][R.FACT]
    assert set(fact) == {"run", "var", "id"} and fact["var"] == "kernel_read" and len(json.dumps(fact)) < 200
    assert result[R.READING_ID] == fact["id"] and result[R.READ_WITH]["proc_root"] == "/run/simlab/proc"
    assert R.current(host)["nics"] == ANSWER["nics"] and R.current(host)["options"] == result[R.READ_WITH]
    assert len(executed) == 1
    # layer 5 asks for less: answered from the registered answer, nothing executed
    later = _Task({"sysfs_root": "/run/simlab/sys", "reuse": True}, register="rdma_drivers_read")
    reused = _run(later, dict(host), executed)
    _register(host, later, reused)
    assert reused["reused"] is True and reused["nics"] == ANSWER["nics"] and len(executed) == 1
    assert reused[R.READING_ID] == fact["id"]
    # the same variable registered again with that answer is still the reading
    _register(host, first, dict(reused))
    assert R.current(host) is not None
    # ... but not once it holds another answer (a skipped run of the task)
    host["kernel_read"] = {"skipped": True, "changed": False}
    assert R.current(host) is None
    again = _run(later, dict(host), executed)
    assert again["reused"] is False and len(executed) == 2
    # a read whose task registers nothing drops the reading: it is not the node's any more
    _register(host, first, _run(first, dict(host), executed))
    assert R.current(host) is not None
    unregistered = _Task(dict(read))
    _register(host, unregistered, _run(unregistered, dict(host), executed))
    assert host["ansible_facts"][R.FACT] is None and R.current(host) is None
    # an answer of a loop is a list of answers: no reading, and the one before is dropped
    _register(host, first, _run(first, dict(host), executed))
    assert R.current(host) is not None
    looped = _Task(dict(read), register="each", loop=["a"])
    _register(host, looped, _run(looped, dict(host), executed))
    assert host["ansible_facts"][R.FACT] is None and R.current(host) is None


def test_a_judged_action_that_changed_the_node_drops_the_plays_reading():
    """sriov_vf, mlx_config and roce_qos (plugin_utils/judged_action.py): a
    run that changed the node clears the reading's fact, as nic_facts'
    forget does, so the next layer of the play reads the node again; a run
    that changed nothing keeps it."""
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import judged_action
    changed = judged_action.forget_when_changed({"changed": True, "ansible_facts": {"other": 1}})
    assert changed["ansible_facts"] == {"other": 1, R.FACT: None}
    assert R.current({"ansible_facts": changed["ansible_facts"]}) is None
    kept = judged_action.forget_when_changed({"changed": False})
    assert "ansible_facts" not in kept
