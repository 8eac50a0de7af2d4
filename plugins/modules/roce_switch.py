#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_switch
short_description: Lossless RoCE (PFC, DSCP trust and map, ECN, CNP, MTU) on a leaf switch over SSH
description:
  - Runs on the controller and drives the switch with netmiko and the NOS's real device type
    (C(mellanox_mlnxos), C(cumulus_linux), C(arista_eos), C(cisco_nxos), C(dell_sonic), C(edgecore_sonic)).
  - NOS C(sonic-dell) is Dell Enterprise SONiC (Klish CLI); C(sonic-community) is community SONiC (Click CLI in bash),
    read from CONFIG_DB (C(show runningconfiguration all)) and set with C(config) and C(sonic-db-cli) from a
    C(sudo -s) root shell; there the PFC watchdog (unless C(pfc_watchdog) is false) and a lossless buffer priority
    group follow the ports with PFC, and C(config save -y) saves.
  - Where the intent has PFC, global PFC switched off (EOS C(priority-flow-control all off) or C(Global PFC) Disabled,
    Onyx without C(dcb priority-flow-control enable)) and, where the intent asks for it, the PFC watchdog off on a
    PFC port (EOS, NVUE, NX-OS, Dell and community SONiC; Onyx's is not managed) are drift lines that name the NOS
    and the command that fixes them, and the converge sends that command.
  - Reads the running config once, compares it with the intent in a platform-neutral data model,
    and sends only the commands that differ. A converged switch gets no configuration command and
    two show commands at most.
  - Pushes inside the NOS's transaction (EOS and NX-OS configuration sessions, NVUE pending revision
    applied with C(nv config apply -y)); on Onyx, Dell and community SONiC, a failed push is undone by commands
    computed from the running config read before it (on Onyx 3.9.x C(configuration switch-to) reboots the switch,
    so a named configuration file is no rollback point). A rejected
    command or a dropped connection restores the running config and fails naming switch, command
    and device error.
  - Saves to startup only after re-reading the running config and the PFC state and finding the intent.
  - Input is validated before connecting (NOS, priorities 0-7, DSCP 0-63, MTU within the NOS's range).
  - A running-config or verification line that names a DSCP map, PFC, random-detect/ECN or trust setting in a form
    the NOS's parser does not know fails the module (I(state=parsed), C(gathered) and C(merged) alike) with the switch
    and the line, before any command is sent; such a line is never skipped.
options:
  name: {type: str, default: switch, description: Switch name used in messages.}
  host: {type: str, description: Address of the switch (required unless I(state) is rendered or parsed).}
  port: {type: int, default: 22, description: SSH port.}
  username: {type: str, description: SSH user.}
  password: {type: str, description: SSH password.}
  nos:
    type: str
    description:
      - NOS of the switch (or give I(device_type)), one of C(onyx), C(nvue), C(eos), C(nxos), C(sonic-dell)
        (Dell Enterprise SONiC) and C(sonic-community) (community SONiC).
      - C(sonic) is accepted for C(sonic-dell) and deprecated. Another value fails naming the switch and the value.
  device_type: {type: str, description: netmiko device type instead of I(nos).}
  known_hosts: {type: path, description: known_hosts file holding the switch's host key.}
  host_key_checking: {type: bool, default: true, description: Refuse a switch whose host key is unknown or different.}
  timeout: {type: int, default: 30, description: Seconds for connecting and for each command.}
  ports:
    type: list
    elements: raw
    default: []
    description:
      - GPU-facing ports in the NOS's spelling (C(ethernet 1/1), C(swp1), C(Ethernet1), C(Ethernet1/1), C(Eth1/1),
        C(Ethernet0)),
        or dicts with C(name) and optional C(mtu) and C(pfc).
  config:
    type: dict
    description:
      - "The intent. C(pfc_priority) (0-7), C(trust) (dscp, pcp, both), C(dscp_map) (a mapping of DSCP to priority),
        C(ecn) (tc, min_kbytes or min_bytes, max_kbytes or max_bytes, probability), C(cnp) (priority, strict),
        C(mtu) and C(mtu_per_nos) (a mapping of NOS to the MTU it gets instead of C(mtu); EOS takes at most 9214),
        C(pfc_watchdog) (the PFC watchdog on every port with PFC; absent, only community SONiC turns it on)."
  state:
    type: str
    default: merged
    choices: [merged, replaced, overridden, deleted, gathered, rendered, parsed]
    description:
      - C(merged) sets what the intent names; C(replaced) also removes DSCP map entries it does not name;
        C(overridden) also resets PFC, trust, ECN and CNP (not the MTU) on ports it does not name;
        C(deleted) returns the global settings and I(ports) (default every configured port) to the NOS defaults;
        C(gathered) reads and reports drift from the intent; C(rendered) and C(parsed) work offline.
  running_config: {type: str, description: Running config text for I(state=parsed).}
  save: {type: bool, default: true, description: Save to startup after a verified push.}
  lldp:
    type: bool
    default: false
    description:
      - In the online states, also read the switch's LLDP neighbours (one show command, the NOS's own LLDP table) into
        RV(lldp), for layer 9's cabling check. A neighbour line the NOS's parser cannot read fails the module quoting
        it.
