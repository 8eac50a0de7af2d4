# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CNI settings of layer 12 (plugins/plugin_utils/cni/kube_net.py).
Documented in cni_settings.yml.

The filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def cni_settings(plugin, encapsulation, underlay_mtu, mtu=0, pod_cidr=None, cross_subnet=False):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.cni import kube_net
    return kube_net.cni_settings(plugin, encapsulation, underlay_mtu, mtu, pod_cidr, cross_subnet)


class FilterModule(object):
    def filters(self):
        return {"cni_settings": cni_settings}
