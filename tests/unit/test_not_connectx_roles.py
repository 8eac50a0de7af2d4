"""The roles and the doctor on a node whose fabric PFs are not ConnectX: the
QEMU VM nodes' emulated Intel 82576 (igb 8086:10c9) PF and virtio-net
management NIC, in a sysfs tree laid out as a real kernel lays it out
(tests/unit/real_sysfs.py gives the kernel sources of that layout), read by
nic_facts over a local connection.

Layers 4 and 8 are ConnectX's: their roles say "not applicable", naming the
PCI id, and change nothing; the doctor records them 'skipped' with that
reason, shown '-' in the layer report, and goes on to the layers above.
Layers 5 and 6 select the igb PF by gpufabric_nics' vendor_device."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from real_sysfs import RealSysfs

pytestmark = pytest.mark.layers(3, 4, 5, 6, 8)

REPO = Path(__file__).resolve().parents[2]
NOT_APPLICABLE = "not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)"

PLAY = """
- name: Converge layers 4, 5 and 8 (check mode)
  hosts: nodes
  gather_facts: false
  check_mode: true
  tasks:
    - name: Layer 4
      ansible.builtin.include_role:
        name: gpufabric.stack.nic_firmware
    - name: Layer 5
      ansible.builtin.include_role:
        name: gpufabric.stack.rdma_drivers
    - name: Layer 8
      ansible.builtin.include_role:
        name: gpufabric.stack.roce_host

- name: The doctor over layers 4, 5, 6 and 8
  hosts: nodes
  gather_facts: false
  tasks:
    - name: Gate
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        tasks_from: gate
      vars:
        doctor_gate_layers:
          - {layer: 4, role: nic_firmware}
          - {layer: 5, role: rdma_drivers}
          - {layer: 6, role: sriov_vfs}
          - {layer: 8, role: roce_host}
        doctor_gate_fail: false

    - name: Report
      ansible.builtin.include_role:
        name: gpufabric.stack.doctor
        apply:
          delegate_to: localhost
          run_once: true
      vars:
        doctor_hosts: "{{ ansible_play_hosts_all }}"
        doctor_color: false
"""


def vm_host(tmp_path):
    t = RealSysfs(tmp_path / "vm01" / "sys")
    t.virtio_net("0000:00:03.0", name="eth0")
    t.sriov_pf("0000:01:00.0", "enp1s0", numvfs=7)
    for module in ("mlx5_core", "mlx5_ib", "ib_uverbs", "rdma_ucm"):
        os.makedirs(os.path.join(t.root, "module", module))
    proc = tmp_path / "vm01" / "proc"
    proc.mkdir()
    (proc / "cmdline").write_text("BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt\n")
    return {"ansible_connection": "local", "gpufabric_sysfs_root": t.root, "gpufabric_proc_root": str(proc),
            "gpufabric_nics": [{"match": {"vendor_device": "8086:10c9"}, "num_vfs": 7}],
            "gpufabric_roce": {"priority": 3, "dscp": 26, "cnp_priority": 6, "cnp_dscp": 48, "trust": "dscp",
                               "ecn": True, "host_mtu": 9000},
            "rdma_drivers_install_packages": False,
            # this machine runs no lldpd for the role to start (the VM nodes do, tests/vm)
            "rdma_drivers_lldp": False,
            "rdma_drivers_modules_load_file": str(tmp_path / "vm01" / "gpufabric-rdma.conf"),
            "sriov_vfs_persist": False, "sriov_vfs_nm_unmanaged": False,
            # as the VM rack's inventory has it: no say in whether layer 4 applies (ConnectX only)
            "nic_firmware_vendor": "8086"}


# The PF's netlink answer for the sysfs tree above (the tree is not this
# machine's, so its netdev is not either): igb's VFs as `ip -j link show dev`
# prints them (../shared/reference/host-interfaces.md), spoof checking on.
IGB_VFS = [{"ifname": "enp1s0", "vfinfo_list": [
    {"vf": i, "link_type": "ether", "address": "00:00:00:00:00:00", "broadcast": "ff:ff:ff:ff:ff:ff",
     "vlan_list": [{"vlan": 0}], "rate": {"max_tx": 0, "min_tx": 0}, "spoofchk": True, "link_state": "auto",
     "trust": False, "query_rss_en": False} for i in range(7)]}]


def ip_of_the_tree(tmp_path):
    """A directory with an `ip` that answers `ip -j link show dev enp1s0` for
    the tree and hands everything else to the real ip."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "IGB_VFS.json").write_text(json.dumps(IGB_VFS))
    (bin_dir / "ip").write_text(
        "#!/bin/sh\n"
        'if [ "$*" = "-j link show dev enp1s0" ]; then cat "%s"; exit 0; fi\n'
        'exec /usr/sbin/ip "$@"\n' % (bin_dir / "IGB_VFS.json"))
    (bin_dir / "ip").chmod(0o755)
    return str(bin_dir)


def test_layers_4_and_8_do_not_apply_to_an_igb_node_and_5_and_6_select_it(tmp_path):
    (tmp_path / "hosts.json").write_text(json.dumps({"nodes": {"hosts": {"vm01": vm_host(tmp_path)}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build"),
               ANSIBLE_NOCOLOR="1", PYTHONPATH=str(REPO),
               PATH=ip_of_the_tree(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")),
                           "-i", str(tmp_path / "hosts.json"), str(tmp_path / "play.yml"),
                           "-e", "ansible_python_interpreter=%s" % sys.executable,
                           "-e", "doctor_report_dir=%s" % (tmp_path / "reports")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    assert "Traceback" not in out
    text = " ".join(out.split())  # the yaml callback folds long messages
    # the roles say so, naming the PCI id, and neither sets a firmware value nor installs a boot unit
    assert "vm01: layer 4 (NIC firmware) " + NOT_APPLICABLE in text
    assert "vm01: layer 8 (host RoCE QoS) " + NOT_APPLICABLE in text
    for task in ("nic_firmware : Enable SR-IOV and enough VFs in the NIC firmware",
                 "roce_host : Install the boot script and its systemd unit"):
        chunk = out.split("TASK [gpufabric.stack.%s" % task)[1].split("TASK [")[0].split("PLAY [")[0]
        assert chunk.split("\n", 1)[1].strip() == "skipping: [vm01]", chunk
    report = json.loads((tmp_path / "reports" / "report.json").read_text())["vm01"]
    layers = dict((r["layer"], (r["status"], r["reason"])) for r in report["layers"])
    assert layers[4] == ("skipped", NOT_APPLICABLE)
    assert layers[8] == ("skipped", NOT_APPLICABLE)
    assert layers[5][0] == "pass" and "0000:01:00.0 is 8086:10c9" in layers[5][1]
    assert layers[6][0] == "pass", layers[6]
    assert report["verdict"]["status"] == "pass"
    row = [line for line in out.splitlines() if line.strip().startswith("- vm01")][0]
    assert row.split()[1:] == ["vm01", "-", "ok", "ok", "-", "healthy"]
