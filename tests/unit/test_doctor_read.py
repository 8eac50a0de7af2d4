"""The doctor's one read of a GPU node: nic_facts with firmware, qos and
runtime answers what mlx_config, roce_qos (gathered) and
container_runtime_facts answer on the same node, so the checks of layers 4,
8 and 10 can judge it without a call of their own. Run by ansible-playbook
on localhost with stand-in tools; the twin tests run it on a rack."""

import json

import yaml

from local_playbook import run_check, stand_ins, write_play

TOOLS = {
    "systemctl": 'echo "Id=containerd.service"; echo "LoadState=loaded"; echo "ActiveState=inactive"; '
                 'echo "ExecMainStartTimestampMonotonic=0"',
    "containerd": 'echo "containerd: no config here" >&2; exit 1',
    "sysctl": 'case "$2" in net.ipv4.ip_forward) echo 1 ;; *) echo "sysctl: cannot stat $2" >&2; exit 255 ;; esac',
}
RUNTIME = {"config_path": "/etc/containerd/config.toml", "modules": ["overlay", "br_netfilter"],
           "sysctls": {"net.ipv4.ip_forward": 1, "net.bridge.bridge-nf-call-iptables": 1},
           "cni_bin_dir": "/opt/cni/bin", "nvidia_runtime_path": "/usr/bin/nvidia-container-runtime"}
QOS = {"node": "node01", "pfs": [{"name": "enp59s0f0np0"}],
       "config": {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp",
                  "ecn": {"min_kbytes": 150, "max_kbytes": 1500, "probability": 100}, "host_mtu": 9000,
                  "roce_mode": 2},
       "rdma_port": 1, "firmware_query": True}


def read_both(tmp_path, nic_facts, others):
    """nic_facts with these options and each of `others` ({name: (module,
    args)}) in one play; {name: result} with nic_facts' as 'read'."""
    bindir = stand_ins(tmp_path / "bin", TOOLS)
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True, exist_ok=True)
    sysfs = str(tmp_path / "sys")
    tasks = [dict(name="read", **{"gpufabric.stack.nic_facts": dict(nic_facts, sysfs_root=sysfs)})]
    tasks += [dict(name=name, **{module: dict(args, sysfs_root=sysfs)}) for name, (module, args) in others.items()]
    for t in tasks:
        t.update(register="r_" + t["name"], ignore_errors=True)
    out = tmp_path / "out.json"
    names = ["read"] + list(others)
    tasks.append({"name": "save", "ansible.builtin.copy": {
        "content": "{{ %s | to_json }}" % ("{" + ", ".join("'%s': r_%s" % (n, n) for n in names) + "}"),
        "dest": str(out), "mode": "0644"}, "check_mode": False})
    run_check(write_play(tmp_path / "pb.yml", "\n".join("    " + line for line in
                                                         yaml.safe_dump(tasks, sort_keys=False).splitlines()) + "\n"),
              bindir)
    return json.loads(out.read_text())


def test_the_read_takes_containerd_as_container_runtime_facts_does(tmp_path):
    r = read_both(tmp_path, {"runtime": RUNTIME}, {"crf": ("gpufabric.stack.container_runtime_facts", RUNTIME)})
    assert r["read"]["runtime"] == r["crf"]["runtime"]
    assert r["read"]["runtime"]["sysctls"] == {"net.bridge.bridge-nf-call-iptables": [None, "1"],
                                               "net.ipv4.ip_forward": ["1", "1"]}
    # the options it read with, defaults filled in, for the check to compare with its own
    assert r["read"]["runtime_options"] == dict(RUNTIME, unit="containerd",
                                                kubelet_config_path="/var/lib/kubelet/config.yaml")


def test_the_read_takes_the_qos_as_roce_qos_gathers_it_and_fails_alike(tmp_path):
    r = read_both(tmp_path, {"qos": QOS}, {"qos": ("gpufabric.stack.roce_qos", dict(QOS, state="gathered"))})
    assert r["qos"]["failed"] and "enp59s0f0np0" in r["qos"]["msg"]
    # the read itself does not fail: the other layers still get their part
    assert not r["read"].get("failed") and r["read"]["nics"] == []
    assert r["read"]["qos"] == {"failed": True, "msg": r["qos"]["msg"]}
    assert r["read"]["qos_options"] == QOS


