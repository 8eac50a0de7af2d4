"""Layers 3-5 on a live factory twin (SR-IOV and VT-d off in BIOS, SR-IOV off
in the NIC firmware, no IOMMU flags): the doctor checks see each fault, the
roles converge layers 2-6 with the reboots they need, a second run changes
nothing."""

import json

import pytest

from conftest import Twin, recap, require_twin, task_lines

pytestmark = pytest.mark.twin

PLAYBOOK = """
- name: Layers 2-6 on the GPU nodes
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - ansible.builtin.include_role: {name: gpufabric.stack.bios}
    - ansible.builtin.include_role: {name: gpufabric.stack.kernel}
    - ansible.builtin.include_role: {name: gpufabric.stack.nic_firmware}
    - ansible.builtin.include_role: {name: gpufabric.stack.rdma_drivers}
      vars: {rdma_drivers_install_packages: false}
    - ansible.builtin.include_role: {name: gpufabric.stack.sriov_vfs}
"""

CHECK = """
- name: Doctor checks of layers 3-5
  hosts: gpu_workers
  gather_facts: false
  tasks:
    - name: Run the checks, each layer on its own
      gpufabric.stack.doctor: {layers: ["{{ item }}"]}
      loop: [3, 4, 5]
      register: checks
    - name: Write the verdicts
      ansible.builtin.copy:
        content: "{{ checks.results | map(attribute='results') | map('first') | to_json }}"
        dest: "{{ verdict_dir }}/{{ inventory_hostname }}.json"
        mode: "0644"
      delegate_to: localhost
"""


@pytest.fixture(scope="module")
def factory(tmp_path_factory):
    require_twin()
    t = Twin.up(tmp_path_factory, "hl", "--nodes", "2", "--switches", "1", "--preset", "factory")
    play = tmp_path_factory.mktemp("play")
    (play / "converge.yml").write_text(PLAYBOOK)
    (play / "check.yml").write_text(CHECK)
    yield t, play
    t.down()


def doctor(twin, play):
    """{role: [result of node01, result of node02]} from the check playbook."""
    out = play / "verdicts"
    out.mkdir(exist_ok=True)
    twin.playbook(str(play / "check.yml"), "-e", f"verdict_dir={out}", check=True)
    res = {}
    for node in ("node01", "node02"):
        for r in json.loads((out / f"{node}.json").read_text()):
            res.setdefault(r["name"], []).append(r)
    return res


def test_factory_twin_converges_layers_3_to_6_and_is_idempotent(factory):
    twin, play = factory
    v = doctor(twin, play)
    assert [r["reason"] for r in v["kernel"]] == ["flag intel_iommu=on iommu=pt missing from /proc/cmdline"] * 2
    assert [r["reason"] for r in v["nic_firmware"]] == ["SR-IOV disabled in NIC firmware (no sriov_totalvfs)"] * 2

    first = twin.playbook(str(play / "converge.yml"))
    assert all(r["failed"] == 0 for r in recap(first.stdout).values()), first.stdout[-4000:]
    assert "Reboot for kernel arguments intel_iommu=on iommu=pt" in first.stdout
    assert "Reboot for NIC firmware SR-IOV settings" in first.stdout
    for node in ("node01", "node02"):
        cmdline = twin.sh(node, "cat /run/simlab/proc/cmdline").stdout.split()
        assert "intel_iommu=on" in cmdline and "iommu=pt" in cmdline
        assert twin.sh(node, "ls /run/simlab/sys/class/iommu").stdout.strip()
        q = twin.sh(node, "mstconfig -d 0000:3b:00.0 -e q").stdout
        assert "True(1)" in q.split("SRIOV_EN", 1)[1].splitlines()[0]
        assert twin.sh(node, "cat /run/simlab/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs").stdout.strip() == "8"
        assert "mlx5_ib" in twin.sh(node, "cat /etc/modules-load.d/gpufabric-rdma.conf").stdout

    second = twin.playbook(str(play / "converge.yml"))
    assert {h: r["changed"] for h, r in recap(second.stdout).items()} == {"node01": 0, "node02": 0}, \
        second.stdout[-4000:]
    # layer 5 judged its modules-load file from the NIC reading: no host_files call
    persist = "gpufabric.stack.rdma_drivers : Load the RDMA modules at every boot"
    assert task_lines(second.stdout, persist) == ["skipping: [node01]", "skipping: [node02]"]
    conf = "/etc/modules-load.d/gpufabric-rdma.conf"
    good = twin.sh("node01", f"sha256sum {conf}").stdout.split()[0]
    twin.sh("node01", f"echo '# edited' >> {conf}")
    third = twin.playbook(str(play / "converge.yml"), "--diff")
    assert {h: r["changed"] for h, r in recap(third.stdout).items()} == {"node01": 1, "node02": 0}, \
        third.stdout[-4000:]
    assert task_lines(third.stdout, persist) == ["changed: [node01]", "skipping: [node02]"]
    assert "-# edited" in third.stdout
    assert twin.sh("node01", f"sha256sum {conf}").stdout.split()[0] == good

    after = doctor(twin, play)
    assert {role: [r["status"] for r in rs] for role, rs in after.items()} == {
        "kernel": ["pass", "pass"], "nic_firmware": ["pass", "pass"], "rdma_drivers": ["pass", "pass"]}


def test_doctor_names_layer_4_and_5_faults_and_roles_repair_them(factory):
    twin, play = factory
    twin.fault("node02", "driver-unbound")
    twin.fault("node01", "fw-pending-reboot")
    v = doctor(twin, play)
    reasons = {r["reason"] for rs in v.values() for r in rs}
    assert "PF 0000:3b:00.0 has no driver bound" in reasons
    assert any(r.startswith("firmware change pending a reboot: NUM_OF_VFS current 16 next") for r in reasons)
    fixed = twin.playbook(str(play / "converge.yml"))
    assert all(r["failed"] == 0 for r in recap(fixed.stdout).values()), fixed.stdout[-4000:]
    after = doctor(twin, play)
    assert all(r["status"] == "pass" for rs in after.values() for r in rs), after
