#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: perftest_round
short_description: Run one node's part of a round of perftest pairs (ib_write_bw) in three calls
version_added: "0.1.0"
description:
  - A round of bandwidth pairs spans nodes; the play runs three tasks in lockstep over every node of the round,
    each one call of this module per node.
  - C(phase=serve) starts the node's servers detached, each in its own session under C(timeout), and returns
    when every one listens on its TCP port (or, with rdma_cm, is still running after two seconds), exited,
    or I(listen_timeout) passed.
  - C(phase=run) runs the node's clients at once under C(timeout) and returns their exit codes and output.
  - C(phase=collect) waits up to I(wait) seconds for the node's servers to exit, stops the ones still running
    (only if the pid's command line still names I(command)), returns their output and removes their files.
  - Changes nothing on the host beyond its own files in I(run_dir); C(changed) is always false. Check mode runs
    nothing.
options:
  phase:
    description: Which part of the round.
    type: str
    required: true
    choices: [serve, run, collect]
  servers:
    description: C(serve) only. Servers to start, C({port, argv}).
    type: list
    elements: dict
    default: []
  clients:
    description: C(run) only. Clients to run, C({id, argv}).
    type: list
    elements: dict
    default: []
  ports:
    description: C(collect) only. Ports of the servers this node started.
    type: list
    elements: int
    default: []
  run_dir:
    description: Where the servers' pid, output and exit status files live.
    type: path
    default: /run/gpufabric-rdma-check
  timeout:
    description: Seconds after which C(timeout) stops a server (C(serve)) or a client (C(run)).
    type: int
    default: 60
  listen_timeout:
    description: C(serve) only. Seconds to wait for the servers to listen.
    type: int
    default: 30
  mode:
    description: C(serve) only. C(tcp) waits for a listening TCP socket; C(alive) (rdma_cm) for a running server.
    type: str
    choices: [tcp, alive]
    default: tcp
  wait:
    description: C(collect) only. Seconds to wait for the servers to exit before stopping them.
    type: int
    default: 5
  command:
    description: C(collect) only. A server is stopped only if its command line contains this (the perftest binary).
    type: str
    default: ib_write_bw
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Start this node's servers and wait until they listen
  gpufabric.stack.perftest_round:
    phase: serve
    servers: [{port: 18515, argv: [ib_write_bw, -d, mlx5_0, -x, "3", -p, "18515"]}]
  register: served
"""

RETURN = r"""
started:
  description: C(serve). Ports of the servers started.
  type: list
  elements: int
  returned: phase serve
not_listening:
  description: C(serve). Servers that exited or did not listen in time, with C(port), C(finished), C(rc), C(stdout), C(stderr).
  type: list
  elements: dict
  returned: phase serve
clients:
  description: C(run). One entry per client, C({id, finished, rc, stdout, stderr}).
  type: list
  elements: dict
  returned: phase run
servers:
  description: C(collect). One entry per server, C({port, finished, rc, stdout, stderr, stopped}).
  type: list
  elements: dict
  returned: phase collect
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils import perftest_round


def main():
    module = AnsibleModule(
        argument_spec=dict(
            phase=dict(type="str", required=True, choices=["serve", "run", "collect"]),
            servers=dict(type="list", elements="dict", default=[]),
            clients=dict(type="list", elements="dict", default=[]),
            ports=dict(type="list", elements="int", default=[]),
            run_dir=dict(type="path", default="/run/gpufabric-rdma-check"),
            timeout=dict(type="int", default=60),
            listen_timeout=dict(type="int", default=30),
            mode=dict(type="str", choices=["tcp", "alive"], default="tcp"),
            wait=dict(type="int", default=5),
            command=dict(type="str", default="ib_write_bw"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="check mode runs no traffic")
    if p["phase"] == "serve":
        result = perftest_round.serve(p["servers"], p["run_dir"], p["timeout"], p["listen_timeout"], mode=p["mode"])
    elif p["phase"] == "run":
        result = {"clients": perftest_round.run_clients(p["clients"], p["timeout"])}
    else:
        result = {"servers": perftest_round.collect(p["ports"], p["run_dir"], p["command"], wait_s=p["wait"])}
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