notes:
  - Check mode and C(--diff) show the exact commands without sending them.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
author:
  - gpufabric.stack maintainers (@gpufabric)
"""

EXAMPLES = r"""
- name: Converge a leaf
  gpufabric.stack.roce_switch:
    name: leaf1
    host: 10.0.0.11
    nos: eos
    username: admin
    password: "{{ vault_switch_password }}"
    known_hosts: /etc/gpufabric/switch_known_hosts
    ports: [Ethernet1, Ethernet2]
    config:
      pfc_priority: 3
      trust: dscp
      dscp_map: {26: 3, 48: 6}
      ecn: {tc: 3, min_kbytes: 150, max_kbytes: 1500, probability: 100}
      cnp: {priority: 6, strict: true}
      mtu: 9216
      mtu_per_nos: {eos: 9214}
"""

RETURN = r"""
before:
  description: Data model read before any change.
  type: dict
  returned: online states
after:
  description: Data model read after the push.
  type: dict
  returned: when changed
commands:
  description: Configuration lines sent (or that would be sent in check mode).
  type: list
  elements: str
  returned: always
rendered:
  description: Lines that take a factory switch to the intent.
  type: list
  elements: str
  returned: state rendered
parsed:
  description: Data model of I(running_config).
  type: dict
  returned: state parsed
gathered:
  description: Data model read from the switch, with C(oper_pfc) per port and, where the NOS's verification show
    has more, C(status) (NVUE C(nv show qos roce) RoCE mode, trust and ECN; EOS C(Global PFC) and the ports
    with the pause watchdog; community SONiC the ports with the PFC watchdog).
    The drift lists global PFC first, then the data model's differences, then the PFC watchdog per port.
  type: dict
  returned: state gathered
drift:
  description: One line per setting or port that differs from the intent.
  type: list
  elements: str
  returned: online states with a config
lldp:
  description:
    - With I(lldp), the LLDP neighbours by local port, in the collection's neutral form (C(local) in the NOS's
      port spelling, C(sysname), C(chassis_id), C(port_id), C(port_id_type), C(port_descr)), and C(error).
  type: dict
  returned: online states with lldp
  sample: {neighbors: [{local: Ethernet1, sysname: node01, chassis_id: "0c:42:a1:00:01:00", port_id: enp59s0f0np0,
           port_id_type: ifname, port_descr: enp59s0f0np0}], error: ""}
show_commands:
  description: Show commands used.
  type: int
  returned: online states
