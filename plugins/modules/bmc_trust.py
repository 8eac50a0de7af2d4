#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: bmc_trust
short_description: Pin a BMC's TLS certificate on first contact and refuse a changed one before any credential is sent
version_added: "0.1.0"
description:
  - Reads the certificate the BMC at I(address) presents, with a TLS handshake and no request, from the controller
    (where the Redfish calls go from), and holds its SHA-256 fingerprint to the line of that BMC in I(known_certs),
    a known-certificates file as SSH's known_hosts is for host keys. One line per BMC, C(<host:port> SHA256:<hex
    pairs>) as C(openssl x509 -noout -fingerprint -sha256) prints it; C(#) starts a comment.
  - A BMC without a line is pinned on this first contact (a warning names it and the fingerprint). A BMC whose
    certificate differs fails the task, naming the BMC and both fingerprints, before anything is sent to it. To
    accept a certificate replaced on purpose, remove the BMC's line; the next run pins the new one.
  - Parallel hosts pin their BMCs in the same file under a lock. A line that cannot be read fails the task,
    quoting it.
  - The bmc and bios roles, and the bmc role's reset path, run it before their first Redfish call
    (C(bmc_pin_certs), on unless C(bmc_validate_certs) verifies against a CA); the collection's own reads then
    hold every connection to the pin before the request is written (M(gpufabric.stack.bios_facts)), and the
    doctor does the same in its BMC read. community.general's Redfish modules take no pin; they run after this
    check on connections of their own, a window that only a CA (C(bmc_ca_path)) closes.
  - An action plugin; it runs on the controller.
options:
  address:
    description: The BMC, C(host), C(host:port) or C(https://host:port) (port 443 when none is given).
    type: str
    required: true
  known_certs:
    description: The known-certificates file; created with its directory on the first pin.
    type: path
    required: true
  timeout:
    description: Seconds for the TCP connection and the TLS handshake.
    type: int
    default: 30
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: A BMC not pinned yet is reported as new and not written to the file.
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Trust the BMC's certificate before sending its credentials
  gpufabric.stack.bmc_trust:
    address: "{{ bmc_address }}"
    known_certs: "{{ inventory_dir }}/bmc_known_certs.txt"
  register: bmc_cert

- name: Read the BIOS over connections held to the pin
  gpufabric.stack.bios_facts:
    baseuri: "{{ bmc_address }}"
    username: "{{ bmc_username }}"
    password: "{{ bmc_password }}"
    pin: "{{ bmc_cert.fingerprint }}"
  delegate_to: localhost
"""

RETURN = r"""
address:
  description: The BMC as the file names it, C(host:port).
  returned: success
  type: str
fingerprint:
  description: The SHA-256 fingerprint of the certificate it presented.
  returned: success
  type: str
  sample: "SHA256:3B:6A:..."
status:
  description: C(trusted) (as pinned) or C(new) (pinned on this first contact; in check mode, only seen).
  returned: success
  type: str
message:
  description: What was found, in words.
  returned: success
  type: str
module_executions:
  description: Always 0; the action runs on the controller, one TLS handshake with the BMC and no module (the
    C(gpufabric.stack.task_counter) callback counts it as a controller action).
  returned: always
  type: int
"""
