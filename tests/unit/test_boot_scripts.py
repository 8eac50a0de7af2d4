"""Every boot-time script is the layer's Python: the role's template is a
wrapper (helpers, one block per PF) and every command in it comes from the
module's ``boot_lines``, built from the steps the module runs itself.
Layer 6 (sriov_vfs: sriov.boot_lines) and layer 8 (roce_host:
roce_qos.boot_lines)."""

import re
import shlex
import subprocess
from pathlib import Path

import jinja2
import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov

pytestmark = [pytest.mark.layers(5, 6, 8)]

ROLES = Path(__file__).resolve().parents[2] / "roles"


def render(role, template, **variables):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLES / role / "templates")),
                             undefined=jinja2.StrictUndefined, trim_blocks=True)
    env.filters["quote"] = lambda v: shlex.quote(str(v))
    env.filters["default"] = lambda v, d=None: d if v is None or isinstance(v, jinja2.Undefined) else v
    return env.get_template(template).render(ansible_managed="Ansible managed", **variables)


PF = {"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "num_vfs": 4, "vfs": [
    {"index": 0, "pci_address": "0000:3b:00.2", "mac": "02:00:00:00:00:10", "vlan": 100, "qos": 3,
     "spoofchk": True, "trust": False, "link_state": "auto", "mtu": 9000, "driver": "default"},
    {"index": 1, "pci_address": "0000:3b:00.3", "spoofchk": False, "trust": True, "link_state": "enable",
     "max_tx_rate": 0, "mtu": 9000, "driver": "default"},
    {"index": 2, "pci_address": "0000:3b:00.4", "spoofchk": True, "trust": False, "link_state": "auto",
     "driver": "vfio-pci"},
    {"index": 3, "pci_address": "0000:3b:00.5", "spoofchk": True, "trust": False, "link_state": "auto",
     "node_guid": "00:11:22:33:44:55:66:77", "driver": "vfio-pci"},
]}


def test_layer_6_boot_lines_are_the_modules_steps():
    lines = sriov.boot_lines(PF)
    fail = '|| fail "0000:3b:00.0 ($PF) VF %d: ip link set failed"'
    assert lines == [
        "set_numvfs 0000:3b:00.0 4",
        "wait_vfs 0000:3b:00.0 4",
        "PF=$(netdev_of 0000:3b:00.0)",
        'ip link set dev "$PF" vf 0 mac 02:00:00:00:00:10 vlan 100 qos 3 spoofchk on ' + fail % 0,
        'echo 9000 > "$SYSFS/class/net/$(netdev_of 0000:3b:00.2)/mtu"',
        'ip link set dev "$PF" vf 1 trust on spoofchk off state enable ' + fail % 1,
        'echo 9000 > "$SYSFS/class/net/$(netdev_of 0000:3b:00.3)/mtu"',
        'ip link set dev "$PF" vf 2 spoofchk on ' + fail % 2,
        'ip link set dev "$PF" vf 3 spoofchk on node_guid 00:11:22:33:44:55:66:77 ' + fail % 3,
        '[ -d "$SYSFS/bus/pci/drivers/vfio-pci" ] || modprobe vfio-pci || fail "0000:3b:00.0: vfio-pci cannot be '
        'loaded"',
        'if [ "$(driver_of 0000:3b:00.4)" != vfio-pci ]; then',
        '  echo vfio-pci > "$SYSFS/bus/pci/devices/0000:3b:00.4/driver_override"',
        '  if [ -e "$SYSFS/bus/pci/devices/0000:3b:00.4/driver" ]; then echo 0000:3b:00.4 > '
        '"$SYSFS/bus/pci/devices/0000:3b:00.4/driver/unbind"; fi',
        '  echo 0000:3b:00.4 > "$SYSFS/bus/pci/drivers/vfio-pci/bind"',
        "fi",
        'if [ "$(driver_of 0000:3b:00.5)" != vfio-pci ]; then',
        '  echo vfio-pci > "$SYSFS/bus/pci/devices/0000:3b:00.5/driver_override"',
        '  if [ -e "$SYSFS/bus/pci/devices/0000:3b:00.5/driver" ]; then echo 0000:3b:00.5 > '
        '"$SYSFS/bus/pci/devices/0000:3b:00.5/driver/unbind"; fi',
        '  echo 0000:3b:00.5 > "$SYSFS/bus/pci/drivers/vfio-pci/bind"',
        "fi",
        'log "0000:3b:00.0 ($PF): 4 VFs"',
    ]
    # the per-VF arguments are the module's own (ip_args), less what a new VF has
    assert lines[3].split(" || ")[0] == "ip " + " ".join(sriov.ip_args('"$PF"', 0, {
        "mac": "02:00:00:00:00:10", "vlan": 100, "qos": 3, "spoofchk": True}))
    assert sriov.boot_lines(dict(PF, num_vfs=0, vfs=[])) == ["set_numvfs 0000:3b:00.0 0"]


