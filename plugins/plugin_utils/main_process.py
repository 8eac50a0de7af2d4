# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's action plugins load in the controller's main
process, before the strategy forks a worker per host and task.

The linear strategy loads a task's action class in its main process (to ask
it BYPASS_HOST_LOOP) before it forks the task's workers, and every worker
inherits what the main process holds. ansible-core loads its Jinja filter
and test plugins on the first template a process compiles, and a
collection's filter files on its first lookup of one of them: left to the
workers, each worker pays that again (a median 21 ms for the first
compilation in a worker against 1.8 ms for the others, measured on
validate.yml; docs/performance.md). Loaded here, once, the workers find
them loaded. The same holds for the Jinja lexer ansible-core builds for its
template settings (kept per process): built here by one template, not once
per worker by the worker's first condition or template."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# one of this collection's filters: looking it up loads every filter file of the collection
COLLECTION_FILTER = "gpufabric.stack.doctor_layers"
_LOADED = []


def load_jinja_plugins():
    """Load ansible.builtin's Jinja filters and tests and this collection's
    filters in this process, once (later calls do nothing)."""
    if _LOADED:
        return
    from ansible.plugins.loader import filter_loader, test_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig
    for loader in (filter_loader, test_loader):
        # ansible-core's and the configured paths' plugins, as a first template would load them
        for _plugin in loader.all():
            pass
    if AnsibleCollectionConfig.collection_finder is not None:
        # ansible's collection loader is set up (not where Python imports the plugin from its path)
        filter_loader.get(COLLECTION_FILTER)
    _LOADED.append(True)
    # one template with the default settings builds their lexer (ansible-core
    # 2.19 keeps it for the process); an ansible-core without template trust
    # (before 2.19) neither has that lexer cache nor this function
    try:
        from ansible.template import trust_as_template
    except ImportError:
        return
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    Templar(loader=DataLoader()).template(trust_as_template("{{ 0 }}"))
