#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: doctor_report
short_description: Build the doctor's report of the play's hosts and write it on the controller
version_added: "0.1.0"
description:
  - Builds the doctor's report from the records of I(hosts) (their C(doctor_results), which the doctor's
    C(layers.yml) sets; a host without records is reported unreachable at layer 1, with what Ansible said about
    the connection in C(doctor_node)), or takes I(report) as it is.
  - Writes the report (roles/doctor) as C(report.json), C(report.xml) (JUnit, one test suite per host and
    one test case per layer) and C(report.html) (the rack view) into I(dest) on the controller, creating the
    directory. A file is replaced only when its content differs; C(report.html) carries the time it was generated.
  - Runs on the controller in the task's own process; no module runs on any host. Fails, writing nothing, when a
    record of the report is not one the doctor's result constructor makes.
  - In check mode says which files would change and writes none.
options:
  hosts:
    description: The hosts to report on; each one's records are read from its variables. Or I(report).
    type: list
    elements: str
  report:
    description:
      - "A report made already: a mapping of host to C(verdict) and C(layers), as in C(report.json). Or I(hosts)."
    type: dict
  dest:
    description: The directory on the controller.
    type: path
    required: true
  title:
    description: Title of C(report.html) and name of the JUnit test suites.
    type: str
    default: gpufabric doctor
  switches:
    description: The inventory names of the leaf switches; C(report.html) groups their rows apart.
    type: list
    elements: str
    default: []
  cabling:
    description: The cabling plan (C(gpufabric_cabling)) drawn in C(report.html).
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: all
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Write the report files
  gpufabric.stack.doctor_report:
    hosts: "{{ ansible_play_hosts_all }}"
    dest: "{{ playbook_dir }}/../reports"
    switches: "{{ groups['leaf_switches'] | default([]) }}"
    cabling: "{{ gpufabric_cabling | default([]) }}"
"""

RETURN = r"""
report:
  description: The report, a mapping of host to C(verdict) and C(layers), as written to C(report.json).
  returned: success
  type: dict
files:
  description: The three files' paths.
  returned: success
  type: list
  elements: str
written:
  description: The files written (in check mode, those that would be).
  returned: success
  type: list
  elements: str
module_executions:
  description: Always 0; the C(gpufabric.stack.task_counter) callback counts the task as a controller action.
  returned: always
  type: int
"""
