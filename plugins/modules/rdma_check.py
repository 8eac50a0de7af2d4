#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: rdma_check
short_description: Layer 9's RDMA fabric check across nodes, one phase per task
version_added: "0.1.0"
description:
  - The coordination of the C(rdma_check) role (layer 9) and of its doctor check, an action that runs on the
    controller; the logic is C(plugins/plugin_utils/rdma_check/rdma_pairs.py).
  - C(phase=cabling), run once for the play (C(run_once), registered on every host as C(rdma_check_cabled)), holds
    each play host's I(cabling) entries to what LLDP shows at both ends, from every node's reading at
    I(lldp_readings) and every leaf's answer at I(switch_readings) in their host variables, each taken once. Its
    C(by_node) entry of a host is that host's I(cabled).
  - C(phase=links) checks the node's PFs (those that I(nics) selects) for an up link and a RoCE v2 GID, and finds
    their cabling, from I(reading) (where a C(gpufabric.stack.nic_facts) answer of I(sysfs_root) is in the node's
    variables) or, when there is none, from one C(nic_facts) execution on the node; with I(rdma_link_show) also from C(rdma link show). The
    cabling verdicts are I(cabled) where given and the reading has the node's LLDP, else judged here the same way.
    Register it as C(rdma_check_linked).
  - C(phase=plan), run once for the play (C(run_once), so that every host registers the same result as
    C(rdma_check_planned)), plans the rounds of C(ib_write_bw) pairs over the rails of the nodes taking part. A node
    takes part when its C(rdma_check_linked) has no inventory errors and I(bandwidth) and, with I(below), when its
    doctor records of this run (C(doctor_checked)) show none of those layers failing.
  - C(phase=round) runs round I(round) of the plan on the node in one C(gpufabric.stack.perftest_round) execution
    (servers, clients, collection), for a play whose nodes all run it at once (the plan's C(in_one)); register it as
    C(rdma_check_round). C(phase=serve), C(run) and C(collect) are the same round in three executions every node
    makes in step, registered as C(rdma_check_served), C(rdma_check_ran) and C(rdma_check_collected); C(run) leaves
    out the clients whose server did not listen. A node with nothing to do in the round executes nothing.
  - C(phase=gate), run once for the play, gives the result of every pair each node of the plan sent on up to round
    I(round) (C(by_node)), from its clients' and its peers' servers' results (the nodes' registered results), gated at
    I(share) of the slower end's line rate; register it as C(rdma_check_gated). A node no longer in the play (failed
    or unreachable) is not gated.
  - C(phase=recheck), run once for the play after the plan's rounds and registered as C(rdma_check_planned) again,
    gives the plan with rounds after its own that run again the pairs that fell short (C(by_node) in
    C(rdma_check_gated) of this plan) - from host memory a pair that ran from GPU memory, which tells the GPU's path
    from the fabric; once more as it ran (id ending C(:again)) a pair from host memory that measured under the gate,
    which fails the node only if its second run falls short too. C(recheck_from) is the index of the first of these
    rounds; a healthy rack has none, so each pair runs once.
