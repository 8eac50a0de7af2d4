#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: mlx_config
short_description: Set ConnectX non-volatile firmware parameters with mlxconfig or mstconfig
version_added: "0.1.0"
description:
  - Queries the device with C(<tool> -d <device> -e q), compares the Next Boot values with I(params) and runs
    C(<tool> -d <device> -y set NAME=VALUE ...) only for the parameters that differ.
  - Every value is checked before anything changes (C(NUM_OF_VFS) 0 to I(max_num_of_vfs), C(LINK_TYPE_Pn) ETH, IB,
    VPI or 1, 2, 3, C(SRIOV_EN) and C(ATS_ENABLED) booleans); errors name the device, the parameter and the value.
  - The firmware reads the new values at the next reboot. I(reboot_required) is true whenever a Next Boot value
    differs from the Current one after the call, including changes staged before it.
  - Reads the firmware version with C(mstflint -d <device> q) and fails when it is older than I(min_fw_version).
  - With I(devices), one call handles every PF of a node. All wanted values are checked before the first device
    is queried, the devices are set in order and the first failure stops the call (in check mode every device is
    read and the failures are listed per device).
options:
  device:
    description:
      - PCI address of the PF, for example C(0000:3b:00.0) (or an MST device with mlxconfig).
      - Exactly one of I(device) and I(devices) is required.
    type: str
  params:
    description:
      - "Wanted Next Boot values by parameter name, for example C({SRIOV_EN: 1, NUM_OF_VFS: 16, LINK_TYPE_P1: ETH})."
      - Required with I(device).
    type: dict
  devices:
    description:
      - Several PFs in one call, each with its own wanted values. The result then has one entry per device in
        I(devices), with the keys a single-device call returns at the top level.
    type: list
    elements: dict
    suboptions:
      device:
        description: PCI address of the PF.
        type: str
        required: true
      params:
        description: Wanted Next Boot values of this PF.
        type: dict
        required: true
  at_least:
    description:
      - Parameters satisfied by a Next Boot value at least as large as the wanted one, so that firmware already
        offering more VFs is left alone.
    type: list
    elements: str
    default: []
  tool:
    description: C(mlxconfig) from MFT or C(mstconfig) from mstflint; they take the same arguments.
    type: str
    choices: [mlxconfig, mstconfig]
    default: mstconfig
  flint_tool:
    description: Tool that reads the firmware version (C(mstflint) or C(flint)). Empty skips the version read.
    type: str
    default: mstflint
  min_fw_version:
    description: Oldest acceptable firmware version, for example C(28.39.1002). Empty accepts any version.
    type: str
    default: ""
  max_num_of_vfs:
    description: Largest NUM_OF_VFS the device accepts (at most 127).
    type: int
    default: 127
  where_present:
    description:
      - Parameters set on every device whose firmware has them (its query lists them), left alone on one that has
        not, such as the LLDP agent's C(LLDP_NB_RX_MODE_P1), which not every ConnectX firmware offers. Checked as
        I(params) are, before any device is read.
    type: dict
    default: {}
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
notes:
  - The module never reboots; a role applies the change with a reboot when I(reboot_required) is true.
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Every PF of the node in one call
  gpufabric.stack.mlx_config:
    devices:
      - {device: "0000:3b:00.0", params: {SRIOV_EN: true, NUM_OF_VFS: 16}}
      - {device: "0000:86:00.0", params: {SRIOV_EN: true, NUM_OF_VFS: 8}}
    at_least: [NUM_OF_VFS]
  register: fw

- name: Enable SR-IOV with 16 VFs in the NIC firmware
  gpufabric.stack.mlx_config:
    device: "0000:3b:00.0"
    params:
      SRIOV_EN: true
      NUM_OF_VFS: 16
      LINK_TYPE_P1: ETH
    at_least: [NUM_OF_VFS]
    min_fw_version: "28.39.1002"
  register: fw

- name: Reboot when the firmware has staged values
  ansible.builtin.include_role:
    name: gpufabric.stack.reboot
  when: fw.reboot_required
"""

RETURN = r"""
current:
  description: Current (running) values of every parameter the tool printed, after the call.
  returned: success
  type: dict
  sample: {SRIOV_EN: "False(0)", NUM_OF_VFS: "0"}
next_boot:
  description: Next Boot values of every parameter the tool printed, after the call.
  returned: success
  type: dict
  sample: {SRIOV_EN: "True(1)", NUM_OF_VFS: "16"}
changed_params:
  description: Parameters set by this call (or that would be set in check mode), with the old and new value.
  returned: success
  type: list
  elements: dict
  sample: [{name: NUM_OF_VFS, next: "0", next_int: 0, want: 16}]
pending:
  description:
    - Parameters whose Next Boot value differs from the Current one after the call (in check mode, as the device
      is now), with C(name), C(current), C(next), C(current_int), C(next_int).
  returned: success
  type: list
  elements: dict
reboot_required:
  description:
    - Whether a reboot is needed for the firmware to use the Next Boot values; in check mode, whether it would be
      needed once the changes are set.
  returned: success
  type: bool
