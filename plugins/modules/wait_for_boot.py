#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: wait_for_boot
short_description: Reboot a node, or wait until it has booted again after a reset made through its BMC
version_added: "0.1.0"
description:
  - Polls the node with I(boot_time_command) until it answers with a boot marker other than I(previous),
    the one read before the reset. Connection errors while the node is down are retried.
  - A BMC answers a reset request at once and resets the server afterwards, so a node that answers right
    after the request may still be running the old boot; waiting for the connection alone can pass too
    early. M(ansible.builtin.reboot) compares boot markers the same way, but issues the reboot itself.
  - With an empty I(previous) (the node did not answer before the reset), and in check mode (no reset was
    made), the first answer is enough.
  - With I(reboot_command), the action reboots the node itself. It reads the boot marker (unless I(previous)
    is given), runs the command (a connection the shutdown closes under it counts as taken), then waits as
    above and until I(test_command) passes. One task for the reboot and the wait, so a C(throttle) on it
    holds both; the node is asked every I(sleep) seconds, where M(ansible.builtin.reboot) backs off to 12 s
    between tries and gathers facts first. In check mode nothing is rebooted and the result is C(changed).
  - An action plugin; it runs on the controller and uses the host's connection.
options:
  previous:
    description: The boot marker read before the reset.
    type: str
    default: ""
  boot_time_command:
    description:
      - Command whose output changes with every boot. The kernel's boot id; on nodes that share a kernel
        (containers) the start time of PID 1.
    type: str
    default: cat /proc/sys/kernel/random/boot_id
  delay:
    description: Seconds to wait before the first poll.
    type: int
    default: 0
  sleep:
    description: Seconds between polls.
    type: int
    default: 2
  timeout:
    description: Seconds to wait in all, I(delay) included, before failing.
    type: int
    default: 600
  reboot_command:
    description: Command that reboots the node, run with become when the play uses it; empty to only wait.
    type: str
    default: ""
  test_command:
    description: After the new boot, a command that must pass before the node counts as back; empty for none.
    type: str
    default: ""
  post_delay:
    description: Seconds to wait after the node is back, for services to settle.
    type: int
    default: 0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Read the boot marker before the reset
  ansible.builtin.command: cat /proc/sys/kernel/random/boot_id
  register: before
  changed_when: false

- name: Force-restart the node through its BMC
  community.general.redfish_command:
    baseuri: "{{ bmc_address }}"
    username: "{{ bmc_username }}"
    password: "{{ bmc_password }}"
    category: Systems
    command: PowerForceRestart
  delegate_to: localhost
  no_log: true

- name: Wait until the node has booted again
  gpufabric.stack.wait_for_boot:
    previous: "{{ before.stdout }}"
    delay: 10
    timeout: 900

- name: Reboot one node at a time and wait for each
  gpufabric.stack.wait_for_boot:
    reboot_command: shutdown -r 0 "kernel arguments changed"
    test_command: whoami
    timeout: 1800
  throttle: 1
"""


RETURN = r"""
rebooted:
  description: Whether I(reboot_command) was run and taken.
  returned: always
  type: bool
boot_marker:
  description: The boot marker the node answered with.
  returned: success
  type: str
new_boot:
  description: Whether it differs from I(previous); null when I(previous) was empty.
  returned: success
  type: bool
attempts:
  description: Polls made.
  returned: always
  type: int
elapsed:
  description: Seconds waited, I(delay) included.
  returned: always
  type: int
"""
