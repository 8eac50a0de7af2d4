# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the doctor (playbooks/validate.yml, roles/doctor) and the
rollout's health gate: the layer registry (plugin_utils/layers.py), a host's
records per layer and verdict (plugin_utils/doctor.py) and the report writers
(plugin_utils/doctor_report.py). Each filter is documented in
plugins/filter/<name>.yml.

Each filter imports its module_utils when it is called: Ansible imports every
filter file of the collection in each worker that looks up one of its filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def doctor_layers(group=None, scope=None, numbers=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import layers
    return layers.entries(layers.select(group, scope, numbers))


def doctor_failed(entries, skip_tags=None, given=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
    return doctor.earlier_failure(entries, skip_tags or [], given) is not None


def doctor_layer_results(entries, skip_tags=None, given=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
    return doctor.layer_results(entries, skip_tags or [], given)


def doctor_verdict(results):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor
    v, rows = doctor.verdict(results or [])
    return {"verdict": v, "layers": rows}


def doctor_table(report, color=False):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor_report
    return doctor_report.table(report or {}, bool(color))


def doctor_json(report):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor_report
    return doctor_report.json_report(report or {})


def doctor_junit(report, name="gpufabric doctor", timestamp=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor_report
    return doctor_report.junit_xml(report or {}, name, timestamp)


def doctor_html(report, switches=None, cabling=None, title="gpufabric doctor", generated=None):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor_report
    return doctor_report.html_report(report or {}, switches, cabling, title, generated)


def doctor_use_color(value=None):
    """True/False as given; None or 'auto' follows Ansible's own colour
    decision (a terminal on stdout, ANSIBLE_NOCOLOR, ANSIBLE_FORCE_COLOR)."""
    if isinstance(value, bool):
        return value
    if value is None or str(value).strip().lower() in ("", "auto", "none"):
        from ansible.utils.color import ANSIBLE_COLOR
        return bool(ANSIBLE_COLOR)
    return str(value).strip().lower() in ("1", "true", "yes", "on")


class FilterModule(object):
    def filters(self):
        return {"doctor_layers": doctor_layers,
                "doctor_failed": doctor_failed,
                "doctor_layer_results": doctor_layer_results, "doctor_verdict": doctor_verdict,
                "doctor_table": doctor_table, "doctor_json": doctor_json, "doctor_junit": doctor_junit, "doctor_html": doctor_html,
                "doctor_use_color": doctor_use_color}