def test_a_pf_key_roce_qos_does_not_take_leaves_the_qos_to_roce_qos(tmp_path):
    r = read_both(tmp_path, {"qos": dict(QOS, pfs=[{"name": "enp59s0f0np0", "numvfs": 8}])}, {})
    assert not r["read"].get("failed")
    assert "qos" not in r["read"] and "qos_options" not in r["read"]


def test_the_read_takes_only_what_it_is_asked_for(tmp_path):
    r = read_both(tmp_path, {"firmware": {"match": [{"name": "enp59s0f0np0"}]}}, {})
    assert r["read"]["firmware"] == []                       # no PF on this host, so no query
    assert "runtime" not in r["read"] and "qos" not in r["read"]
    r = read_both(tmp_path, {}, {})
    assert "firmware" not in r["read"] and "runtime" not in r["read"] and "qos" not in r["read"]


PFS = [{"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "vendor_device": "15b3:1021"},
       {"name": "enp59s0f1np1", "pci_address": "0000:3b:00.1", "vendor_device": "15b3:1021"},
       {"name": "eno1", "pci_address": "0000:01:00.0", "vendor_device": "8086:1533"},
       {"name": None, "pci_address": "0000:86:00.0", "vendor_device": "15b3:101d"}]


def test_the_firmware_is_read_for_every_pf_any_key_of_any_match_selects():
    """The PFs whose firmware the read queries (sriov.select_any): a superset
    of what nic_firmware's selection keeps, so its check finds them all."""
    from ansible_collections.gpufabric.stack.plugins.module_utils.sriov import select_any
    assert select_any(PFS, [{"name": "enp59s0f0np0"}]) == ["0000:3b:00.0"]
    assert select_any(PFS, [{"pci_address": "86:00.0"}]) == ["0000:86:00.0"]              # short BDF, no driver
    assert select_any(PFS, [{"vendor_device": "15B3:1021"}]) == ["0000:3b:00.0", "0000:3b:00.1"]
    # every key of an entry counts, and entries add up
    assert select_any(PFS, [{"name": "eno1", "vendor_device": "15b3:101d"}, {"pci_address": "0000:3b:00.1"}]) \
        == ["0000:01:00.0", "0000:3b:00.1", "0000:86:00.0"]
    # nothing selected, a malformed address, no match at all: nothing read, nothing fails
    assert select_any(PFS, [{"name": "ib0"}, {"pci_address": "3b:00"}, {}, None]) == []
    assert select_any(PFS, []) == []


def test_the_doctors_read_asks_what_the_roles_checks_ask_by_default():
    """doctor_firmware, doctor_qos and doctor_runtime fall back to the
    nic_firmware, roce_host and container_runtime defaults: when they drift
    apart, every check makes its own call again."""
    from pathlib import Path

    from jinja2.nativetypes import NativeEnvironment
    roles = Path(__file__).resolve().parents[2] / "roles"

    def defaults(role):
        return yaml.safe_load((roles / role / "defaults/main.yml").read_text())
    doctor, env = defaults("doctor"), NativeEnvironment()
    env.filters["bool"] = bool

    def render(value):
        return env.from_string(value).render() if isinstance(value, str) else value
    runtime = {k: render(v) for k, v in doctor["doctor_runtime"].items()}
    cr = defaults("container_runtime")
    assert runtime == {k: cr["container_runtime_" + k] for k in runtime}
    fw = defaults("nic_firmware")
    assert render(doctor["doctor_firmware"]["tool"]) == fw["nic_firmware_tool"]
    assert render(doctor["doctor_firmware"]["flint_tool"]) == fw["nic_firmware_flint_tool"]
    rh = defaults("roce_host")
    assert render(doctor["doctor_qos"]["rdma_port"]) == rh["roce_host_rdma_port"]
    assert render(doctor["doctor_qos"]["firmware_query"]) == rh["roce_host_firmware_query"]
    assert "roce_host_roce_mode | default(%d)" % rh["roce_host_roce_mode"] in doctor["doctor_qos"]["config"]
    assert "roce_host_tos | default(%d)" % rh["roce_host_tos"] in doctor["doctor_qos"]["config"]
