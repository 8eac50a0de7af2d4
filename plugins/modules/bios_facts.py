#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: bios_facts
short_description: Read a server's current and pending BIOS attributes through its Redfish BMC, in one call
version_added: "0.1.0"
description:
  - Follows the links of the Redfish service from its service root C(/redfish/v1/) through C(Systems) to the
    first system, its C(Bios)
    resource (the current C(Attributes)) and the C(@Redfish.Settings) object of that resource (the attributes
    pending the next reset, those that differ from the current value). For Supermicro it also reads the BIOS
    attribute registry, found through the root's C(Registries) collection, whose C(DisplayName)s resolve the
    BIOS's per-version attribute keys.
  - community.general.redfish_info reads the current attributes but not the pending ones; this module reads
    both in one execution, so the bios role and the doctor's layer 2 cost one call per node.
  - "Runs where the BMC is reachable, normally the controller (C(delegate_to: localhost)). There (a C(local)
    connection) its action plugin reads from the controller's own process, as the doctor does, and executes no
    module; on any other connection the module runs on that host."
  - A BMC that does not answer, refuses the credentials or serves no BIOS is not a module failure; the
    result's C(error) says which, so the caller reports it per node.
  - An empty I(baseuri), I(username) or I(password) sends nothing; C(error) names each by the inventory variable it
    comes from (C(bmc_password must not be empty)).
  - Read-only; safe in check mode.
options:
  baseuri:
    description: The BMC's address, C(host) or C(host:port), with or without C(https://).
    type: str
    required: true
  username:
    description: BMC user.
    type: str
    required: true
  password:
    description: BMC password.
    type: str
    required: true
  validate_certs:
    description: Verify the BMC's TLS certificate against a CA (I(ca_path), or the system store).
    type: bool
    default: false
  ca_path:
    description: A PEM bundle of the CA that signs the BMC's certificate.
    type: path
  pin:
    description:
      - The SHA-256 fingerprint of the BMC's certificate (from M(gpufabric.stack.bmc_trust)). Every connection is
        held to it right after the TLS handshake, before the request and its credentials are written; a
        different certificate is an error and nothing is sent.
    type: str
  timeout:
    description: Seconds to wait for each answer.
    type: int
    default: 30
  vendor:
    description:
      - C(auto) derives the vendor from the system's C(Manufacturer); only C(supermicro) changes what is read
        (the attribute registry).
    type: str
    default: auto
    choices: [auto, dell, hpe, supermicro, lenovo]
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
- name: Read the BIOS of a node
  gpufabric.stack.bios_facts:
    baseuri: "{{ bmc_address }}"
    username: "{{ bmc_username }}"
    password: "{{ bmc_password }}"
  delegate_to: localhost
  no_log: true
  register: bios

- name: Fail when the BMC could not be read
  ansible.builtin.fail:
    msg: "{{ inventory_hostname }}: {{ bios.error }}"
  when: bios.error | length > 0
"""

RETURN = r"""
error:
  description: Empty when the BIOS was read; otherwise why not (unreachable, wrong credentials, HTTP status).
  type: str
  returned: always
system_error:
  description:
    - What layer 1 (the BMC) sees of the read, empty when the system was read (a BIOS that could not be read after
      it is layer 2's C(error)); otherwise why not, led by C(wrong credentials), C(BMC unreachable) or
      C(BMC not trusted). The bmc role fails on it, the doctor's layer 1 check names it.
  type: str
  returned: always
status:
  description: HTTP status of the first request that failed, C(-1) when nothing answered, 200 on success.
  type: int
  returned: always
manufacturer:
  description: The system's C(Manufacturer).
  type: str
  returned: always
vendor:
  description: dell, hpe or supermicro; empty for a manufacturer the collection does not know.
  type: str
  returned: always
system_uri:
  description: Path of the system resource.
  type: str
  returned: always
system:
  description:
    - The system resource's C(Manufacturer), C(Model), C(SerialNumber), C(BiosVersion) and C(PowerState), those
      it has; empty when the system was not read. The bmc role and the doctor judge layer 1 (the BMC) from it, so
      one call serves layers 1 and 2.
  type: dict
  returned: always
  sample: {"Manufacturer": "Dell Inc.", "Model": "PowerEdge XE9680", "SerialNumber": "CN7016", "BiosVersion": "2.3.5",
           "PowerState": "On"}
boot_order:
  description: The system's C(Boot.BootOrder), its boot option references in boot order; empty when not read.
  type: list
  elements: str
  returned: always
  sample: ["Boot0001", "Boot0002"]
bios_uri:
  description: Path of the system's Bios resource.
  type: str
  returned: always
settings_uri:
  description: Path of the pending settings object, empty when the BIOS has none.
  type: str
  returned: always
current:
  description: The current BIOS attributes.
  type: dict
  returned: always
pending:
  description: The attributes staged for the next reset.
  type: dict
  returned: always
registry:
  description: The English BIOS attribute registry (Supermicro only; empty otherwise or when unavailable).
  type: dict
  returned: always
job_queue:
  description:
    - The job queue the pending settings object links (iDRAC's C(Oem.Dell.Jobs)), empty where the BMC has none.
      iDRAC applies pending BIOS settings at a reset only through a BIOS configuration job.
  type: str
  returned: always
bios_jobs:
  description:
    - Where there are pending settings and a job queue, its BIOS configuration jobs that have not run yet (the
      last 16 members read), each with C(id), C(state), C(message) and C(uri); V(null) when the queue could not
      be read.
  type: list
  elements: dict
  returned: always
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.bios import redfish_bios


def main():
    module = AnsibleModule(argument_spec=redfish_bios.FACTS_ARGUMENT_SPEC, supports_check_mode=True)
    module.exit_json(changed=False, **redfish_bios.facts(module.params))


if __name__ == "__main__":
    main()