fw_version:
  description: Burned firmware version from the flint query, null when I(flint_tool) is empty.
  returned: success
  type: str
  sample: "28.39.1002"
fw_version_running:
  description: Running firmware version (differs from I(fw_version) until a firmware reset).
  returned: success
  type: str
command:
  description:
    - The set command run (or that would run in check mode); empty when nothing changes.
    - With I(devices), the commands of every device that changes, one list each.
  returned: success
  type: list
  elements: raw
devices:
  description:
    - With I(devices), one entry per device with C(device) and the keys above (C(changed), C(command),
      C(current), C(next_boot), C(changed_params), C(pending), C(reboot_required), C(fw_version),
      C(fw_version_running)), or C(failed) and C(msg) for a device that could not be read or set.
  returned: when I(devices) is given
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config


def _run(module, argv):
    binary = module.get_bin_path(argv[0], required=True)
    rc, out, err = module.run_command([binary] + argv[1:])
    return rc, out, err


def _query(module, tool, device):
    rc, out, err = _run(module, mlx_config.query_command(tool, device))
    if rc != 0:
        detail = (out + err).strip().splitlines()
        raise mlx_config.MlxConfigError("%s: %s query failed (rc %d): %s"
                                        % (device, tool, rc, detail[-1] if detail else "no output"))
    return mlx_config.parse_query(device, out)


def _converge(module, p, device, wanted, result):
    """Read, compare and (outside check mode) set one device; fills result.
    The read and the comparison are module_utils' read_device and
    check_reading, which nic_facts' firmware reading shares."""
    reading = mlx_config.read_device(lambda argv: _run(module, argv), p["tool"], p["flint_tool"], device)
    wanted = mlx_config.with_present(device, wanted, reading, p["where_present"])
    planned = mlx_config.check_reading(reading, wanted, at_least=p["at_least"], min_fw_version=p["min_fw_version"])
    after = planned.pop("parsed")
    planned.pop("device")
    changes = planned["changed_params"]
    result.update(planned)
    if changes and not module.check_mode:
        rc, out, err = _run(module, result["command"])
        mlx_config.check_set_output(device, out + err, rc)
        after = _query(module, p["tool"], device)
        still = mlx_config.plan_changes(device, after, wanted, at_least=p["at_least"])
        if still:
            raise mlx_config.MlxConfigError(
                "%s: set reported success but Next Boot still has %s"
                % (device, ", ".join("%s=%s" % (c["name"], c["next"]) for c in still)))
    if not module.check_mode:
        pending = mlx_config.pending(after, device)
        result.update(current=mlx_config.param_values(after, "current"),
                      next_boot=mlx_config.param_values(after, "next"),
                      pending=pending, reboot_required=bool(pending))
    if module._diff:
        result["diff"] = dict(
            before="".join("%s=%s\n" % (c["name"], c["next"]) for c in changes),
            after="".join("%s=%s\n" % (c["name"], c["want"]) for c in changes),
            before_header="%s next boot" % device, after_header="%s next boot" % device)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            device=dict(type="str"),
            params=dict(type="dict"),
            devices=dict(type="list", elements="dict", options=dict(
                device=dict(type="str", required=True),
                params=dict(type="dict", required=True),
            )),
            at_least=dict(type="list", elements="str", default=[]),
            tool=dict(type="str", choices=["mlxconfig", "mstconfig"], default="mstconfig"),
            flint_tool=dict(type="str", default="mstflint"),
            min_fw_version=dict(type="str", default=""),
            max_num_of_vfs=dict(type="int", default=mlx_config.MAX_NUM_OF_VFS),
            where_present=dict(type="dict", default={}),
        ),
        required_one_of=[("device", "devices")],
        mutually_exclusive=[("device", "devices"), ("params", "devices")],
        required_by={"device": "params"},
        supports_check_mode=True,
    )
    p = module.params
    # checked as params are, once, before any device is read
    try:
        if p["where_present"]:
            p["where_present"] = mlx_config.normalize_params("where_present", p["where_present"], p["max_num_of_vfs"])
    except mlx_config.MlxConfigError as exc:
        module.fail_json(msg=str(exc), command=[], devices=[])
    if p["device"]:
        result = dict(changed=False, command=[], fw_version=None, fw_version_running=None)
        try:
            wanted = mlx_config.normalize_params(p["device"], p["params"], p["max_num_of_vfs"])
            _converge(module, p, p["device"], wanted, result)
        except mlx_config.MlxConfigError as exc:
            result.pop("changed")
            module.fail_json(msg=str(exc), **result)
        module.exit_json(**result)

    # Every device's wanted values are checked before any device is touched.
    try:
        plan = mlx_config.plan_devices(p["devices"], p["max_num_of_vfs"])
    except mlx_config.MlxConfigError as exc:
        module.fail_json(msg=str(exc), devices=[])
    result = mlx_config.run_devices(plan, lambda device, wanted, entry: _converge(module, p, device, wanted, entry),
                                    stop_on_error=not module.check_mode)
    if module._diff:
        result["diff"] = [d.pop("diff") for d in result["devices"] if "diff" in d]
    if result.pop("failed", False):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
