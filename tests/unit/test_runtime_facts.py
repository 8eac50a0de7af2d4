"""gpufabric.stack.container_runtime_facts: what the doctor's layer 10 reads
in one module call, on a fake tree (module_utils) and as a module run by
ansible-playbook with stand-in commands in PATH."""

import json
import os
import shutil

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.container_runtime import runtime_facts as rf
from local_playbook import run_check, stand_ins, write_play

pytestmark = pytest.mark.layers(10)

SHOW = "LoadState=loaded\nActiveState=active\nActiveEnterTimestampMonotonic=600000000\n"
CTR = "Client:\n  Version:  1.6.20~ds1\n\nServer:\n  Version:  1.6.20~ds1\n"


def tree(tmp_path):
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc/stat").write_text("cpu  1 2 3\nbtime 1790000000\nprocesses 4\n")
    (root / "proc/swaps").write_text("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text("version = 2\n")
    os.utime(root / "etc/containerd/config.toml", (1790000500, 1790000500))
    (root / "opt/cni/bin").mkdir(parents=True)
    for name in ("bridge", "loopback", "host-local"):
        (root / "opt/cni/bin" / name).write_text("")
    (root / "lib/modules/6.1.0-test").mkdir(parents=True)
    (root / "lib/modules/6.1.0-test/modules.builtin").write_text("kernel/fs/overlayfs/overlay.ko\n")
    sysfs = tmp_path / "sys"
    (sysfs / "module/br_netfilter").mkdir(parents=True)
    return root, sysfs


def fake_run(answers):
    calls = []

    def run(argv):
        calls.append(argv)
        for prefix, answer in answers.items():
            if tuple(argv[:len(prefix)]) == prefix:
                return answer
        return 127, "", "%s: command not found" % argv[0]
    return run, calls


def gather(root, sysfs, run, **kw):
    args = dict(root=str(root), sysfs_root=str(sysfs), modules=["overlay", "br_netfilter", "nf_conntrack"],
                sysctls={"net.ipv4.ip_forward": 1, "net.bridge.bridge-nf-call-iptables": 1}, kernel_release="6.1.0-test")
    args.update(kw)
    return rf.gather(run, **args)


def test_a_healthy_node_in_one_pass(tmp_path):
    root, sysfs = tree(tmp_path)
    run, calls = fake_run({("systemctl", "show"): (0, SHOW, ""), ("ctr", "version"): (0, CTR, ""),
                           ("containerd",): (0, "version = 2\n[plugins]\n", ""),
                           ("sysctl", "-n", "net.ipv4.ip_forward"): (0, "1\n", ""),
                           ("sysctl", "-n", "net.bridge.bridge-nf-call-iptables"): (0, "1\n", "")})
    f = gather(root, sysfs, run)
    assert (f["unit_exists"], f["active"], f["started_at"]) == (True, "active", 1790000600.0)
    assert f["ctr_rc"] == 0 and "Server:" in f["ctr_output"]
    assert f["config_dump"] == "version = 2\n[plugins]\n" and f["config_error"] == ""
    assert f["config_mtime"] == 1790000500
    # overlay built in, br_netfilter loaded (sysfs), nf_conntrack neither
    assert f["modules"] == {"overlay": True, "br_netfilter": True, "nf_conntrack": False}
    assert f["sysctls"] == {"net.ipv4.ip_forward": ["1", "1"], "net.bridge.bridge-nf-call-iptables": ["1", "1"]}
    assert f["swaps"] == [] and f["kubelet_config"] == ""
    assert f["cni_plugins"] == ["bridge", "host-local", "loopback"] and f["nvidia_binary"] is False
    assert ["containerd", "--config", "/etc/containerd/config.toml", "config", "dump"] in calls
    assert calls[0][:3] == ["systemctl", "show", "containerd.service"]


def test_what_is_broken_is_reported_not_raised(tmp_path):
    root, sysfs = tree(tmp_path)
    (root / "proc/swaps").write_text("Filename\tType\tSize\tUsed\tPriority\n/dev/sda3  partition\t1048572\t0\t-2\n")
    (root / "var/lib/kubelet").mkdir(parents=True)
    (root / "var/lib/kubelet/config.yaml").write_text("cgroupDriver: cgroupfs\n")
    shutil.rmtree(root / "opt/cni/bin")
    run, calls = fake_run({("systemctl", "show"): (0, "LoadState=loaded\nActiveState=failed\nActiveEnterTimestampMonotonic=0\n", ""),
                       ("ctr", "version"): (1, "", 'ctr: failed to dial "/run/containerd/containerd.sock": connection refused\n'),
                       ("containerd",): (1, "", "time=x level=info\ncontainerd: failed to load TOML: (3, 1): unexpected EOF\n"),
                       ("sysctl", "-n", "net.ipv4.ip_forward"): (0, "0\n", ""),
                       ("sysctl", "-n", "net.bridge.bridge-nf-call-iptables"):
                           (255, "", "sysctl: cannot stat /proc/sys/net/bridge/bridge-nf-call-iptables: No such file\n")})
    f = gather(root, sysfs, run)
    assert f["active"] == "failed" and f["started_at"] == 0
    assert f["ctr_rc"] is None and f["ctr_output"] == "not asked: containerd.service is failed"
    assert ["ctr", "version"] not in calls
    assert f["config_dump"] == "" and f["config_error"] == "containerd: failed to load TOML: (3, 1): unexpected EOF"
    assert f["sysctls"] == {"net.ipv4.ip_forward": ["0", "1"], "net.bridge.bridge-nf-call-iptables": [None, "1"]}
    assert f["swaps"] == ["/dev/sda3"] and f["kubelet_config"] == "cgroupDriver: cgroupfs\n"
    assert f["cni_plugins"] == []


def test_no_containerd_unit_and_no_commands(tmp_path):
    root, sysfs = tree(tmp_path)
    (root / "etc/containerd/config.toml").unlink()
    run, _ = fake_run({("systemctl", "show"): (0, "LoadState=not-found\nActiveState=inactive\n"
                                                  "ActiveEnterTimestampMonotonic=0\n", "")})
    f = gather(root, sysfs, run)
    assert f["unit_exists"] is False and f["config_mtime"] == 0
    assert f["ctr_rc"] is None and f["ctr_output"] == "not asked: containerd.service is inactive"
    assert f["config_error"] == "containerd: command not found"
    f = gather(root, sysfs, run, subset=("ctr",))
    assert f["ctr_rc"] == 127 and "ctr: command not found" in f["ctr_output"]


def test_systemctl_failing_is_not_mistaken_for_a_missing_unit(tmp_path):
    root, sysfs = tree(tmp_path)
    run, _ = fake_run({("systemctl", "show"): (1, "", "System has not been booted with systemd as init system (PID 1).\n")})
    f = gather(root, sysfs, run)
    assert f["unit_exists"] is True
    assert f["active"] == "unknown (systemctl show: System has not been booted with systemd as init system (PID 1).)"


def test_a_subset_reads_only_its_part(tmp_path):
    root, sysfs = tree(tmp_path)
    run, calls = fake_run({})
    f = gather(root, sysfs, run, subset=("modules",))
    assert f == {"modules": {"overlay": True, "br_netfilter": True, "nf_conntrack": False}}
    assert calls == []      # no systemctl, ctr, containerd or sysctl for the converge path's module check


def test_the_converge_read_says_what_each_step_has_to_do(tmp_path):
    """The role's one read (not the doctor's "all"): the containerd version,
    the fstab swap lines not yet commented out, swap.target's state, the
    distribution's CNI plugins, the role's paths, the unit file state and
    the sysctls whose live value differs."""
    root, sysfs = tree(tmp_path)
    (root / "etc/fstab").write_text("UUID=1 / ext4 defaults 0 1\n/dev/sda2 none swap sw 0 0\n"
                                    "# /dev/sda3 none swap sw 0 0\n/swapfile\tnone\tswap\tsw\t0\t0\n")
    (root / "usr/lib/cni").mkdir(parents=True)
    for name in ("bridge", "portmap", "loopback"):
        (root / "usr/lib/cni" / name).write_text("")
    run, calls = fake_run({("systemctl", "show", "containerd.service"): (0, SHOW + "UnitFileState=disabled\n", ""),
                           ("systemctl", "show", "swap.target"): (0, "UnitFileState=static\n", ""),
                           ("containerd", "--version"): (0, "containerd github.com/containerd/containerd 1.6.20~ds1\n", ""),
                           ("sysctl", "-n", "net.ipv4.ip_forward"): (0, "0\n", ""),
                           ("sysctl", "-n", "net.bridge.bridge-nf-call-iptables"): (0, "1\n", "")})
    f = gather(root, sysfs, run, subset=("unit", "sysctls") + rf.CONVERGE_SUBSETS, cni_distro_dir="/usr/lib/cni",
               paths=["/opt/cni/bin", "/etc/cni/net.d"])
    assert f["unit_file_state"] == "disabled" and f["active"] == "active"
    assert f["sysctls_to_set"] == ["net.ipv4.ip_forward=1"]
    assert f["version_output"].startswith("containerd github.com/containerd/containerd 1.6.20")
    assert f["fstab_exists"] and f["fstab_swaps"] == ["/dev/sda2 none swap sw 0 0", "/swapfile\tnone\tswap\tsw\t0\t0"]
    assert f["swap_target"] == "static"
    assert f["cni_distro_plugins"] == ["bridge", "loopback", "portmap"]
    assert f["paths_exist"] == {"/opt/cni/bin": True, "/etc/cni/net.d": False}
    # the doctor's "all" reads none of it
    assert not set(rf.CONVERGE_SUBSETS) & set(rf.SUBSETS)
    # nothing answers: reported, not raised
    run, _ = fake_run({})
    f = gather(root, sysfs, run, subset=rf.CONVERGE_SUBSETS, cni_distro_dir="/nowhere")
    assert f["version_output"] == "" and f["swap_target"] == "unknown" and f["cni_distro_plugins"] == []
    assert f["paths_exist"] == {}


def test_helpers():
    assert rf.boot_time("cpu 1\nbtime 1790000000\n") == 1790000000 and rf.boot_time("") == 0
    assert rf.builtin_modules("kernel/net/bridge/br_netfilter.ko\nkernel/fs/fuse/fuse.ko.xz\nkernel/x/nf-nat.ko\n") == {
        "br_netfilter", "fuse", "nf_nat"}
    assert rf.parse_systemctl_show("A=1\nB=\nnoise\n") == {"A": "1", "B": ""}


STUBS = {
    "systemctl": "printf 'LoadState=loaded\\nActiveState=active\\nActiveEnterTimestampMonotonic=5000000\\n'",
    "ctr": "printf 'Client:\\n  Version:  1.7.24\\n\\nServer:\\n  Version:  1.7.24\\n'",
    "containerd": "[ \"$1 $2 $3 $4\" = '--config /etc/containerd/config.toml config dump' ] && printf 'version = 2\\n'",
    "sysctl": "[ \"$1\" = -n ] && case \"$2\" in net.ipv4.ip_forward) echo 1;; *) echo \"sysctl: cannot stat $2\" >&2; exit 255;; esac",
}


def test_the_module_runs_and_changes_nothing(tmp_path):
    bindir = stand_ins(tmp_path / "bin", STUBS)
    out = tmp_path / "out.json"
    pb = write_play(tmp_path / "pb.yml", """\
    - name: Read the runtime
      gpufabric.stack.container_runtime_facts:
        sysfs_root: %s
        modules: [gpufabric_no_such_module]
        sysctls: {net.ipv4.ip_forward: 1, net.bridge.bridge-nf-call-iptables: 1}
        cni_bin_dir: %s
      register: rt
    - name: Read the modules only
      gpufabric.stack.container_runtime_facts:
        gather_subset: [modules]
        sysfs_root: %s
        modules: [gpufabric_no_such_module]
      register: mods
    - name: Save it
      ansible.builtin.copy:
        content: "{{ rt | combine({'subset_modules': mods}) | to_json }}"
        dest: %s
        mode: "0644"
      check_mode: false
""" % (tmp_path, bindir, tmp_path, out))
    run_check(pb, bindir)
    r = json.loads(out.read_text())
    assert r["changed"] is False
    f = r["runtime"]
    assert f["active"] == "active" and f["ctr_rc"] == 0 and "1.7.24" in f["ctr_output"]
    assert f["config_dump"] == "version = 2\n"
    assert f["modules"] == {"gpufabric_no_such_module": False}
    assert f["sysctls"] == {"net.ipv4.ip_forward": ["1", "1"], "net.bridge.bridge-nf-call-iptables": [None, "1"]}
    assert sorted(f["cni_plugins"]) == sorted(STUBS)
    assert f["modules"] == {"gpufabric_no_such_module": False}
    assert r["subset_modules"]["runtime"] == {"modules": {"gpufabric_no_such_module": False}}


def test_an_active_containerd_that_does_not_answer_is_asked(tmp_path):
    root, sysfs = tree(tmp_path)
    run, calls = fake_run({("systemctl", "show"): (0, "LoadState=loaded\nActiveState=active\n"
                                                     "ActiveEnterTimestampMonotonic=5000000\n", ""),
                           ("ctr", "version"): (1, "", 'ctr: failed to dial "/run/containerd/containerd.sock": '
                                                       "connection refused\n")})
    f = gather(root, sysfs, run, subset=("unit", "ctr"))
    assert f["active"] == "active" and ["ctr", "version"] in calls
    assert f["ctr_rc"] == 1 and "connection refused" in f["ctr_output"]
