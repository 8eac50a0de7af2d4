"""The twin's RoCE leaf switches: stateful NOS models behind SSH servers that
netmiko drives with the real device types.

Public interface
----------------
- ``make_model(nos, name, ports)`` -> a model (``onyx``, ``nvue``, ``eos``, ``nxos``,
  ``sonic-dell`` (Dell Enterprise SONiC), ``sonic-community``); ``model.handle(line) -> output`` runs a line in its default CLI
  session, ``model.session()`` opens another one, ``model.port_view(port)`` gives
  the normalised, applied state of a port::

      {"up": bool, "mtu": int, "trust": "dscp"|"pcp"|"both"|..., "pfc_priorities": [3],
       "ecn": {"tc": 3, "min_bytes": 150000, "max_bytes": 1500000} | None,
       "cnp_strict_tc": 6 | None, "dscp_map": {0..63: priority} ({} when DSCP is not trusted)}

  Thresholds are normalised to bytes with 1 KB = 1000 bytes.
- ``SwitchFleet(state_dir, specs)`` serves every switch of a spec on 127.0.0.1
  (``start()``/``stop()``, context manager, ``write_known_hosts(path)``); each
  ``SwitchServer`` has a persistent ECDSA host key ``<state_dir>/<name>.hostkey``.
  ``<state_dir>/ready`` lists the listening ports once all listen.
- ``load_switch(state_dir, name)`` -> the model as last saved (state file
  ``<state_dir>/<name>.json``: running, startup, pending, sessions, counters).
- ``inject_fault(state_dir, name, kind, ports=None, **params)`` with kind
  ``switch-pfc-off``, ``switch-mtu-low``, ``switch-rejects-command``,
  ``switch-ssh-drops-mid-push``, ``switch-watchdog-off``, ``switch-global-pfc-off``
  or ``clear`` (see ``server.inject_fault``).
- ``python -m simlab.switches serve --state-dir DIR --spec SPEC.json`` and
  ``python -m simlab.switches fault --state-dir DIR NAME KIND``.

Accepted grammar (configuration commands and their removal forms)
-----------------------------------------------------------------
Keywords may be abbreviated (except on NVUE); ``show ... | include/exclude/section/begin``
filters work everywhere.  A command of an enclosing mode typed in a sub-mode
leaves the sub-mode, as on the real CLIs.

Onyx (``mellanox_mlnxos``; ``>`` ``#`` ``(config) #`` ``(config interface ethernet 1/1) #``):
``enable``, ``configure terminal``, ``no cli session paging enable``;
``[no] roce [lossless|lossy|semi-lossless]``; ``[no] dcb priority-flow-control enable [force]``;
``[no] dcb priority-flow-control priority P enable``; per port, either as
``interface ethernet 1/1-1/32 <cmd>`` or inside ``interface ethernet X``:
``mtu N [force]``/``no mtu``, ``[no] shutdown``, ``qos trust L2|L3|both``/``no qos trust``,
``dcb priority-flow-control mode on [force]``/``no dcb priority-flow-control mode [force]``,
``traffic-class T congestion-control ecn minimum-absolute KB maximum-absolute KB``/
``no traffic-class T congestion-control``, ``traffic-class T dcb ets strict``/
``no traffic-class T dcb ets``, ``[no] pfc-wd``.  Save: ``configuration write``
(also ``write memory``).  Named configuration files:
``configuration write to NAME [no-switch]``, ``configuration switch-to NAME``
(asks "Type 'yes' to confirm:", then reboots into NAME: running and startup
become NAME, the active file, and the session ends), ``configuration delete NAME``,
``show configuration files``.  Shows: ``running-config``, ``roce``,
``dcb priority-flow-control``, ``dcb ets interface ethernet X``, ``qos interface ethernet X``,
``interfaces ethernet X [congestion-control|counters pfc prio P]``, ``version``.

NVUE (``cumulus_linux``; ``cumulus@leaf1:mgmt:~$``): ``nv set``/``nv unset`` on
``qos roce [mode M|enable on|off]``, ``interface swpR link mtu|state``, ``interface swpR type swp``,
``interface swpR qos pfc|congestion-control|mapping|egress-scheduler profile NAME``,
``interface swpR qos pfc-watchdog``, ``qos mapping P trust|dscp D switch-priority S|pcp``,
``qos pfc P switch-priority|tx|rx|cable-length``, ``qos congestion-control P traffic-class T
ecn|red|min-threshold|max-threshold|probability``, ``qos egress-queue-mapping``,
``qos egress-scheduler P traffic-class T mode|bw-percent``, ``qos traffic-pool P memory-percent``,
``system hostname``; ``nv config apply [-y]`` (without ``-y`` it asks ``[y/N]``),
``nv config save``, ``nv config detach``, ``nv config diff``, ``nv config show
[-o commands|json] [-r applied|pending|startup]``, ``nv config history``;
``nv show qos roce``, ``nv show interface swpN [link|qos roce status|qos roce counters]``;
``sudo -s`` asks for the password and gives a root prompt.

EOS (``arista_eos``; ``>`` ``#`` ``(config)#`` ``(config-if-Et1)#`` ``(config-if-Et1-uc-txq-3)#``,
``(config-s-NAME...)#`` in a session): ``terminal length 0``/``terminal width N``;
``[no] qos map dscp D... to traffic-class T``; ``[no] priority-flow-control all off``; ``interface Ethernet1-32``; in it
``mtu 68-9214``/``no mtu``, ``[no] shutdown``, ``qos trust dscp|cos|disabled``/``no qos trust``,
``[no] priority-flow-control on``, ``[no] priority-flow-control priority P no-drop``,
``[no] priority-flow-control pause watchdog``, ``[no] uc-tx-queue Q``; in the queue ``random-detect ecn minimum-threshold N UNIT
maximum-threshold N UNIT [max-mark-probability P [weight W]]``/``no random-detect ecn``,
``[no] random-detect ecn count``, ``priority strict``/``no priority``, ``[no] bandwidth percent``.
Save: ``copy running-config startup-config``, ``write memory``.  Sessions:
``configure session NAME`` ... ``commit``|``abort``, ``show session-config [named N] [diffs]``,
``show configuration sessions``.  ``show priority-flow-control``: ``Global PFC : Enabled|Disabled``
and per port three status flag positions (``E``/``D``, ``A``/``-``, ``W``/``-``).

NX-OS (``cisco_nxos``; ``#`` ``(config)#`` ``(config-if)#`` ``(config-cmap-qos)#`` ``(config-pmap-qos)#``
``(config-pmap-c-qos)#`` ``(config-pmap-que)#`` ``(config-pmap-c-que)#`` ``(config-pmap-nqos)#``
``(config-pmap-nqos-c)#`` ``(config-sys-qos)#``): ``[no] class-map type qos [match-all|match-any] N``
with ``[no] match dscp D``; ``[no] policy-map type qos|queuing|network-qos N`` with
``[no] class C`` / ``class type queuing c-out-8q-qN`` / ``class type network-qos c-8q-nqN``
and ``set qos-group G``, ``priority [level L]``, ``bandwidth [remaining] percent N``,
``random-detect minimum-threshold N UNIT maximum-threshold N UNIT [drop-probability P]
[weight W] [ecn]``, ``mtu N``, ``pause pfc-cos C`` (each with ``no``); ``system qos`` with
``[no] service-policy type network-qos N|type queuing output N|type qos input N``;
``interface Ethernet1/1[-4]`` with ``mtu 576-9216``, ``priority-flow-control mode on|auto|off``,
``priority-flow-control watch-dog-interval on|off``, ``service-policy type qos input N``,
``[no] shutdown`` (each with ``no``).  Save: ``copy running-config startup-config``.
Transactions: ``configure session NAME`` ... ``verify``/``commit``/``abort``;
``checkpoint NAME``, ``rollback running-config checkpoint NAME``, ``no checkpoint NAME``.
Shows: ``running-config [ipqos|interface X]``, ``startup-config``,
``interface priority-flow-control``, ``queuing interface X``, ``checkpoint summary``.

Dell SONiC (NOS ``sonic-dell``, ``dell_sonic``; ``admin@leaf1:~$``, ``sonic-cli`` -> ``leaf1#`` ``(config)#``
``(conf-if-Eth1/1)#``): ``[no] roce enable [pfc-priority 3,4]``; ``qos map dscp-tc N`` with
``dscp D-RANGES traffic-class T``/``no dscp D``; ``qos wred-policy N`` with ``green
minimum-threshold KB maximum-threshold KB drop-probability P``, ``ecn green``; ``qos
scheduler-policy N`` with ``queue Q`` / ``type strict|dwrr|wrr`` / ``weight W``;
``interface Eth1/1`` (also ``Eth 1/1`` and ``interface range``) with ``mtu 1312-9216``,
``qos-map dscp-tc N``, ``queue Q wred-policy N``, ``scheduler-policy N``,
``priority-flow-control priority P``, ``priority-flow-control watchdog action|on detect-time|
restore-time`` (each with ``no``).  Save: ``write memory``.  No transactions.

Community SONiC (NOS ``sonic-community``, ``edgecore_sonic``; ``admin@leaf1:~$``, ``sudo -s`` asks the password and
gives ``root@leaf1:/home/admin#``; ``sudo CMD`` runs one command as root; ``A && B`` runs both):
the running configuration is CONFIG_DB (``{table: {key: {field: value}}}``, factory: DEVICE_METADATA
with the dynamic buffer model and PORT with mtu 9100, no QoS tables, as after ``config qos clear``).
``show runningconfiguration all`` (CONFIG_DB as sorted JSON, then ``bgpraw``), ``show pfc priority
[PORT]``, ``show pfcwd config [PORTS]`` (tabulate tables as sonic-utilities prints them),
``show version``; as root ``config interface mtu PORT 68-9216``, ``config interface pfc priority PORT
0-7 on|off`` (``Cannot find interface PORT`` without a PORT_QOS_MAP entry), ``config ecn -profile NAME
[-gmin|-gmax|-gdrop|-ymin|-ymax|-ydrop|-rmin|-rmax|-rdrop N]`` (an existing profile only), ``config
pfcwd start [--action drop|forward|alert] [--restoration-time MS] PORTS|all DETECTION_MS`` (ports
without pfc_enable are skipped), ``config pfcwd stop [PORTS]``, ``config qos clear``, ``config save -y``;
``sonic-db-cli CONFIG_DB HSET|HDEL|DEL|HGET|HGETALL 'TABLE|KEY' ...``.  Not root: ``Root privileges are
required for this operation``.  No transactions.

Error strings: Onyx ``% Unrecognized command found at '^' position.`` under a caret
line (``% Incomplete command.`` when a command stops short); EOS ``% Invalid input
(at token N: 'word')``/``% Incomplete command``; NX-OS ``% Invalid command at '^'
marker.``, ``% Incomplete command at '^' marker.``, ``% Invalid number, range is (lo:hi)
at '^' marker.``; NVUE ``Error: ...``; SONiC ``% Error: Invalid input detected at "^"
marker.``; community SONiC Click's ``Usage: ...``/``Error: ...``, ``Exception caught: ...`` of
``ecnconfig`` and ``(error) ...`` of ``sonic-db-cli``.  Limits: MTU max 9214 on EOS and 9216 elsewhere,
priorities 0-7, DSCP 0-63.

Known differences from real devices
-----------------------------------
- Only the RoCE/QoS/MTU feature set above exists; no VLANs, routing, LLDP, and
  no ``| json`` output (the filter is accepted and ignored).
- Running-config headers carry no timestamps, so a rollback restores the text
  byte for byte.  Onyx sections follow the real layout for interface and DCBX
  PFC lines; the ``## RoCE configuration`` section name is an assumption.
- Macro profiles (Onyx ``roce``, NVUE ``qos roce``, Dell ``roce enable``) are kept
  as one line; their effect is applied in ``port_view`` and the show commands
  (Onyx/NVUE: trust L3, PFC 3, ECN 150/1500 KB on TC3, TC6 strict).  Dell's
  ``roce enable`` is modelled as DSCP trust with the DSCP>>3 map, PFC on the listed
  priorities and queue 6 strict, without ECN.
- EOS queues are strict by default, so ``priority strict`` leaves no line
  (only ``no priority`` shows); NVUE's PFC is global, so ``switch-pfc-off`` removes
  it for every port there.
- netmiko itself waits on timing for some classes: ``mellanox_mlnxos`` session set-up
  reads for 2 s of silence, and ``dell_sonic`` config-mode checks do the same (about
  8 s per ``send_config_set``); that is client behaviour, not server delay.
- Community SONiC has no daemons behind CONFIG_DB: a field written is a field applied, and
  ``config qos reload`` (the QoS templates) is not modelled.
- Counters are zero unless the fabric model writes them into the state's
  ``counters`` (``{port: {"rx_pfc_pause": n, "tx_pfc_pause": n, "ecn_marked": n, ...}}``).
"""

from .models.base import SwitchModel

# the SSH server needs paramiko, which the node containers do not have: the
# node twins' lldpcli imports the models only, so the server loads on first use
_SERVER = ("FAULT_KINDS", "MODELS", "SwitchFleet", "SwitchServer", "inject_fault", "load_switch", "make_model",
           "read_faults", "save_switch")


def __getattr__(name):
    if name in _SERVER:
        from . import server
        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FAULT_KINDS", "MODELS", "SwitchFleet", "SwitchServer", "SwitchModel", "inject_fault",
           "load_switch", "make_model", "read_faults", "save_switch"]
