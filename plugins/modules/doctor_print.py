#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: doctor_print
short_description: Print the doctor's hosts x layers table on the terminal, in colour
version_added: "0.1.0"
description:
  - Prints the table of the doctor's report (roles/doctor) as it is, so ANSI colours reach the terminal
    (green pass, red fail, yellow warn, grey blocked and skipped); a debug message would show them quoted.
  - Runs on the controller only; changes nothing.
options:
  report:
    description:
      - "The doctor's report as in report.json: a mapping of host to C(verdict) and C(layers)."
    type: dict
    required: true
  color:
    description:
      - Colour the table. Unset follows Ansible's own decision (a terminal on stdout, C(ANSIBLE_NOCOLOR),
        C(ANSIBLE_FORCE_COLOR)).
    type: bool
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
- name: Layer report
  gpufabric.stack.doctor_print:
    report: "{{ doctor_report }}"
    color: true
"""

RETURN = r"""
lines:
  description: The table without colours.
  returned: always
  type: list
  elements: str
color:
  description: Whether the printed table was coloured.
  returned: always
  type: bool
"""
