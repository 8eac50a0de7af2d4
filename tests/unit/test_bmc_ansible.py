"""community.general's Redfish modules, unmodified, against the twin's BMC."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simlab.bmc import state
from simlab.bmc.power import FakePowerDriver
from simlab.bmc.server import BmcLab

pytestmark = pytest.mark.layers(1, 2)


def _ansible_playbook():
    local = Path(sys.executable).with_name("ansible-playbook")
    if local.exists():
        return str(local)
    return shutil.which("ansible-playbook")


PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    rf: &rf
      baseuri: "{{ bmc }}"
      username: ADMIN
      password: smc-pw
      timeout: 10
  tasks:
    - name: Inventory and BIOS
      community.general.redfish_info:
        <<: *rf
        category: Systems
        command: [GetSystemInventory, GetBiosAttributes, GetBootOrder, GetBiosRegistries]
      register: info
    - name: Find the SR-IOV key by display name
      ansible.builtin.set_fact:
        sriov_key: >-
          {{ (info.redfish_facts.bios_registries.bios_registry.RegistryEntries.Attributes
              | selectattr('DisplayName', 'equalto', 'SR-IOV Support') | first).AttributeName }}
    - name: Stage SR-IOV on
      community.general.redfish_config:
        <<: *rf
        category: Systems
        command: SetBiosAttributes
        bios_attributes: "{{ {sriov_key: 'Enabled'} }}"
      register: staged
    - name: Current value unchanged until reset
      community.general.redfish_info:
        <<: *rf
        category: Systems
        command: GetBiosAttributes
      register: before
    - name: Reset
      community.general.redfish_command:
        <<: *rf
        category: Systems
        command: PowerForceRestart
      register: reset
    - name: After reset
      community.general.redfish_info:
        <<: *rf
        category: Systems
        command: GetBiosAttributes
      register: after
    - name: Staging again changes nothing
      community.general.redfish_config:
        <<: *rf
        category: Systems
        command: SetBiosAttributes
        bios_attributes: "{{ {sriov_key: 'Enabled'} }}"
      register: again
    - name: Wrong password
      community.general.redfish_info:
        <<: *rf
        password: wrong
        category: Systems
        command: GetSystemInventory
      register: denied
      ignore_errors: true
    - name: Write results
      ansible.builtin.copy:
        dest: "{{ out }}"
        content: "{{ {'info': info.redfish_facts, 'sriov_key': sriov_key, 'staged': staged,
                      'before': before.redfish_facts.bios_attribute,
                      'reset': reset, 'after': after.redfish_facts.bios_attribute,
                      'again': again, 'denied': denied} | to_json }}"
"""


@pytest.mark.skipif(_ansible_playbook() is None, reason="ansible-playbook not available")
def test_community_general_redfish_modules(tmp_path):
    spec = [{"name": "smc1", "port": 0, "vendor": "supermicro", "username": "ADMIN",
             "password": "smc-pw", "container": "c-smc1"}]
    driver = FakePowerDriver(initial="On")
    lab = BmcLab(tmp_path / "lab", spec, driver)
    lab.start()
    try:
        pb = tmp_path / "pb.yml"
        pb.write_text(PLAYBOOK)
        out = tmp_path / "out.json"
        env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
                   ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
                   ANSIBLE_PYTHON_INTERPRETER=sys.executable,
                   ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"))
        proc = subprocess.run(
            [_ansible_playbook(), "-i", "localhost,", str(pb),
             "-e", f"bmc=127.0.0.1:{lab.bmcs['smc1'].port}", "-e", f"out={out}"],
            env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        r = json.loads(out.read_text())
    finally:
        lab.stop()

    inv = r["info"]["system"]["entries"][0][1]
    assert inv["Manufacturer"] == "Supermicro" and inv["PowerState"] == "On"
    assert inv["SerialNumber"] and inv["BiosVersion"] == "2.1"
    assert [b["BootOptionReference"] for b in r["info"]["boot_order"]["entries"][0][1]] == [
        "Boot0001", "Boot0002", "Boot0003"]
    key = r["sriov_key"]
    assert key.startswith("SR_IOVSupport_")
    assert r["info"]["bios_attribute"]["entries"][0][1][key] == "Disabled"
    assert r["staged"]["changed"] is True
    assert r["before"]["entries"][0][1][key] == "Disabled"        # pending only
    assert r["reset"]["changed"] is True
    assert driver.events == [("force-restart", "c-smc1")]
    assert r["after"]["entries"][0][1][key] == "Enabled"          # applied at POST
    assert r["again"]["changed"] is False
    assert r["denied"]["failed"] and "401" in r["denied"]["msg"]
    assert "wrong" not in r["denied"]["msg"]
    data = state.load_bios(tmp_path / "lab" / "nodes" / "smc1")
    assert data["pending"] == {} and data["current"][key] == "Enabled"
