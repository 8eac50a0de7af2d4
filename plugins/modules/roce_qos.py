#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: roce_qos
short_description: Host RoCE QoS on ConnectX PFs (trust, PFC, DSCP map, ECN, RDMA-CM RoCE mode and TOS, MTU)
version_added: "0.1.0"
description:
  - Reads the RoCE QoS of the selected PFs with the tools and files the NIC driver provides, compares it with the
    fabric intent and changes only what differs.
  - "Trust, PFC and the DSCP map go through C(mlnx_qos -i <pf>) (C(--trust dscp --pfc 0,0,0,1,0,0,0,0),
    C(--dscp2prio set,26,3)); the RDMA-CM default RoCE mode and TOS through C(cma_roce_mode -d <dev> -p 1 -m 2) and
    C(cma_roce_tos -d <dev> -p 1 -t 106); the PF MTU through C(ip link set dev <pf> mtu 9000)."
  - "With MLNX_OFED/DOCA-OFED, ECN is enabled on the RoCE priority through
    C(/sys/class/net/<pf>/ecn/roce_{np,rp}/enable/<prio>) and the CNP DSCP and 802.1p priority through
    C(ecn/roce_np/cnp_dscp) and C(cnp_802p_prio) (directly there or under C(params/))."
  - The inbox mlx5 driver has none of those files; ECN follows the NIC firmware (C(ROCE_CC_PRIO_MASK_P1), on for every
    priority by default). The module reads the firmware values with mstconfig or mlxconfig where installed and reports
    them as notes, and as warnings when they differ from the intent; it never fails on them.
  - Every value is validated, and every PF is found, bound, Ethernet and has an RDMA device, before anything changes.
    After applying, the module reads the state again and fails naming the PF and the field when it still differs.
  - "The action plugin answers a I(state=merged) run from the play's reading of the node (kept by
    M(gpufabric.stack.nic_facts), named by the fact C(gpufabric_nic_reading)) without executing this module when that reading
    was taken in this ansible-playbook run with this task's options (the QoS ones, I(sysfs_root), I(inspect_files) and
    I(inspect_units): nic_facts' I(also_layers) puts layer 8's there) and drifts in nothing: it returns what this
    module would, RV(judged_from_reading) true. Anything else executes the module."
  - PFs are found through sysfs (by netdev name, PCI address or vendor:device); the RDMA device of a PF comes from
    its PCI device, never from a name pattern.
  - Only ConnectX PFs (PCI vendor 15b3) are managed. Selected PFs of another vendor are left out and named in
    RV(left_out); when every selected PF is, the module changes and needs nothing and says why in RV(not_applicable).
options:
  pfs:
    description: PF selections, as C(match) in the inventory's C(gpufabric_nics).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Netdev name of the PF. Exactly one of I(name), I(pci_address), I(vendor_device).
        type: str
      pci_address:
        description: PCI address of the PF, for example C(0000:3b:00.0).
        type: str
      vendor_device:
        description: PCI vendor:device in hex, for example C(15b3:1021); selects every matching PF.
        type: str
      rdma_device:
        description: RDMA device of the PF, for I(state=rendered) only (online states read it from sysfs).
        type: str
  config:
    description:
      - "The fabric intent, as the inventory's C(gpufabric_roce): C(priority) (0-7), C(dscp) (0-63), C(cnp_priority)
        (default 6), C(cnp_dscp) (default 48), C(trust) (dscp or pcp, default dscp), C(host_mtu) or C(mtu) (68-9978;
        unset leaves the MTU alone), C(tos) (default DSCP << 2 | ECT(0), 106 for DSCP 26), C(roce_mode) (1 or 2,
        default 2) and C(ecn) (true or a mapping enables ECN on C(priority); default true). Other keys are ignored."
    type: dict
  roce_mode:
    description: The RDMA-CM default RoCE mode (1 or 2) over I(config)'s C(roce_mode); the roce_host role passes
      roce_host_roce_mode here.
    type: int
  tos:
    description: The RDMA-CM default TOS over I(config)'s C(tos) when above 0 (0 keeps DSCP << 2 | ECT(0)); the
      roce_host role passes roce_host_tos here.
    type: raw
  config_name:
    description: How error messages name I(config) (C(gpufabric_roce) from the roce_host role), so that a bad value
      is named as the inventory spells it.
    type: str
    default: ""
  state:
    description:
      - C(merged) sets what differs; C(gathered) only reads, and reports drift from I(config) when given;
        C(rendered) returns the commands that take PFs with the driver defaults to the intent, without touching the
        host; C(parsed) parses C(mlnx_qos) output given in I(running_config).
    type: str
    default: merged
    choices: [merged, gathered, rendered, parsed]
  running_config:
    description: Output of C(mlnx_qos -i <pf>) for I(state=parsed).
    type: str
  sysfs_root:
    description: Where sysfs is mounted. C(/sys) on a host; the rack twin serves its own tree elsewhere.
    type: path
    default: /sys
  node:
    description: Name of this host in messages (the inventory name).
    type: str
    default: host
  rdma_port:
    description: Port of the RDMA device that cma_roce_mode and cma_roce_tos address.
    type: int
    default: 1
  firmware_query:
    description: With the inbox driver, read the firmware's ECN parameters with mstconfig or mlxconfig when installed.
    type: bool
    default: true
  driver:
    description: NIC driver assumed by I(state=rendered) (C(ofed) adds the ECN sysfs writes). Online states detect it.
    type: str
    choices: [inbox, ofed]
    default: inbox
  qos_tool:
    description:
      - How trust, PFC, the DSCP map and the RDMA-CM defaults are read and set.
      - C(mlnx_qos) uses DOCA-OFED's mlnx-tools (C(mlnx_qos), C(cma_roce_mode), C(cma_roce_tos)).
      - C(dcb) uses upstream interfaces, for the inbox mlx5 driver with upstream rdma-core where mlnx-tools are absent
        (Debian has no package of them) - iproute2's C(dcb) (C(dcb -N pfc|app show), C(dcb pfc set), C(dcb app
        replace|flush dscp-prio)) and the RDMA-CM configfs (C(<sysfs_root>/kernel/config/rdma_cm/<dev>/ports/<port>/
        default_roce_mode) and C(default_roce_tos)). mlx5 has no dcbnl apptrust - its trust is DSCP while the APP table
        holds DSCP entries, which the first C(dcb app replace) adds.
      - C(auto) picks C(mlnx_qos) where it is installed and C(dcb) otherwise; I(state=rendered) takes C(auto) as
        C(mlnx_qos).
    type: str
    choices: [auto, mlnx_qos, dcb]
    default: auto
