# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Layer 7: lossless RoCE on leaf switches.  ``model`` holds the platform-neutral
data model, validation and diff; one driver module per NOS renders and parses;
``transport`` talks to the switch with netmiko."""
