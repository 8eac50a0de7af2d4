#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: role_arguments
short_description: Check a host's variables against the argument specs of several roles of the collection in one task
version_added: "0.1.0"
description:
  - Checks, for the host, the variables of each role named in I(roles) against that role's argument spec
    (C(roles/<role>/meta/argument_specs.yml)), as ansible's own check at the start of a role does
    (M(ansible.builtin.validate_argument_spec)), on the same values, the role's defaults under the host's variables, templated,
    validated by ansible's C(ArgumentSpecValidator).
  - "C(playbooks/site.yml) imports its layer roles with C(rolespec_validate: false) and runs this once per host
    before the first layer, so one task checks every layer's input and a bad value stops the host before any
    layer changes it."
  - "The doctor (C(roles/doctor/tasks/layer.yml)) runs it with I(entry_point=doctor) before it includes a fabric
    layer's C(tasks/doctor.yml) without ansible's own check: the values are checked as plain copies, where ansible's
    check deep-copies each tagged value (the whole rack's cabling, on every node)."
  - Runs on the controller only; changes nothing. Reports every role whose variables do not match, not only the
    first; the values themselves are not returned.
options:
  roles:
    description: Names of roles of this collection (without the collection prefix).
    type: list
    elements: str
    required: true
  entry_point:
    description: The argument spec to check each role against, as C(tasks_from) names it.
    type: str
    default: main
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
- name: Check every layer's variables for this host before any change
  gpufabric.stack.role_arguments:
    roles: [bmc, bios, kernel]
  tags: [always]
"""

RETURN = r"""
roles:
  description: The roles checked.
  returned: always
  type: list
  elements: str
argument_errors:
  description: Per role whose variables do not match its spec, ansible's messages.
  returned: always
  type: dict
"""
