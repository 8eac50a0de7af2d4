# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One file per layer, named after its role (module_utils/layers.py), each
the same shape:

- ``INTENT``: the role variables the check judges against (resolved from the
  role's defaults and the inventory by the doctor);
- ``reads(intent)``: for a node layer, what the doctor's one read of the node
  must hold for it (nic_facts options, or ``bmc``);
- ``check(reading, intent, host)``: a pure function from that reading and
  the intent to one result record (module_utils/doctor.py ``result``).
"""
