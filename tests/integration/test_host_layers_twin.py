"""Host bring-up on a live factory twin (SR-IOV and VT-d off in BIOS, SR-IOV
off in the NIC firmware, no IOMMU flags): the doctor checks of layers 3-5 see
each fault, playbooks/site.yml converges layers 1-6 with the BMC resets and
reboots they need, a second run changes nothing, and the Molecule scenario
host_bringup's verifier (molecule/host_bringup/verify.yml: validate.yml's
layers 1-6 green, the values on the nodes and at the BMCs) passes on the
converged nodes.

The scenario converges the same kind of lab with the same playbook and tags;
make test runs its verifier here, on this lab, instead of converging a second
factory twin for it (`molecule test -s host_bringup` still runs it whole)."""

import json

import pytest

from tests.integration.twinlab import Twin, recap, require_twin, task_lines

pytestmark = [pytest.mark.twin, pytest.mark.layers(2, 3, 4, 5, 6)]

LAYER_TAGS = ",".join(f"layer{n:02d}" for n in range(1, 7))
# what the Molecule scenario host_bringup leaves out of its runs (molecule.yml's ansible_args)
SKIP_TAGS = ",".join(f"layer{n:02d}" for n in range(7, 16))
VERIFY = "molecule/host_bringup/verify.yml"

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
    (play / "check.yml").write_text(CHECK)
    yield t, play
    t.down()


def converge(twin, *args):
    """site.yml on the GPU nodes, layers 1-6, as the scenario's converge runs it."""
    return twin.playbook("playbooks/site.yml", "--limit", "gpu_workers", "--tags", LAYER_TAGS, *args)


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
    # GPU nodes: the IOMMU flags, and ACS redirect off on their PCIe switches (gpufabric_pcie_p2p auto)
    assert [r["reason"] for r in v["kernel"]] == [
        "flag intel_iommu=on iommu=pt pci=disable_acs_redir=pci:1000:c030 missing from /proc/cmdline"] * 2
    assert [r["reason"] for r in v["nic_firmware"]] == ["SR-IOV disabled in NIC firmware (no sriov_totalvfs)"] * 2

    first = converge(twin)
    assert all(r["failed"] == 0 for r in recap(first.stdout).values()), first.stdout[-4000:]
    assert "Reboot for kernel arguments intel_iommu=on iommu=pt pci=disable_acs_redir=pci:1000:c030" in first.stdout
    assert "Reboot for NIC firmware SR-IOV settings" in first.stdout
    # after each reboot the layer holds the node to the change (its own included tasks)
    after_reboot = ("gpufabric.stack.kernel : Read the booted command line and the NICs again after the reboot",
                    "gpufabric.stack.nic_firmware : Read the firmware values again")
    for task in after_reboot:
        assert task_lines(first.stdout, task) == ["ok: [node01]", "ok: [node02]"], task
    for node in ("node01", "node02"):
        cmdline = twin.sh(node, "cat /run/simlab/proc/cmdline").stdout.split()
        assert "intel_iommu=on" in cmdline and "iommu=pt" in cmdline and "pci=disable_acs_redir=pci:1000:c030" in cmdline
        assert twin.sh(node, "ls /run/simlab/sys/class/iommu").stdout.strip()
        q = twin.sh(node, "mstconfig -d 0000:3b:00.0 -e q").stdout
        assert "True(1)" in q.split("SRIOV_EN", 1)[1].splitlines()[0]
        assert twin.sh(node, "cat /run/simlab/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs").stdout.strip() == "8"
        assert "mlx5_ib" in twin.sh(node, "cat /etc/modules-load.d/gpufabric-rdma.conf").stdout

    second = converge(twin)
    assert {h: r["changed"] for h, r in recap(second.stdout).items()} == {"node01": 0, "node02": 0}, \
        second.stdout[-4000:]
    # nothing to verify after no reboot: those tasks are not even included
    assert not [task for task in after_reboot if task in second.stdout]
    # layer 5 judged its modules-load file from the NIC reading: no host_files call
    persist = "gpufabric.stack.rdma_drivers : Load the RDMA modules at every boot"
    assert task_lines(second.stdout, persist) == ["skipping: [node01]", "skipping: [node02]"]
    conf = "/etc/modules-load.d/gpufabric-rdma.conf"
    good = twin.sh("node01", f"sha256sum {conf}").stdout.split()[0]
    twin.sh("node01", f"echo '# edited' >> {conf}")
    third = converge(twin, "--diff")
    assert {h: r["changed"] for h, r in recap(third.stdout).items()} == {"node01": 1, "node02": 0}, \
        third.stdout[-4000:]
    assert task_lines(third.stdout, persist) == ["changed: [node01]", "skipping: [node02]"]
    assert "-# edited" in third.stdout
    assert twin.sh("node01", f"sha256sum {conf}").stdout.split()[0] == good

    after = doctor(twin, play)
    assert {role: [r["status"] for r in rs] for role, rs in after.items()} == {
        "kernel": ["pass", "pass"], "nic_firmware": ["pass", "pass"], "rdma_drivers": ["pass", "pass"]}


def test_the_host_bringup_scenarios_verifier_passes_on_the_converged_nodes(factory, tmp_path):
    """molecule/host_bringup/verify.yml, unchanged, with what Molecule gives it:
    its ephemeral directory (where validate.yml writes the report it reads)
    and the scenario's --skip-tags."""
    twin, _play = factory
    proc = twin.playbook(VERIFY, "--limit", "gpu_workers", "--skip-tags", SKIP_TAGS,
                         "-e", f"doctor_report_dir={tmp_path}/reports",
                         env={"MOLECULE_EPHEMERAL_DIRECTORY": str(tmp_path)})
    rc = recap(proc.stdout)
    assert proc.returncode == 0 and set(rc) == {"node01", "node02"}, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in rc.values()), proc.stdout[-4000:]
    # the verifier's own assertions ran on both nodes
    assert task_lines(proc.stdout, "The node is on, SR-IOV and VT-d are enabled in its BIOS, nothing is pending") == [
        "ok: [node01]", "ok: [node02]"]


def test_doctor_names_layer_4_and_5_faults_and_roles_repair_them(factory):
    twin, play = factory
    twin.fault("node02", "driver-unbound")
    twin.fault("node01", "fw-pending-reboot")
    v = doctor(twin, play)
    reasons = {r["reason"] for rs in v.values() for r in rs}
    assert "PF 0000:3b:00.0 has no driver bound" in reasons
    assert any(r.startswith("firmware change pending a reboot: NUM_OF_VFS current 16 next") for r in reasons)
    fixed = converge(twin)
    assert all(r["failed"] == 0 for r in recap(fixed.stdout).values()), fixed.stdout[-4000:]
    after = doctor(twin, play)
    assert all(r["status"] == "pass" for rs in after.values() for r in rs), after
