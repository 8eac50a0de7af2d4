"""Layer 8 judged from the play's reading of the node: the roce_qos action
(plugins/action/roce_qos.py) answers a merged run from the gathered QoS that
the kernel layer's first read carried (nic_facts also_layers), executing
nothing, only when that answer is what the module itself would return on the
same host; any other run (a drift, other options, an earlier run's reading)
executes the module. The host is test_roce_qos_dcb's inbox-mlx5 stand-in."""

import pytest

from ansible_collections.gpufabric.stack.plugins.action import roce_qos as action
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
from ansible_collections.gpufabric.stack.plugins.plugin_utils import nic_reading
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import roce_host as roce_host_check
from test_roce_qos_dcb import INTENT, PF, Mlx5Dcb, host, params  # noqa: F401 (host: the fixture)

pytestmark = pytest.mark.layers(8)

RUN = "4242:1234567"
SCRIPT, UNIT = "/usr/local/libexec/gpufabric/roce-qos.sh", "/etc/systemd/system/gpufabric-roce-qos.service"


def task_args(t, **kw):
    """The role's task: roce_qos' merged run with the boot files inspected."""
    args = dict(params(t), config_name="gpufabric_roce", roce_mode=2, tos=0,
                inspect_files=[SCRIPT, UNIT], inspect_units=["gpufabric-roce-qos.service"])
    args.update(kw)
    return args


def reading_of(t, module, args, run=RUN, extra_files=()):
    """The kept reading of a nic_facts run whose options carry layer 8's wish
    as the roce_host check reads it: its qos answer computed by the module
    code nic_facts runs (roce_qos_host.online, state gathered)."""
    wish = action.wish(args)
    options = nic_reading.with_also({"sysfs_root": t.root, "proc_root": "/proc",
                                     "inspect_files": ["/etc/default/grub.d/gpufabric.cfg"] + list(extra_files)}, wish)
    qos = roce_qos_host.online(module, dict(options["qos"], state="gathered", sysfs_root=t.root))
    files = dict((path, {"sha256": "ab" * 32, "mode": "0644", "owner": "root", "group": "root"})
                 for path in options["inspect_files"])
    answer = {"changed": False, "nics": [{"name": PF}], "sysfs_root": t.root, "qos": qos,
              "inspected": {"files": files, "units": {"gpufabric-roce-qos.service": True}},
              "invocation": {"module_args": dict(options, vendor="")}}
    return nic_reading.kept(answer, options, run)


def test_a_converged_node_is_answered_as_the_module_answers_it(host):
    module = Mlx5Dcb(host.root)
    args = task_args(host)
    assert roce_qos_host.online(module, dict(args))["changed"] is True  # converge first
    reading = reading_of(host, module, args)
    got = action.judged(reading, args, RUN)
    module_run = roce_qos_host.online(module, dict(args))
    assert module_run["changed"] is False and module_run["commands"] == []
    inspected = got.pop("inspected")
    assert got == module_run
    # the boot files the task asked about, as the reading has them, and not the kernel's drop-in
    assert sorted(inspected["files"]) == sorted([SCRIPT, UNIT])
    assert inspected["units"] == {"gpufabric-roce-qos.service": True}


def test_a_drift_or_a_failed_read_runs_the_module(host):
    module = Mlx5Dcb(host.root)
    args = task_args(host)
    reading = reading_of(host, module, args)  # factory: trust pcp, no PFC
    assert reading["qos"]["drift"] and action.judged(reading, args, RUN) is None
    assert roce_qos_host.merged_from_gathered({"failed": True, "msg": "mlnx_qos not found"}, "node01") is None
    assert roce_qos_host.merged_from_gathered(None, "node01") is None
    # a reading without the intent (the qos read of another config) tells nothing
    assert roce_qos_host.merged_from_gathered({"drift": [], "before": {}}, "node01") is None


def test_a_run_the_reading_was_not_taken_for_runs_the_module(host):
    module = Mlx5Dcb(host.root)
    args = task_args(host)
    roce_qos_host.online(module, dict(args))
    reading = reading_of(host, module, args)
    assert action.judged(reading, args, RUN) is not None
    # another intent, another TOS, a boot file the read did not inspect, another sysfs root
    assert action.judged(reading, dict(args, config=dict(INTENT, priority=4)), RUN) is None
    assert action.judged(reading, dict(args, tos=96), RUN) is None
    assert action.judged(reading, dict(args, inspect_files=[SCRIPT, "/etc/other"]), RUN) is None
    assert action.judged(reading, dict(args, sysfs_root="/sys"), RUN) is None
    # a reading of an earlier ansible-playbook run (a fact cache keeps it), or none
    assert action.judged(reading, args, "4343:7654321") is None
    assert action.judged(None, args, RUN) is None
    # states that do not converge, and the rendered state's driver: never from a reading
    for other in ({"state": "gathered"}, {"state": "rendered"}, {"driver": "ofed"}):
        assert action.wish(dict(args, **other)) is None


def test_the_warnings_of_what_the_inbox_driver_cannot_set_are_the_modules():
    answer = {"intent": {}, "drift": [], "not_settable": ["enp59s0f0np0 ECN roce_np on priority 3 off vs intent on"],
              "before": {"enp59s0f0np0": {"trust": "dscp"}}, "gathered": {}, "fix_commands": [], "pfs": []}
    got = roce_qos_host.merged_from_gathered(answer, "node01")
    assert got["warnings"] == [roce_qos_host.not_settable_warning("node01", answer["not_settable"][0])]
    assert got["after"] == got["before"] and "gathered" not in got and "fix_commands" not in got


def test_the_doctors_layer_8_read_answers_the_roles_task(host):
    """What the roce_host check reads (nic_facts also_layers puts it in the
    kernel layer's read) is what the role's QoS task asks: the same qos
    options, the boot files and unit the task inspects."""
    intent = {"roce_host_pfs": [{"name": PF}], "roce_host_roce": INTENT, "roce_host_roce_mode": 2,
              "roce_host_tos": 0, "roce_host_rdma_port": 1, "roce_host_firmware_query": False,
              "roce_host_qos_tool": "auto", "roce_host_sysfs_root": host.root, "roce_host_persist": True,
              "roce_host_unit_name": "gpufabric-roce-qos", "roce_host_boot_paths": [SCRIPT, UNIT],
              "roce_host_boot_units": ["gpufabric-roce-qos.service"]}
    check_wish = roce_host_check.reads(intent, "node01")["nic_facts"]
    args = task_args(host)
    task_wish = action.wish(args)
    assert task_wish["qos"] == check_wish["qos"]
    assert all(nic_reading._covers(check_wish.get(k), task_wish[k]) for k in ("inspect_files", "inspect_units"))