options:
  phase:
    description: The step; see the description.
    type: str
    required: true
    choices: [cabling, links, plan, round, serve, run, collect, gate, recheck]
  reading:
    description:
      - C(links). The dotted path, in this node's host variables, of its C(nic_facts) answer (as I(lldp_readings)
        names the nodes' readings); when nothing is there, or it is not an answer of I(sysfs_root), the node is read.
        A value that is not such a path (the answer itself) fails the node, naming it.
    type: str
    default: ""
  sysfs_root:
    description: C(links). The sysfs root the NICs are read under.
    type: str
    default: /sys
  vendor:
    description: C(links). Only the PFs of this PCI vendor ID; empty for all.
    type: str
    default: ""
  nics:
    description: C(links). The inventory's selection of PFs (C(gpufabric_nics)).
    type: list
    elements: dict
    default: []
  cabling:
    description: C(cabling) and C(links). The cabling plan (C(gpufabric_cabling)).
    type: list
    elements: dict
    default: []
  gid_index:
    description: C(links). The GID index to use on every PF; null finds the RoCE v2 GID with an IPv4 address.
    type: raw
  addresses:
    description: C(links). The IPv4 address to use per PF (netdev name to address).
    type: dict
    default: {}
  line_rate_mbps:
    description: C(links). The line rate to gate against, where the link speed is not the one to use.
    type: int
  rdma_link_show:
    description: C(links). Also read the RDMA port states with C(rdma link show) (one more execution on the node).
    type: bool
    default: false
  bandwidth:
    description: C(links). Whether the node takes part in the pairwise test.
    type: bool
    default: true
  lldp:
    description: C(cabling) and C(links). Hold the cabling plan to what LLDP shows (the node's reading has C(lldp)).
    type: bool
    default: false
  gpu_memory:
    description: C(links) and C(plan). Pairs on GPUs' rails run from GPU memory (the reading's C(pcie) rails).
    type: bool
    default: false
  gpudirect:
    description: C(links). The GPUDirect RDMA mode asked of the node's reading (C(auto), C(peermem), C(dmabuf)).
    type: str
    default: auto
  lldp_readings:
    description: C(cabling) and C(links). The dotted path, in each node's host variables, of its reading with C(lldp).
    type: str
    default: ""
  switch_readings:
    description: C(cabling) and C(links). The dotted path, in each leaf's host variables, of its answer with C(lldp).
    type: str
    default: ""
  cabled:
    description: C(links). This node's entry of the C(cabling) phase's C(by_node) (C({pfs, errors})).
    type: dict
  fail_on_errors:
    description: C(links). Fail the node, naming them, when its links have inventory problems (C(links.errors)); the
      answer is registered all the same.
    type: bool
    default: false
  pairs:
    description: C(plan). C(ring) (one round, every node the client of its successor) or C(all) (every ordered pair).
    type: str
    default: ring
  port_base:
    description: C(plan). The server TCP port of the first rail; rail k uses I(port_base) + k.
    type: int
    default: 18515
  round_calls:
    description: C(plan). C(one) call per node and round, C(three) in step, or C(auto) (one when the play's batch fits
      in its forks).
    type: str
    default: auto
    choices: [auto, one, three]
  below:
    description: C(plan). Under the doctor, the layers below layer 9 (C([{layer, role}])); a node whose doctor records
      of this run show one of them failing takes no part.
    type: list
    elements: dict
    default: []
  skip_tags:
    description: C(plan). The tags given to C(--skip-tags) (the play's when not given); a layer skipped is not looked
      at in I(below).
    type: list
    elements: str
  perftest:
    description: C(plan) and C(links). The C(ib_write_bw) settings of both sides, C(command), C(size), C(duration),
      C(iterations), C(qps), C(traffic_class), C(rdma_cm) and C(extra_args). With I(bandwidth), C(links) holds them
      and I(share) to their ranges (size, iterations and qps at least 1, duration at least 0, traffic_class null or
      0-255) and lists each that fails in C(links.errors), named by its inventory variable with its value.
    type: dict
    default: {}
  run_dir:
    description: C(plan). Where the servers' pid, output and exit status files live on the nodes.
    type: str
    default: /run/gpufabric-rdma-check
  timeout:
    description: C(plan). Seconds a client may take beyond the test's duration.
    type: int
    default: 60
  listen_timeout:
    description: C(plan). Seconds to wait for a server to listen.
    type: int
    default: 30
  round:
    description: C(round), C(serve), C(run), C(collect), C(gate). The round of the plan, from 0.
    type: int
    default: 0
  share:
    description: C(gate) and C(links). The share of the slower end's line rate a pair must reach, in (0, 1].
    type: raw
    default: 0.9
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing is configured; the test itself runs in check mode too (run the tasks with C(check_mode=false)).
  diff_mode:
    support: none
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Check links and GIDs
  gpufabric.stack.rdma_check:
    phase: links
    nics: "{{ gpufabric_nics }}"
    cabling: "{{ gpufabric_cabling }}"
  register: rdma_check_linked

- name: Plan the ib_write_bw pairs
  gpufabric.stack.rdma_check:
    phase: plan
    perftest: {size: 8388608, duration: 5}
  register: rdma_check_planned
  run_once: true

- name: Run round 1
  gpufabric.stack.rdma_check:
    phase: round
    round: 0
  register: rdma_check_round

- name: Gate the pairs every node sent on
  gpufabric.stack.rdma_check:
    phase: gate
    round: 0
  register: rdma_check_gated
  run_once: true
"""

RETURN = r"""
by_node:
  description:
    - C(cabling). Per play host, C(pfs) (its cabling verdicts by PF) and C(errors) (its own LLDP unreadable).
    - C(gate). Per node of the plan still in the play, the result of every pair it sent on up to this round
      (C(status), C(bw_gbps), C(message), C(evidence), ...).
  returned: phase cabling, gate
  type: dict
links:
  description: C(links). The node's C(node), C(errors) (inventory problems) and C(pfs) (per PF its link, GID, cabling,
    C(ok) and C(cause)).
  returned: phase links
  type: dict
bandwidth:
  description: C(links). Whether the node takes part in the pairwise test.
  returned: phase links
  type: bool
plan:
  description: C(plan), C(recheck). C(mode), C(rails), C(rounds) (each a list of pairs C({id, round, rail, port,
    client, server, blocked}), with C(memory) C(cuda) for a pair from GPU memory and C(again) for the second run
    of a pair that fell short) and C(untested) (PFs without a peer on their rail).
  returned: phases plan and recheck
  type: dict
recheck_from:
  description: C(recheck). The index of the first round that runs again a pair that fell short; the plan's round
    count when there is none.
  returned: phase recheck
  type: int
nodes:
  description: C(plan). The nodes taking part.
  returned: phase plan
  type: list
  elements: str
in_one:
  description: C(plan). Whether a round is one call per node.
  returned: phase plan
  type: bool
servers:
  description: C(round), C(collect). The node's servers of the round and how they ended (C(perftest_round)).
  returned: phases round and collect
  type: list
  elements: dict
clients:
  description: C(round), C(run). The node's clients of the round and their output (C(perftest_round)).
  returned: phases round and run
  type: list
  elements: dict
not_listening:
  description: C(round), C(serve). The node's servers that did not listen.
  returned: phases round and serve
  type: list
  elements: dict
module_executions:
  description: The modules executed on the node by this task (the C(gpufabric.stack.task_counter) callback counts
    them).
  returned: always
  type: int
"""
