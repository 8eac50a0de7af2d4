# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The network operating systems the collection drives, in one place: the
drivers (drivers.py), the rack twin's switch models and its lab
(simlab/nos.py reads this file) are held to this list by
tests/unit/test_nos_registry.py.  No imports: simlab loads the file by its
path, without Ansible."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# in the order the rack twin gives them to its leaves
NOS = ("onyx", "nvue", "eos", "nxos", "sonic-dell", "sonic-community")

DESCRIPTIONS = {
    "onyx": "NVIDIA Onyx (Mellanox MLNX-OS)",
    "nvue": "NVIDIA Cumulus Linux (NVUE)",
    "eos": "Arista EOS",
    "nxos": "Cisco NX-OS",
    "sonic-dell": "Dell Enterprise SONiC",
    "sonic-community": "community SONiC",
}

# How each names front-panel port n of a leaf without breakouts, as its CLI
# prints it; community SONiC names a port by its first lane (4 per port).
_PORTS = {
    "onyx": "ethernet 1/{n}",
    "nvue": "swp{n}",
    "eos": "Ethernet{n}",
    "nxos": "Ethernet1/{n}",
    "sonic-dell": "Eth1/{n}",
    "sonic-community": "Ethernet{lane}",
}


def port_name(nos, n):
    """Front-panel port ``n`` (from 1) of a ``nos`` leaf."""
    if nos not in _PORTS:
        raise ValueError("unknown NOS %r; known: %s" % (nos, ", ".join(NOS)))
    return _PORTS[nos].format(n=n, lane=4 * (n - 1))