notes:
  - Needs mlnx-tools (C(mlnx_qos), C(cma_roce_mode), C(cma_roce_tos)) on the host, which DOCA-OFED installs, or
    iproute2 5.11 or later (C(dcb)) with C(rdma_cm) loaded and configfs mounted (I(qos_tool)).
  - The settings do not survive a reboot; the gpufabric.stack.roce_host role installs a boot unit that applies them.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpufabric.stack.boot_files
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
- name: Lossless RoCE on every ConnectX-7 PF
  gpufabric.stack.roce_qos:
    node: "{{ inventory_hostname }}"
    pfs:
      - vendor_device: "15b3:1021"
    config:
      priority: 3
      dscp: 26
      cnp_priority: 6
      cnp_dscp: 48
      trust: dscp
      host_mtu: 9000

- name: Read the host QoS and the drift from the intent
  gpufabric.stack.roce_qos:
    pfs: [{name: enp59s0f0np0}]
    config: "{{ gpufabric_roce }}"
    state: gathered
  register: qos
"""

RETURN = r"""
judged_from_reading:
  description: True when the action answered from the play's reading of the node and executed nothing on it.
  returned: always
  type: bool
inspected:
  description: With I(state=merged) or I(state=gathered), the files of I(inspect_files) (null when absent, else sha256,
    mode, owner, group) and whether each unit of I(inspect_units) is enabled, read before any change.
  returned: state is merged or gathered
  type: dict
  sample: {files: {/usr/local/libexec/gpufabric/roce-qos.sh: null}, units: {gpufabric-roce-qos.service: false}}
changed:
  description: Whether a setting was changed (or would be, in check mode).
  returned: always
  type: bool
commands:
  description: Commands and sysfs writes run (or that would run in check mode); all of them for I(state=rendered).
  returned: always
  type: list
  elements: str
  sample:
    - mlnx_qos -i enp59s0f0np0 --trust dscp --pfc 0,0,0,1,0,0,0,0
    - cma_roce_tos -d rocep59s0f0 -p 1 -t 106
    - ip link set dev enp59s0f0np0 mtu 9000
before:
  description: Per PF netdev, the state read before any change.
  returned: online states
  type: dict
after:
  description: Per PF netdev, the state read after the change (predicted in check mode).
  returned: state merged
  type: dict
gathered:
  description:
    - "Per PF netdev: name, pci_address, rdma_device, driver (inbox or ofed), trust, pfc (8 values), pfc_priorities,
      dscp_map (DSCP to priority for the intent's DSCPs and every DSCP not on its default priority dscp >> 3;
      null while trust is pcp), ecn (source sysfs or firmware, roce_np and roce_rp per
      priority, cnp_dscp, cnp_802p_prio; null when unknown), roce_mode, roce_tos, mtu."
  returned: state gathered
  type: dict
drift:
  description: One line per setting that differs from the intent and can be set, like C(enp59s0f0np0 PFC {4} vs intent {3}).
  returned: when config is given
  type: list
  elements: str
not_settable:
  description: Differences the driver cannot change at run time (ECN and CNP settings under the inbox driver).
  returned: online states with a config
  type: list
  elements: str
