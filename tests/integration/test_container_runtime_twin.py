"""Layer 10 converges for real on twin nodes: Debian's containerd, runc and
CNI plugins from the node image, config.toml with SystemdCgroup = true,
overlay and br_netfilter through the modprobe twin, the bridge-netfilter and
forwarding sysctls through the sysctl twin, swap off. containerd runs and
answers, a second run changes nothing, the doctor's layer 10 check passes
(layer 11 reports 'skipped': no cluster), a reboot keeps everything (the
twin's boot applies modules-load.d and sysctl.d as systemd does), and a
config with SystemdCgroup = false is named by the check and repaired by the
role.  With a kubeconfig on the control-plane host, layer 11's check reads
the API with kubernetes.core and reports the failed read."""

import json
import subprocess
import time

import pytest

from tests.integration.twinlab import ENV, Twin, recap, require_twin

pytestmark = [pytest.mark.twin, pytest.mark.slow, pytest.mark.layers(10, 11)]

NODES = ("node01", "node02")

CONVERGE = """
- name: Layer 10 on the GPU nodes
  hosts: gpu_workers
  gather_facts: false
  roles:
    - role: gpufabric.stack.container_runtime
"""

CHECK = """
- name: Doctor checks of layers 10 and 11
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Run the layer 10 check
      gpufabric.stack.doctor: {layers: [10]}
      register: layer10
    - name: Run the layer 11 check (the cluster's one read)
      gpufabric.stack.doctor: {layers: [11]}
      register: layer11
      run_once: true
      delegate_to: "{{ groups['kube_control_plane'] | default([], true) | first | default(inventory_hostname) }}"
    - name: Write the verdicts
      ansible.builtin.copy:
        content: "{{ [layer10.results[0], layer11.hosts[inventory_hostname][0]] | to_json }}"
        dest: "{{ verdict_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_twin()
    t = Twin.up(tmp_path_factory, "cr", "--nodes", "2", "--switches", "1")
    play = tmp_path_factory.mktemp("play")
    (play / "converge.yml").write_text(CONVERGE)
    (play / "check.yml").write_text(CHECK)
    yield t, play
    t.down()


def converge(twin, play, *args):
    proc = twin.playbook(str(play / "converge.yml"), *args)
    assert proc.returncode == 0, f"converge failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-2000:]}"
    return recap(proc.stdout)


def doctor(twin, play):
    """{node: (layer 10 result, layer 11 result)}"""
    out = play / "verdicts"
    out.mkdir(exist_ok=True)
    for f in out.glob("*.json"):
        f.unlink()
    twin.playbook(str(play / "check.yml"), "-e", f"verdict_dir={out}", check=True)
    return {n: tuple(json.loads((out / f"{n}.json").read_text())) for n in NODES}


def reboot(twin, node):
    subprocess.run(["podman", "restart", "-t", "5", twin.container(node)], env=ENV, check=True, capture_output=True)
    deadline = time.monotonic() + 120
    while twin.sh(node, "mountpoint -q /run/simlab/sys && systemctl is-system-running --wait >/dev/null 2>&1; "
                        "mountpoint -q /run/simlab/sys", check=False).returncode:
        assert time.monotonic() < deadline, f"{node} did not come back"
        time.sleep(1)


def test_fresh_nodes_fail_the_layer10_check(lab):
    twin, play = lab
    res = doctor(twin, play)
    for node in NODES:
        l10, l11 = res[node]
        assert l10["status"] == "fail" and l10["layer"] == 10, l10
        # the image ships containerd disabled, with Debian's own config
        assert "containerd is inactive" in l10["reason"], l10
        assert l11["status"] == "skipped" and "admin.conf not found on node01" in l11["reason"], l11


def test_converge_runs_containerd_and_is_idempotent(lab):
    twin, play = lab
    first = converge(twin, play)
    assert all(first[n]["changed"] > 0 and first[n]["failed"] == 0 for n in NODES), first
    for node in NODES:
        assert twin.sh(node, "systemctl is-active containerd").stdout.strip() == "active"
        assert twin.sh(node, "systemctl is-enabled containerd").stdout.strip() == "enabled"
        ver = twin.sh(node, "ctr version").stdout
        assert "Server:" in ver and "Version:" in ver.split("Server:")[1]
        dump = twin.sh(node, "containerd config dump").stdout
        assert "SystemdCgroup = true" in dump and 'bin_dir = "/opt/cni/bin"' in dump
        assert twin.sh(node, "test -e /opt/cni/bin/loopback && test -e /run/simlab/sys/module/br_netfilter",
                       check=False).returncode == 0
        assert twin.sh(node, "sysctl -n net.bridge.bridge-nf-call-iptables net.ipv4.ip_forward").stdout.split() == ["1", "1"]
    second = converge(twin, play)
    assert all(second[n]["changed"] == 0 and second[n]["failed"] == 0 for n in NODES), second


def test_doctor_passes_and_survives_a_reboot(lab):
    twin, play = lab
    res = doctor(twin, play)
    for node in NODES:
        l10, l11 = res[node]
        assert l10["status"] == "pass", l10
        assert "runtime runc: SystemdCgroup = true" in l10["evidence"]
        assert l11["status"] == "skipped"
    reboot(twin, "node02")
    assert twin.sh("node02", "sysctl -n net.ipv4.ip_forward").stdout.strip() == "1"
    deadline = time.monotonic() + 60
    while twin.sh("node02", "ctr version", check=False).returncode:
        assert time.monotonic() < deadline, "containerd did not come back after the reboot"
        time.sleep(2)
    l10, _ = doctor(twin, play)["node02"]
    assert l10["status"] == "pass", l10


def test_systemd_cgroup_false_is_named_and_repaired(lab):
    twin, play = lab
    twin.sh("node01", "sed -i 's/SystemdCgroup = true/SystemdCgroup = false/' /etc/containerd/config.toml && "
                      "systemctl restart containerd")
    res = doctor(twin, play)
    l10, _ = res["node01"]
    assert l10["status"] == "fail", l10
    assert l10["reason"].startswith("SystemdCgroup is not true for runtime runc in /etc/containerd/config.toml"), l10
    assert "runtime runc: SystemdCgroup = false" in l10["evidence"]
    assert res["node02"][0]["status"] == "pass"
    fixed = converge(twin, play, "--limit", "node01")
    assert fixed["node01"]["changed"] > 0
    assert doctor(twin, play)["node01"][0]["status"] == "pass"


def test_layer11_check_reports_a_failed_api_read(lab):
    twin, play = lab
    # A kubeconfig but no API server (and no Python kubernetes library in the node image).
    twin.sh("node01", "mkdir -p /etc/kubernetes && printf 'apiVersion: v1\\nkind: Config\\n' > /etc/kubernetes/admin.conf")
    try:
        res = doctor(twin, play)
    finally:
        twin.sh("node01", "rm -f /etc/kubernetes/admin.conf")
    for node in NODES:
        l11 = res[node][1]
        assert l11["status"] == "fail" and l11["reason"].startswith("Kubernetes API: "), l11
        assert "kubernetes" in l11["reason"].lower()
