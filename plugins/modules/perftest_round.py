#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: perftest_round
short_description: Run one node's part of a round of perftest pairs (ib_write_bw), in three calls or one
version_added: "0.1.0"
description:
  - A round of bandwidth pairs spans nodes; the play runs three tasks in lockstep over every node of the round,
    each one call of this module per node.
  - C(phase=serve) starts the node's servers detached, each in its own session under C(timeout), and returns
    when every one listens on its TCP port or already has its client (a connection on the port, or exit status
    0; perftest closes its listener once its client connects), or, with rdma_cm, is still running after two
    seconds; or has failed, or I(listen_timeout) passed.
  - C(phase=run) runs the node's clients at once under C(timeout) and returns their exit codes and output.
  - C(phase=collect) waits up to I(wait) seconds for the node's servers to exit, stops the ones still running
    (only if the pid's command line still names I(command)), returns their output and removes their files.
  - C(phase=round) does the three in one call, for a play whose nodes all make the call at the same time (they
    fit in its forks). A client whose connection is refused (it prints C(Couldn't connect to) or C(Unable to init
    the socket connection), its server on a node whose call started a moment later not listening yet) runs again
    every half second for up to I(listen_timeout) seconds. The servers are then waited for up to I(listen_timeout)
    plus I(client_timeout) seconds, the longest a peer's client may still take; but twice I(listen_timeout) after
    the call started, only the servers with an established connection on their port (perftest holds its client's
    connection through the test), or with one seen in the last five seconds (a server closes it a moment before it
    exits), are still waited for. Then they are collected.
  - Changes nothing on the host beyond its own files in I(run_dir); C(changed) is always false. Check mode runs
    nothing.
options:
  phase:
    description: Which part of the round.
    type: str
    required: true
    choices: [serve, run, collect, round]
  servers:
    description: C(serve) and C(round). Servers to start, C({port, argv}).
    type: list
    elements: dict
    default: []
  clients:
    description: C(run) and C(round). Clients to run, C({id, argv}).
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
    description: Seconds after which C(timeout) stops a server (C(serve), C(round)) or a client (C(run)).
    type: int
    default: 60
  client_timeout:
    description: C(round) only. Seconds after which C(timeout) stops a client.
    type: int
    default: 60
  listen_timeout:
    description: C(serve) and C(round). Seconds to wait for the servers to listen; in C(round), also how long a
      client whose connection is refused tries again.
    type: int
    default: 30
  mode:
    description: C(serve) and C(round). C(tcp) waits for a listening TCP socket; C(alive) (rdma_cm) for a running server.
    type: str
    choices: [tcp, alive]
    default: tcp
  wait:
    description: C(collect) only. Seconds to wait for the servers to exit before stopping them.
    type: int
    default: 5
  command:
    description: C(collect) and C(round). A server is stopped only if its command line contains this (the perftest binary).
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

- name: The whole round in one call, every node of the round at the same time
  gpufabric.stack.perftest_round:
    phase: round
    servers: [{port: 18515, argv: [ib_write_bw, -d, mlx5_0, -x, "3", -p, "18515"]}]
    clients: [{id: node01/mlx5_1, argv: [ib_write_bw, -d, mlx5_1, -x, "3", -p, "18516", 172.30.1.2]}]
    client_timeout: 65
  register: round
"""

RETURN = r"""
started:
  description: C(serve), C(round). Ports of the servers started.
  type: list
  elements: int
  returned: phases serve and round
not_listening:
  description: C(serve), C(round). Servers that exited or did not listen in time, with C(port), C(finished), C(rc), C(stdout), C(stderr).
  type: list
  elements: dict
  returned: phases serve and round
clients:
  description: C(run), C(round). One entry per client, C({id, finished, rc, stdout, stderr}).
  type: list
  elements: dict
  returned: phases run and round
servers:
  description: C(collect), C(round). One entry per server, C({port, finished, rc, stdout, stderr, stopped}).
  type: list
  elements: dict
  returned: phases collect and round
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import perftest_round


def main():
    module = AnsibleModule(
        argument_spec=dict(
            phase=dict(type="str", required=True, choices=["serve", "run", "collect", "round"]),
            servers=dict(type="list", elements="dict", default=[]),
            clients=dict(type="list", elements="dict", default=[]),
            ports=dict(type="list", elements="int", default=[]),
            run_dir=dict(type="path", default="/run/gpufabric-rdma-check"),
            timeout=dict(type="int", default=60),
            client_timeout=dict(type="int", default=60),
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
    elif p["phase"] == "round":
        result = perftest_round.one_round(p["servers"], p["clients"], p["run_dir"], p["timeout"], p["client_timeout"],
                                          p["listen_timeout"], p["command"], mode=p["mode"])
    else:
        result = {"servers": perftest_round.collect(p["ports"], p["run_dir"], p["command"], wait_s=p["wait"])}
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
