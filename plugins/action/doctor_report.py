# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the doctor's report of the play's hosts from their records
(doctor_results) and write it (report.json, report.xml, report.html) on the
controller, in the task's own process: no module runs anywhere. The writers
are plugin_utils/doctor_report.py's; the files are compared and written by
module_utils/host/host_files.py (replaced only when they differ, through a
temporary file in the same directory)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import re

from ansible.plugins.action import ActionBase
from jinja2 import Environment
from jinja2.filters import do_truncate

from ansible_collections.gpufabric.stack.plugins.plugin_utils import doctor, doctor_report, main_process, plain_data
from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import cabling as cabling_check
from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files

# the Jinja plugins loaded before the workers fork (plugin_utils/main_process.py)
main_process.load_jinja_plugins()

ARGS = {
    "hosts": {"type": "list", "elements": "str"},
    "report": {"type": "dict"},
    "dest": {"type": "path", "required": True},
    "title": {"type": "str", "default": "gpufabric doctor"},
    "switches": {"type": "list", "elements": "str", "default": []},
    "cabling": {"type": "list", "elements": "dict", "default": []},
}


def host_entry(host, hostvars):
    """{verdict, layers} of ``host`` from its variables: its records
    (doctor_results, which the doctor's layers.yml sets), or, when it has
    none, a failing layer 1 with what Ansible said about the connection
    (validate.yml's first check registers doctor_node even when the host is
    unreachable)."""
    results = hostvars.get("doctor_results")
    if results is not None:
        checked, rows = doctor.verdict([doctor.record(r, "%s: a record of doctor_results" % host)
                                        for r in results])
        return {"verdict": checked, "layers": rows}
    message = (hostvars.get("doctor_node") or {}).get("msg")
    evidence = []
    if message is not None:
        evidence = ["%s to %s: %s" % (hostvars.get("ansible_connection") or "ssh", hostvars.get("ansible_host") or host,
                                      do_truncate(Environment(), re.sub(r"\s+", " ", str(message)), 400))]
    return {"verdict": {"status": "fail", "layer": 1, "reason": "host unreachable: no layer could be checked"},
            "layers": [doctor.result(1, "fail", "host unreachable", evidence,
                                     "check power and the BMC (layer 1), then the connection settings")]}


def contents(report, title, switches, cabling, generated):
    """{file name: text} of the three reports (ValueError for a record the
    writers refuse)."""
    return {
        "report.json": doctor_report.json_report(report),
        "report.xml": doctor_report.junit_xml(report, title),
        "report.html": doctor_report.html_report(report, switches, cabling, title, generated),
    }


def planned(dest, texts):
    """(files, plan) for host_files.apply: the reports ``texts`` ({file name:
    text}) in the directory ``dest`` of the controller, mode 0644, owner and
    group left as the controller's user makes them."""
    files = host_files.normalize([{"path": os.path.normpath(os.path.abspath(os.path.join(dest, name))),
                                   "content": text, "mode": "0644", "owner": None, "group": None}
                                  for name, text in sorted(texts.items())])
    return files, host_files.plan(files)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _VALID_ARGS = frozenset(ARGS)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _valid, args = plain_data.validate_args(self, argument_spec=ARGS, mutually_exclusive=[["hosts", "report"]],
                                                required_one_of=[["hosts", "report"]])
        report = args["report"]
        if args["hosts"] is not None:
            hostvars = task_vars.get("hostvars") or {}
            try:
                report = dict((h, host_entry(h, hostvars[h] if h in hostvars else {})) for h in args["hosts"])
            except (TypeError, ValueError) as exc:
                result.update(failed=True, msg="the doctor's report: %s" % exc)
                return result
        generated = "generated " + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cabling = args["cabling"]
        if args["hosts"] is not None and cabling:
            # the cables as LLDP found them in this run (the nodes' and the leaves' one read each)
            hostvars = task_vars.get("hostvars") or {}

            def read(host, key):
                node = (hostvars[host].get("doctor_node") or {}) if host in hostvars else {}
                return plain_data.plain(node.get(key) or {})
            cabling = cabling_check.as_found(
                plain_data.plain(cabling), dict((h, read(h, "reading")) for h in {c.get("node") for c in cabling}),
                dict((s, read(s, "switch")) for s in {c.get("switch") for c in cabling}))
        try:
            texts = contents(report, args["title"], args["switches"], cabling, generated)
        except ValueError as exc:
            result.update(failed=True, msg="the doctor's report: %s" % exc)
            return result
        try:
            files, plan = planned(args["dest"], texts)
            changed = [p["path"] for p in plan if p["state"] != "unchanged"]
            if not self._task.check_mode:
                host_files.apply(files, plan)
        except (host_files.HostFilesError, IOError, OSError) as exc:
            result.update(failed=True, msg="cannot write the doctor's report in %s: %s" % (args["dest"], exc))
            return result
        # the report files are the controller's, not a change of the rack: a
        # read-only run reports changed=0; what was written is in `written`
        result.update(changed=False, report=report, files=[f["path"] for f in files], written=changed,
                      module_executions=0)
        return result