notes:
  description: What the inbox driver leaves to the NIC firmware, per PF.
  returned: online states with a config
  type: list
  elements: str
pfs:
  description:
    - The selected ConnectX PFs with name, pci_address, rdma_device, driver and the boot script lines that apply the
      intent.
  returned: online states and rendered
  type: list
  elements: dict
left_out:
  description:
    - The selected PFs that are not ConnectX (PCI vendor other than 15b3), with pci_address, vendor_device and name;
      the host RoCE QoS is ConnectX's (mlnx_qos, cma_roce_mode, cma_roce_tos, the firmware ECN parameters), so these
      are neither read nor set.
  returned: online states
  type: list
  elements: dict
  sample: [{pci_address: "0000:01:00.0", vendor_device: "8086:10c9", name: enp1s0}]
not_applicable:
  description:
    - "When every selected PF is left out, why the layer does not apply, like
      C(not applicable: 0000:01:00.0 is 8086:10c9, not a ConnectX (15b3)); nothing is read, set or needed then (no
      tool). Else an empty string."
  returned: online states
  type: str
left_out_text:
  description: "When some selected PFs are left out and others are not, C(left out:) and their PCI ids; else empty."
  returned: online states
  type: str
intent:
  description: The normalised intent.
  returned: when config is given
  type: dict
parsed:
  description: trust, pfc, pfc_priorities and dscp_map parsed from I(running_config).
  returned: state parsed
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.stack.plugins.module_utils.host import host_files
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos as Q
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host.roce_qos_host import PF_SPEC, online


def rendered(p):
    want = Q.intent_of(p)
    cmds, pfs = [], []
    for spec in p["pfs"]:
        if not spec.get("name") or not spec.get("rdma_device"):
            raise Q.RoceQosError("%s: state rendered needs name and rdma_device in every pfs entry, got %r"
                                 % (p["node"], dict((k, v) for k, v in spec.items() if v)))
        ofed = p["driver"] == "ofed"
        tool = "dcb" if p["qos_tool"] == "dcb" else "mlnx_qos"
        cmds += [c["text"] for c in Q.render_full(want, spec["name"], spec["rdma_device"], ofed, p["sysfs_root"],
                                                  port=p["rdma_port"], tool=tool)]
        pfs.append({"name": spec["name"], "rdma_device": spec["rdma_device"], "driver": p["driver"],
                    "qos_tool": tool, "boot_lines": Q.boot_lines(want, ofed, tool=tool)})
    return {"changed": False, "commands": cmds, "pfs": pfs, "intent": Q.jsonable(want)}


def parsed(p):
    from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware.mlx_tools import parse_mlnx_qos
    try:
        q = parse_mlnx_qos(p["running_config"])
    except ValueError as exc:
        raise Q.RoceQosError("%s: %s" % (p["node"], exc))
    state = {"name": "running_config", "trust": None if q["trust"] == "none" else q["trust"],
             "pfc": q["pfc_enabled"], "pfc_priorities": q["pfc_priorities"]}
    state["dscp_to_prio"] = q["dscp_to_prio"] if state["trust"] == "dscp" else None
    out = {"changed": False, "commands": []}
    want = None
    if p["config"] is not None:
        want = Q.intent_of(p)
        out["intent"] = Q.jsonable(want)
        out["drift"] = [d["text"] for d in Q.diff(state, want) if d["field"] in ("trust", "pfc", "dscp_map")]
    out["parsed"] = Q.public_state(state, want)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pfs=dict(type="list", elements="dict", options=PF_SPEC, default=[]),
            config=dict(type="dict"),
            roce_mode=dict(type="int"),
            tos=dict(type="raw"),
            config_name=dict(type="str", default=""),
            state=dict(type="str", default="merged", choices=["merged", "gathered", "rendered", "parsed"]),
            running_config=dict(type="str"),
            sysfs_root=dict(type="path", default="/sys"),
            node=dict(type="str", default="host"),
            rdma_port=dict(type="int", default=1),
            firmware_query=dict(type="bool", default=True),
            driver=dict(type="str", choices=["inbox", "ofed"], default="inbox"),
            qos_tool=dict(type="str", choices=["auto"] + list(Q.QOS_TOOLS), default="auto"),
            **host_files.INSPECT_ARGS
        ),
        required_if=[("state", "merged", ["config"]), ("state", "rendered", ["config"]),
                     ("state", "parsed", ["running_config"])],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] in ("rendered", "parsed") and (p["inspect_files"] or p["inspect_units"]):
        module.fail_json(msg="inspect_files and inspect_units read the host: state must be merged or gathered, not %s"
                         % p["state"])
    try:
        if p["state"] == "rendered":
            result = rendered(p)
        elif p["state"] == "parsed":
            result = parsed(p)
        else:
            inspected = host_files.inspected(module)
            result = online(module, p)
            result["inspected"] = inspected
    except (Q.RoceQosError, host_files.HostFilesError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