"""

import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import model as M
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch.drivers import ALIASES, get_driver
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_switch import transport as T


def _keys_str(m):
    """JSON-safe data model (DSCP keys as ints stay ints in Python; Ansible needs str keys)."""
    out = M.strip_internal(m)
    out["global"]["dscp_map"] = dict((str(k), v) for k, v in sorted(out["global"]["dscp_map"].items()))
    return out


def plan(driver, state, want, text, scope, ports_given):
    have, raw = driver.read(text, scope)
    if state == "deleted":
        targets = list(want["ports"]) if ports_given else None
        if targets is None:
            have_all, _ = driver.read(text, dict(scope, ports=None))
            have["ports"].update(have_all["ports"])
        target = M.deleted_target(driver, have, targets)
        ch = M.changes(target, have, "deleted")
        ch["dscp_unset"] = list(have["global"].get("explicit_dscps", []))
        ch["state"] = "deleted"
        return have, raw, target, ch
    ch = M.changes(want, have, state)
    ch = driver.extra_changes(ch, want, have, raw)
    if state == "overridden":
        others, _ = driver.read(text, dict(scope, ports=None))
        cprio = (want["global"]["cnp"] or {}).get("priority", 6)
        dflt = driver.port_default(cprio)
        for p, hp in others["ports"].items():
            if p in want["ports"]:
                continue
            diff = dict((k, (dflt[k], hp[k])) for k in driver.per_port
                        if k != "mtu" and hp[k] != dflt[k])
            if diff:
                ch["ports"][p] = diff
                have["ports"][p] = hp
    ch["state"] = state
    return have, raw, want, ch


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", default="switch"), host=dict(type="str"), port=dict(type="int", default=22),
            username=dict(type="str"), password=dict(type="str", no_log=True),
            nos=dict(type="str"),
            device_type=dict(type="str"),
            known_hosts=dict(type="path"), host_key_checking=dict(type="bool", default=True),
            timeout=dict(type="int", default=30), ports=dict(type="list", elements="raw", default=[]),
            config=dict(type="dict"), running_config=dict(type="str"), save=dict(type="bool", default=True),
            lldp=dict(type="bool", default=False),
            state=dict(type="str", default="merged",
                       choices=["merged", "replaced", "overridden", "deleted", "gathered", "rendered", "parsed"]),
        ),
        supports_check_mode=True,
        required_if=[("state", "parsed", ["running_config"]), ("state", "rendered", ["config"])],
    )
    p = module.params
    name, state = p["name"], p["state"]
    result = {"changed": False, "commands": [], "switch": name}
    try:
        driver = get_driver(p["nos"], p["device_type"], name)
        result["nos"] = driver.nos
        if p["nos"] in ALIASES:
            module.deprecate("%s: nos %s is Dell Enterprise SONiC; call it %s" % (name, p["nos"], ALIASES[p["nos"]]),
                             version="2.0.0", collection_name="gpufabric.stack")
        want = None
        if p["config"] is not None or state in ("merged", "replaced", "overridden"):
            if p["config"] is None:
                raise M.RoceSwitchError("%s: state %s needs config" % (name, state))
            want = M.normalise_intent(p["config"], driver, p["ports"], name)
        elif p["ports"]:
            want = M.normalise_intent({}, driver, p["ports"], name)
        scope = M.scope_of(want) if want else None
        if state == "parsed":
            result["parsed"] = _keys_str(driver.parse(p["running_config"], scope))
            module.exit_json(**result)
        if state == "rendered":
            have, raw = driver.read("", scope)
            ch = driver.extra_changes(M.changes(want, have, "merged"), want, have, raw)
            ch["state"] = "merged"
            result["rendered"] = driver.commands(ch, want, have, raw)
            module.exit_json(**result)
        for key in ("host", "username", "password"):
            if not p[key]:
                raise M.RoceSwitchError("%s: %s is required for state %s" % (name, key, state))
        if not T.HAS_NETMIKO:
            module.fail_json(msg="%s: the netmiko Python library is required on the controller" % name)
        sw = T.Switch(driver, name, p["host"], p["port"], p["username"], p["password"], p["known_hosts"],
                      p["host_key_checking"], p["timeout"])
        sw.connect()
        try:
            before_text = sw.show(driver.show_running)
            if p["lldp"]:
                # the leaf's LLDP table, for layer 9's cabling check: one more show
                result["lldp"] = {"neighbors": driver.parse_lldp(sw.show(driver.show_lldp), list((want or {}).get("ports") or [])),
                                  "error": ""}
            if state == "gathered":
                have, raw = driver.read(before_text, scope)
                verify_text = sw.show(driver.show_verify)
                oper = driver.parse_verify(verify_text)
                status = driver.parse_status(verify_text)
                gathered = _keys_str(have)
                for port, pv in gathered["ports"].items():
                    pv["oper_pfc"] = oper.get(port, oper.get("*", []))
                if status is not None:
                    gathered["status"] = status
                result["gathered"] = gathered
                result["before"] = gathered
                if p["config"] is not None:
                    glob, wd = driver.pfc_drift(want, raw, status)
                    result["drift"] = (glob + M.drift(want, have) + driver.config_drift(want, raw) + wd
                                       + driver.status_drift(want, status))
                result["show_commands"] = sw.shows
                module.exit_json(**result)
            have, raw, target, ch = plan(driver, state, want, before_text, scope, bool(p["ports"]))
            result["before"] = _keys_str(have)
            if want is not None and state != "deleted":
                glob, wd = driver.pfc_drift(want, raw)
                result["drift"] = glob + M.drift(want, have) + driver.config_drift(want, raw) + wd
            commands = driver.commands(ch, target, have, raw) if not M.is_empty(ch) else []
            result["commands"] = commands
            if commands:
                result["changed"] = True
                if module._diff:
                    result["diff"] = {"before": "", "after": "\n".join(commands) + "\n",
                                      "before_header": "%s running-config" % name,
                                      "after_header": "%s commands" % name}
            if not commands or module.check_mode:
                result["show_commands"] = sw.shows
                module.exit_json(**result)
            sw.push(commands, before_text)
            after_text = sw.show(driver.show_running)
            after, after_raw = driver.read(after_text, dict(scope or {}, ports=list(have["ports"])) if scope else
                                           {"ports": list(have["ports"])})
            left = M.changes(target, after, state if state != "overridden" else "merged")
            wd_left = []
            if state != "deleted":
                left = driver.extra_changes(left, target, after, after_raw)
                wd_left = driver.pfc_drift(target, after_raw)[1]
            if state == "deleted":
                left["dscp_unset"] = []
            oper = driver.parse_verify(sw.show(driver.show_verify))
            bad_oper = []
            prio = target["global"]["pfc_priority"]
            for port, wp in target["ports"].items():
                if wp.get("pfc") and prio is not None and driver.show_verify:
                    got = oper.get(port, oper.get("*"))
                    if got is not None and prio not in got:
                        bad_oper.append("%s: PFC not operational on priority %d" % (port, prio))
            result["after"] = _keys_str(after)
            if not M.is_empty(left) or bad_oper:
                lines = (M.drift(target, after) if state != "deleted" else []) + wd_left + bad_oper
                module.fail_json(msg="%s: verification after the push found differences, not saved: %s"
                                 % (name, "; ".join(lines) or str(left)), **result)
            if p["save"]:
                sw.save()
            result["show_commands"] = sw.shows
        finally:
            sw.close()
    except T.PushFailed as e:
        module.fail_json(msg=str(e), **result)
    except M.RoceSwitchError as e:
        module.fail_json(msg=str(e), **result)
    except Exception as e:
        module.fail_json(msg="%s: %s" % (name, e), exception=traceback.format_exc(), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