def _code(path):
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))


def _commands(script):
    """The script's lines that do something (no comment, no helper body)."""
    body = script.split("\n}\n")[-1]
    return [line for line in body.splitlines() if line.strip() and not line.startswith("#")]


def test_layer_6_script_is_the_helpers_and_the_modules_lines(tmp_path):
    other = dict(PF, name="enp134s0f0np0", pci_address="0000:86:00.0", num_vfs=0, vfs=[])
    pfs = [dict(PF, boot_lines=sriov.boot_lines(PF)), dict(other, boot_lines=sriov.boot_lines(other))]
    script = render("sriov_vfs", "sriov-vfs.sh.j2", sriov_vfs_sysfs_root="/sys", sriov_vfs_unit_name="gpufabric-sriov",
                    sriov_vfs_wait_timeout=30, sriov_vfs_result={"pfs": pfs})
    assert _commands(script) == pfs[0]["boot_lines"] + pfs[1]["boot_lines"]
    # the template itself sends nothing to a VF: no ip command, no driver move
    template = _code(ROLES / "sriov_vfs/templates/sriov-vfs.sh.j2")
    assert not re.search(r"\bip link\b|driver_override|drivers/vfio-pci", template)
    (tmp_path / "s.sh").write_text(script)
    assert subprocess.run(["sh", "-n", str(tmp_path / "s.sh")]).returncode == 0


def test_layer_8_script_is_the_helpers_and_the_modules_lines(tmp_path):
    want = Q.normalise_intent({"priority": 3, "dscp": 26, "host_mtu": 9000, "roce_tos": 106})
    pf = {"name": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "driver": "inbox", "qos_tool": "dcb",
          "boot_lines": Q.boot_lines(want, False, tool="dcb")}
    script = render("roce_host", "roce-qos.sh.j2", roce_host_sysfs_root="/sys", roce_host_unit_name="gpufabric-roce-qos",
                    roce_host_boot_wait=60, roce_host_result={"pfs": [pf]})
    inner = [line.strip() for line in script.split("if find_pf 0000:3b:00.0; then\n")[1].split("  log ")[0].splitlines()]
    assert inner == pf["boot_lines"]
    template = _code(ROLES / "roce_host/templates/roce-qos.sh.j2")
    assert not re.search(r"\bmlnx_qos -i|\bdcb (pfc|app)|cma_roce_", template)
    (tmp_path / "s.sh").write_text(script)
    assert subprocess.run(["sh", "-n", str(tmp_path / "s.sh")]).returncode == 0


def test_layer_5_soft_roce_unit_runs_the_converges_command():
    import yaml
    argv = yaml.safe_load((ROLES / "rdma_drivers/vars/main.yml").read_text())["rdma_drivers_soft_roce_argv"]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ROLES / "rdma_drivers/templates")), trim_blocks=True)
    unit = env.get_template("soft-roce.service.j2").render(
        ansible_managed="Ansible managed", rdma_drivers_soft_roce_netdevs=["enp1s0"], rdma_drivers_soft_roce_argv=argv)
    words = [w.replace("{netdev}", "enp1s0") for w in argv]
    assert "ExecStart=/bin/sh -c 'rdma link show rxe_enp1s0/1 >/dev/null 2>&1 || %s'" % " ".join(words) in unit
    task = (ROLES / "rdma_drivers/tasks/soft_roce.yml").read_text()
    assert "rdma_drivers_soft_roce_argv" in task and "rdma, link, add" not in task
