#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: host_files
short_description: Install a layer's boot-time files (scripts, systemd units, udev rules) in one call
version_added: "0.1.0"
description:
  - Compares every wanted file (content, mode, owner, group) with what is on disk and writes the ones that
    differ, each through a temporary file in the same directory renamed over the old one. Missing parent
    directories are created.
  - Then, only when needed, C(systemctl daemon-reload) (a changed file under a systemd unit directory) and
    C(udevadm control --reload) (a changed C(.rules) file under a udev rules directory, and udevd running);
    then enables I(enable_units) that are not enabled.
  - One round trip where a directory, several templates, a handler and a C(systemd_service) task took one each.
    A file's content is given, or rendered on the controller from a template of the role (O(files[].template)).
  - With O(inspected), a reading of these files and units taken earlier in the play, nothing is executed on the
    host when every file and unit is as that reading shows; the action plugin compares and the task is skipped.
  - Every file is checked (absolute normalized path, mode, existing owner and group) before anything is written.
  - Check mode and diff mode show what would change.
options:
  files:
    description: The wanted files.
    type: list
    elements: dict
    required: true
    suboptions:
      path: {description: Absolute path of the file., type: path, required: true}
      content:
        description: Whole content of the file; this or O(files[].template).
        type: str
      template:
        description:
          - Name of a template of the role (its C(templates/) directory), rendered on the controller with the
            task's variables as the file's content, instead of O(files[].content).
        type: str
      vars:
        description:
          - With O(files[].template), variables for this file's template over the task's variables (as a template
            task's C(vars)), so one task renders one template into several files.
        type: dict
      mode: {description: Octal mode., type: raw, default: "0644"}
      owner: {description: Owner name; null leaves it as it is., type: str, default: root}
      group: {description: Group name; null leaves it as it is., type: str, default: root}
  directory_mode:
    description: Mode of the parent directories this module creates.
    type: raw
    default: "0755"
  enable_units:
    description: systemd units to enable (for the next boot) once the files are in place; they are not started.
    type: list
    elements: str
    default: []
  inspected:
    description:
      - A reading of the files and units on the host, as C(gpufabric.stack.nic_facts) returns it under
        C(inspected) (C({files, units})). When every file and unit is as it shows, the module is not executed and
        the task is skipped.
      - A reading that did not read a file or unit counts as a difference. Not set always executes the module.
    type: dict
  root:
    description: Prefix of every path, for a fake tree in tests. systemd and udev are told about changes as usual.
    type: path
    default: /
  systemctl:
    description: The systemctl binary.
    type: path
    default: systemctl
  udevadm:
    description: The udevadm binary.
    type: path
    default: udevadm
  udev_control:
    description: Socket whose presence means udevd runs (and rules can be reloaded), under I(root).
    type: path
    default: /run/udev/control
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Install the boot script and its unit, enabled
  gpufabric.stack.host_files:
    files:
      - path: /usr/local/libexec/gpufabric/sriov-vfs.sh
        template: sriov-vfs.sh.j2
        mode: "0755"
      - path: /etc/systemd/system/gpufabric-sriov.service
        template: sriov-vfs.service.j2
    enable_units: [gpufabric-sriov.service]
    # nothing is executed on the node when the play's reading shows them as wanted
    inspected: "{{ sriov_vfs_result.inspected }}"
"""

RETURN = r"""
files:
  description: One entry per wanted file, C({path, state, changes}); C(state) is created, updated or unchanged,
    C(changes) lists content, mode, owner, group.
  type: list
  elements: dict
  returned: always
written:
  description: Paths written (or that would be, in check mode).
  type: list
  elements: str
  returned: always
daemon_reloaded:
  description: Whether C(systemctl daemon-reload) ran (or would run).
  type: bool
  returned: always
udev_reloaded:
  description: Whether C(udevadm control --reload) ran (or would run).
  type: bool
  returned: always
units_enabled:
  description: Units enabled by this call (or that would be).
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files


def _run(module, argv, what):
    rc, out, err = module.run_command(argv)
    if rc != 0:
        module.fail_json(msg="%s failed (rc %d): %s" % (what, rc, (err or out).strip()), cmd=argv)
    return out


def _is_enabled(module, systemctl, unit):
    return host_files.is_enabled(module.run_command, systemctl, unit)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True, options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str"),
                # rendered into content by the action plugin
                template=dict(type="str"),
                vars=dict(type="dict"),
                mode=dict(type="raw", default="0644"),
                owner=dict(type="str", default="root"),
                group=dict(type="str", default="root"),
            )),
            directory_mode=dict(type="raw", default="0755"),
            enable_units=dict(type="list", elements="str", default=[]),
            root=dict(type="path", default="/"),
            systemctl=dict(type="path", default="systemctl"),
            udevadm=dict(type="path", default="udevadm"),
            udev_control=dict(type="path", default="/run/udev/control"),
            # the action plugin's (plugins/action/host_files.py): compared there
            inspected=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        files = host_files.normalize(p["files"])
        directory_mode = host_files.parse_mode(p["directory_mode"], "directory_mode")
        planned = host_files.plan(files, p["root"])
    except host_files.HostFilesError as e:
        module.fail_json(msg=str(e))

    changed_paths = [e["path"] for e in planned if e["state"] != "unchanged"]
    reloads = host_files.reloads_needed(changed_paths)
    udev_running = os.path.exists(host_files.rooted(p["root"], p["udev_control"]))
    result = dict(
        files=[{"path": e["path"], "state": e["state"], "changes": e["changes"]} for e in planned],
        written=changed_paths,
        daemon_reloaded=reloads["systemd"],
        udev_reloaded=reloads["udev"] and udev_running,
        units_enabled=[],
    )
    if module._diff:
        result["diff"] = host_files.diffs(planned)

    systemctl = None
    if reloads["systemd"] or p["enable_units"]:
        systemctl = module.get_bin_path(p["systemctl"], required=True)

    if not module.check_mode:
        try:
            host_files.apply(files, planned, directory_mode)
        except (OSError, host_files.HostFilesError) as e:
            module.fail_json(msg="writing %s: %s" % (", ".join(changed_paths), e), **result)
        if result["daemon_reloaded"]:
            _run(module, [systemctl, "daemon-reload"], "systemctl daemon-reload")
        if result["udev_reloaded"]:
            udevadm = module.get_bin_path(p["udevadm"], required=True)
            _run(module, [udevadm, "control", "--reload"], "udevadm control --reload")

    for unit in p["enable_units"]:
        if not _is_enabled(module, systemctl, unit):
            result["units_enabled"].append(unit)
            if not module.check_mode:
                _run(module, [systemctl, "enable", unit], "systemctl enable %s" % unit)

    result["changed"] = bool(changed_paths or result["units_enabled"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
