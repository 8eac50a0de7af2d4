#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nic_facts
short_description: Report NIC physical functions, their SR-IOV state, VFs and RDMA devices from sysfs
version_added: "0.1.0"
description:
  - Reads sysfs and returns every NIC physical function (PF) of the host with its netdev, PCI address,
    vendor:device, driver, NUMA node, link type and speed, SR-IOV capability and VF counts, its VFs
    (netdev, PCI address, RDMA device) and the RDMA device of the PF with its RoCE v2 GID index.
  - netdev, PCI function and RDMA device are tied together through the links sysfs provides, never by
    name patterns, so C(mlx5_N) and C(rocep59s0f0) style RDMA names both work.
  - With I(units) and I(files), the same call also reports whether the node keeps its NIC settings across a
    reboot (the boot units' unit-file states from one C(systemctl show), and whether the boot files exist), so
    a check of every layer asks each node once.
  - With I(firmware), I(qos) and I(runtime), the same call also runs the read-only firmware queries of the PFs that
    M(gpufabric.stack.mlx_config) checks, reads the host RoCE QoS as M(gpufabric.stack.roce_qos) gathers it, and
    reads what M(gpufabric.stack.container_runtime_facts) reads, so the doctor (validate.yml) reads all of a GPU
    node's layers in one call.
  - Read-only; safe in check mode.
  - The action of the same name keeps every answer as the play's reading of the host's NICs when the task registers
    it (the host fact C(gpufabric_nic_reading) names the registered variable, not the reading, since a fact is copied for
    every task and host, a registered variable is not); a read whose task registers nothing drops the play's reading.
    With I(reuse) a task takes that reading, without executing anything on the host, when it
    was read with the options the task gives (the same I(sysfs_root) and I(vendor) in any case); a task after a
    change to what sysfs shows drops it with I(forget).
options:
  reuse:
    description:
      - Answer from the play's reading of the host (the registered answer the fact C(gpufabric_nic_reading) names)
        when it was read with every option this task gives and the same I(sysfs_root) and I(vendor); read the host otherwise. The answer then
        says RV(reused).
      - Handled by the action; the module itself always reads.
    type: bool
    default: false
  forget:
    description:
      - Drop the play's reading of the host and read nothing; a layer that changed what sysfs shows (NIC firmware,
        VFs, host QoS, a boot) does this, so that the next layer reads again. Takes no other option.
      - Handled by the action.
    type: bool
    default: false
  also:
    description:
      - More options of this module to read with, as a later layer gives them (layer 3 passes layer 5's), so that the
        later layer's read with I(reuse) in the same run is answered by this one. An option given here and by the
        task with another value is an error naming it.
      - Handled by the action.
    type: dict
  also_layers:
    description:
      - Layer numbers whose doctor check reads ride on this read too (each layer's check file, its C(reads), against
        its role's intent, from its defaults, the inventory and its role vars), so that the layer's own task in the same run can judge
        the node from this reading (M(gpufabric.stack.roce_qos) does, and then executes nothing on a node that is
        already as intended). A layer whose role's variables do not resolve here is left out, named in
        RV(also_layers_left), and reads for itself.
      - Handled by the action.
    type: list
    elements: int
    default: []

  sysfs_root:
    description:
      - Where sysfs is mounted. C(/sys) on a host; the rack twin serves its own tree elsewhere.
    type: path
    default: /sys
  vendor:
    description:
      - Only report PFs of this PCI vendor id (hex, without C(0x)), for example C(15b3) for NVIDIA/Mellanox.
      - Empty reports every PCI network function.
    type: str
    default: ""
  proc_root:
    description:
      - Where procfs is mounted, for C(cmdline). C(/proc) on a host; the rack twin serves its own.
    type: path
    default: /proc
  units:
    description:
      - systemd units whose unit-file state to report in RV(units), for example C(gpufabric-sriov.service).
    type: list
    elements: str
    default: []
  files:
    description:
      - Absolute paths whose presence to report in RV(files), for example a udev rule.
    type: list
    elements: path
    default: []
  contents:
    description:
      - Absolute paths of small text files (at most 1 MiB) to return in RV(contents), for example the kubelet's
        C(/var/lib/kubelet/config.yaml).
    type: list
    elements: path
    default: []
  probe_modules:
    description:
      - Kernel modules to ask kmod about with C(modprobe -D) (a dry run that ignores whether the module is loaded),
        whether each could be loaded at the next boot; the answer is in RV(module_probe). Layer 6 asks about C(vfio-pci) when
        VFs are meant for VMs.
    type: list
    elements: str
    default: []
  modules_load_dir:
    description:
      - The directory of C(*.conf) files that systemd-modules-load reads at boot, reported in RV(modules_load) with
        every reading, so the layer that writes a file there can leave the write out when it would change nothing.
    type: path
    default: /etc/modules-load.d
  lldp:
    description:
      - Read the node's LLDP neighbours from lldpd, C(lldpcli -f json show neighbors), into RV(lldp) (layer 9's
        cabling check). A node without lldpd, or whose lldpd does not answer, is an C(error) in RV(lldp), not a
        failure; a neighbour entry of a PF that the reader cannot read is (C(failed) in RV(lldp), quoting it).
    type: bool
    default: false
  vf_settings:
    description:
      - Read every PF's VF settings (MAC, VLAN, QoS, spoof checking, trust, link state, GUIDs, rates) as its driver
        reports them, C(ip -j link show dev <pf>), into RV(vf_settings); the doctor's layer 6 check compares them
        with the sriov_vf module's own plan.
    type: bool
    default: false
  firmware:
    description:
      - Run the firmware queries of M(gpufabric.stack.mlx_config) (C(mstflint -d <pci> q) and C(mstconfig -d <pci> -e q))
        on every PF of I(vendor) that an entry of I(match) names, and return what they printed in RV(firmware).
      - The C(gpufabric.stack.mlx_config_checked) filter turns that into the check-mode answer of mlx_config.
    type: dict
    suboptions:
      match:
        description:
          - C(match) dicts as in C(gpufabric_nics) (C(name), C(pci_address), C(vendor_device)). A PF is queried when
            any key of any entry names it (case does not matter).
        type: list
        elements: dict
        required: true
      tool:
        description: The configuration tool, as mlx_config's I(tool).
        type: str
        choices: [mlxconfig, mstconfig]
        default: mstconfig
      flint_tool:
        description: The flint tool for the firmware version, as mlx_config's I(flint_tool); empty skips that query.
        type: str
        default: mstflint
      vendor:
        description:
          - Only PFs of this PCI vendor id are queried (the firmware tools know ConnectX, C(15b3), only); empty queries
            every PF I(match) names.
        type: str
        default: "15b3"
  vfs:
    description:
      - Plan a run of M(gpufabric.stack.sriov_vf) with these options (all of its options but I(sysfs_root), which is
        this module's, and the inspected files) by its own code in check mode, and return what it would do in
        RV(vfs); the sriov_vf action answers a run that would change nothing from it.
    type: dict
  qos:
    description:
      - Read the host RoCE QoS of I(pfs) as M(gpufabric.stack.roce_qos) with I(state=gathered) does, and return its
        answer in RV(qos) and the options in RV(qos_options). The sysfs root is I(sysfs_root).
    type: dict
    suboptions:
      node: {description: "The host's name in messages, as roce_qos' I(node).", type: str, default: host}
      pfs:
        description:
          - The PFs, as roce_qos' I(pfs) (C(name), C(pci_address), C(vendor_device)).
          - When an entry has another key, the QoS is not read (no RV(qos)), and roce_qos' own call reports it.
        type: list
        elements: dict
        required: true
      config: {description: "The intent to compare with, as roce_qos' I(config).", type: dict}
      roce_mode: {description: "As roce_qos' I(roce_mode).", type: int}
      tos: {description: "As roce_qos' I(tos).", type: raw}
      config_name: {description: "As roce_qos' I(config_name).", type: str, default: ""}
      rdma_port: {description: RDMA port of each PF., type: int, default: 1}
      firmware_query: {description: As roce_qos' I(firmware_query)., type: bool, default: true}
      qos_tool: {description: "As roce_qos' I(qos_tool).", type: str, choices: [auto, mlnx_qos, dcb], default: auto}
  stack:
    description:
      - Tell which driver stack the node runs (layer 5), the inbox driver with upstream rdma-core or NVIDIA's
        DOCA-OFED / MLNX_OFED, from the loaded module (C(module/<name>/version), C(mlx_compat) loaded), the file
        modprobe would load (C(modinfo)) and C(ofed_info -s); returned in RV(stack), the options in
        RV(stack_options).
    type: dict
    suboptions:
      module: {description: "The PF driver module (mlx5_core; igb on the VM nodes).", type: str, default: mlx5_core}
      flavor:
        description: The intended stack (rdma_drivers_flavor); a stack that differs is a problem in RV(stack).
        type: str
        choices: [inbox, doca]
  gpudirect:
    description:
      - Read what GPUDirect RDMA depends on (layer 5), the NVIDIA GPUs (PCI vendor 0x10de, class 0x03), the GPU
        driver's module and whether it is the open one (C(module/nvidia/taint) without C(P)), C(nvidia_peermem),
        the peer-memory API of the RDMA core (C(kernel/mm/memory_peers)) and the kernel release; returned in
        RV(gpudirect) with the mode it gives (C(plan)).
    type: dict
    suboptions:
      mode:
        description: The intended way (gpufabric_gpudirect); C(auto) takes DMA-BUF where the node has it, else nvidia-peermem.
        type: str
        choices: [auto, dmabuf, peermem, "off"]
        default: auto
  pcie:
    description:
      - Read the PCIe path between every NVIDIA GPU and every NIC PF from sysfs (the bridges above each, where
        they meet, named as C(nvidia-smi topo -m) names it), the ACS capability and control words of every bridge
        on them from config space, each GPU's rail, and C(nvidia-smi topo -m) where the tool is there; returned
        in RV(pcie).
    type: dict
    suboptions:
      topo:
        description: Run C(nvidia-smi topo -m) where it is found and hold it against the sysfs path.
        type: bool
        default: true
  acs:
    description:
      - Layer 3's ACS plan for the node from the PCIe reading (read as with I(pcie) when that is not given),
        returned in RV(acs).
    type: dict
    suboptions:
      p2p:
        description: The peer-to-peer intent (gpufabric_pcie_p2p).
        type: str
        choices: [auto, gpudirect, isolate]
        default: auto
      vfio:
        description: Whether the node hands VFs to VMs (vfio-pci); C(auto) then isolates.
        type: bool
        default: false
      gpudirect_off:
        description: Whether GPUDirect RDMA is off by intent (gpufabric_gpudirect off); C(auto) then leaves ACS alone.
        type: bool
        default: false
  runtime:
    description:
      - Read what M(gpufabric.stack.container_runtime_facts) reads (every subset) with these options, and return it
        in RV(runtime) and the options in RV(runtime_options). The sysfs root is I(sysfs_root).
    type: dict
    suboptions:
      unit: {description: The containerd unit., type: str, default: containerd}
      config_path: {description: containerd's configuration file., type: path, default: /etc/containerd/config.toml}
      modules: {description: Kernel modules Kubernetes needs., type: list, elements: str, default: []}
      sysctls: {description: "Sysctls Kubernetes needs: C({key: wanted value})", type: dict, default: {}}
      cni_bin_dir: {description: The CNI plugin directory., type: path, default: /opt/cni/bin}
      nvidia_runtime_path:
        description: The NVIDIA container runtime binary.
        type: path
        default: /usr/bin/nvidia-container-runtime
      kubelet_config_path:
        description: The kubelet's configuration file.
        type: path
        default: /var/lib/kubelet/config.yaml
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - gpufabric.stack.boot_files
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
- name: Read the NICs, or take the reading an earlier layer of this play made
  gpufabric.stack.nic_facts:
    sysfs_root: /sys
    reuse: true
  register: nics

- name: Drop the play's reading after the VFs changed
  gpufabric.stack.nic_facts:
    forget: true
  when: vfs_result is changed

- name: Read the NICs of a GPU node
  gpufabric.stack.nic_facts:
    vendor: "15b3"
  register: nics

- name: Show the RoCE v2 GID index of every PF
  ansible.builtin.debug:
    msg: "{{ item.name }} {{ item.rdma_device }} gid {{ item.rdma.roce_v2_gid_index }}"
  loop: "{{ nics.nics }}"
"""

RETURN = r"""
reused:
  description: Whether the answer is the play's reading of the host (I(reuse)) rather than a new read.
  returned: always, except with I(forget)
  type: bool
read_with:
  description: The options the reading was taken with, the module's defaults included.
  returned: when the answer is the play's reading (a registered read, or I(reuse))
  type: dict
reading_id:
  description: The id of the play's reading this answer is; the fact C(gpufabric_nic_reading) names it.
  returned: when the answer is the play's reading (a registered read, or I(reuse))
  type: str
forgotten:
  description: True when I(forget) dropped the play's reading.
  returned: with I(forget)
  type: bool
module_executions:
  description: How many module executions the task took on the host (0 for a reading reused or forgotten, 1 otherwise);
    the C(gpufabric.stack.task_counter) callback counts this figure.
  returned: always
  type: int
nics:
  description: One entry per PF, sorted by PCI address.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: >-
        Netdev name, from the net/ of the PCI function or, for virtio-net, of its virtio<N> child (null when no driver
        is bound).
      type: str
    pci_address: {description: PCI address, type: str, sample: "0000:3b:00.0"}
    vendor_device: {description: PCI vendor and device id, type: str, sample: "15b3:1021"}
    driver: {description: Bound PCI driver or null, type: str}
    numa_node: {description: NUMA node of the PCI device, type: int}
    link_type: {description: ETH or IB, type: str}
    speed_mbps: {description: "Link speed in Mb/s, null when the link is down", type: int}
    sriov:
      description:
        - C(capable) is false when SR-IOV is off in the NIC firmware (no sriov_* files).
        - C(iov_bars_assigned) is false when none of the PF's IOV BARs (lines 7-12 of its C(resource) file) has an
          address, null when the file cannot be read.
      type: dict
      sample: {capable: true, totalvfs: 16, numvfs: 8, iov_bars_assigned: true}
    vfs:
      description: VFs with index, pci_address, netdev, rdma_device, driver, mtu.
      type: list
    rdma_device:
      description: RDMA device of the PF (under its PCI function), or the software RDMA device (rxe, siw) over its netdev.
      type: str
      sample: mlx5_0
    rdma:
      description: "Port 1 of the RDMA device: state, link_layer, gids, roce_v2_gid_index."
      type: dict
iommu_active:
  description: Whether the kernel has an active IOMMU (entries under class/iommu).
  returned: always
  type: bool
iommus:
  description: The active IOMMUs, the entries under class/iommu.
  returned: always
  type: list
  elements: str
  sample: [dmar0, dmar1]
modules:
  description: The kernel modules under C(module/) (loaded ones, and built-ins with parameters).
  returned: always
  type: list
  elements: str
  sample: [ib_core, mlx5_core, mlx5_ib]
cmdline:
  description: The booted kernel command line (C(<proc_root>/cmdline)), null when it cannot be read.
  returned: always
  type: str
  sample: BOOT_IMAGE=/boot/vmlinuz-6.1.0 root=/dev/sda1 ro intel_iommu=on iommu=pt
units:
  description:
    - "The unit-file state of each of I(units): enabled, disabled, static, masked and so on, or an empty string for a
      unit systemd does not know."
    - Empty when systemctl failed (see RV(units_error)); ask systemd per unit then.
  returned: always
  type: dict
  sample: {gpufabric-sriov.service: enabled, gpufabric-roce-qos.service: disabled}
units_error:
  description: Why RV(units) is empty although I(units) was given, else an empty string.
  returned: always
  type: str
contents:
  description: The text of each of I(contents); null for a path that does not exist, C({error}) for one that cannot
    be read as UTF-8 text of at most 1 MiB.
  returned: always
  type: dict
  sample: {/var/lib/kubelet/config.yaml: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"}
files:
  description: Whether each of I(files) exists.
  returned: always
  type: dict
  sample: {/etc/udev/rules.d/70-gpufabric-nm-unmanaged.rules: true}
stack:
  description:
    - With I(stack), the driver stack found (C(stack) inbox, ofed or null when the module is not loaded; C(version),
      C(userspace) from ofed_info, C(file) and C(file_stack) of what modprobe would load, C(built_for), C(release))
      and its C(problems), each with C(status) (fail or warn), C(reason) and C(fix); C({failed, msg}) when an
      output could not be read.
  returned: when stack is given
  type: dict
  sample: {module: mlx5_core, stack: inbox, version: null, userspace: null, file_stack: inbox, problems: [],
           file: /lib/modules/6.1.0-31-amd64/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.ko,
           built_for: 6.1.0-31-amd64, release: 6.1.0-31-amd64}
module_probe:
  description: Per module of I(probe_modules), the exit code and output of C(modprobe -D), and C(problem), why it
    cannot be loaded (empty when it can).
  returned: always
  type: dict
  sample: {vfio-pci: {rc: 0, stdout: "insmod /lib/modules/6.1.0-50-amd64/kernel/drivers/vfio/vfio.ko\n...", stderr: "",
           problem: ""}}
units_active:
  description: The ActiveState of each of I(units) (C(active), C(inactive), C(failed), ...), from the same
    C(systemctl show); empty when systemctl failed.
  returned: always
  type: dict
  sample: {gpufabric-sriov.service: active}
modules_load:
  description: The C(*.conf) files of I(modules_load_dir), each as in RV(inspected) (sha256, mode, owner, group);
    empty when the directory does not exist.
  returned: always
  type: dict
  sample: {/etc/modules-load.d/gpufabric-rdma.conf: {sha256: 3f1e..., mode: "0644", owner: root, group: root}}
inspected:
  description: The files of I(inspect_files) (null when absent, else sha256, mode, owner, group) and whether each unit
    of I(inspect_units) is enabled.
  returned: always
  type: dict
  sample: {files: {/etc/default/grub.d/gpufabric.cfg: null}, units: {}}
firmware:
  description:
    - With I(firmware), one entry per queried PF, sorted by PCI address, with C(device), C(tool), C(flint_tool),
      C(flint) (what the flint tool printed, null without one) and C(query) (what C(-e q) printed); or C(device), C(tool),
      C(flint_tool) and C(msg) when a query failed.
  returned: when I(firmware) is given
  type: list
  elements: dict
qos:
  description:
    - With I(qos), what M(gpufabric.stack.roce_qos) with I(state=gathered) returns (C(before), C(gathered), C(pfs),
      and with a I(config) C(intent), C(drift), C(not_settable), C(notes)); or C(failed) and C(msg) where it fails.
  returned: when I(qos) is given
  type: dict
vfs:
  description:
    - With I(vfs), what M(gpufabric.stack.sriov_vf) would return in check mode (C(changed), C(pfs), C(commands),
      C(passthrough)), or C(failed) and C(msg) when its options are wrong or its run would fail.
  returned: when I(vfs) is given
  type: dict
also_layers_left:
  description: The layers of I(also_layers) left out of this read, with why (their role's variables did not resolve).
  returned: when a layer was left out
  type: dict
  sample: {"8": "AnsibleUndefinedVariable: 'gpufabric_roce' is undefined"}
qos_options:
  description: With I(qos), the options it was read with (defaults filled in, unset PF keys left out).
  returned: when I(qos) is given
  type: dict
lldp:
  description:
    - With I(lldp), the LLDP neighbours lldpd sees (C(neighbors), each C(local) (the interface), C(sysname),
      C(chassis_id), C(chassis_id_type), C(port_id), C(port_id_type), C(port_descr), C(ttl), C(via)) and C(error)
      ('' when lldpd answered).
  returned: when lldp is true
  type: dict
  sample: {neighbors: [{local: enp59s0f0np0, sysname: leaf1, chassis_id: "44:4c:a8:00:00:01", chassis_id_type: mac,
           port_id: Ethernet1, port_id_type: ifname, port_descr: "", ttl: "120", via: LLDP}], error: ""}
vf_settings:
  description:
    - With I(vf_settings), per PF netdev with VFs, its VFs by index (as a string) with their settings as
      C(ip -j link show) reports them; C({failed, msg}) when ip failed.
  returned: when vf_settings is true
  type: dict
  sample: {enp59s0f0np0: {"0": {vf: 0, mac: "02:00:00:00:00:10", vlan: 0, qos: 0, spoofchk: true, trust: false,
                                link_state: auto}}}
gpudirect:
  description:
    - With I(gpudirect), what GPUDirect RDMA depends on (C(gpus), C(driver) with C(loaded), C(version), C(taint),
      C(open), C(peermem), C(memory_peers), C(release)) and C(plan), the mode it gives (C(applicable), C(mode),
      C(load), C(problems), C(evidence), C(reason)).
  returned: when gpudirect is given
  type: dict
  sample: {gpus: [{pci_address: "0000:1a:00.0", device: "0x2330", numa_node: "0"}],
           driver: {loaded: true, version: 550.54.15, taint: OE, open: true}, release: 6.1.0-50-amd64,
           plan: {applicable: true, mode: dmabuf, load: [], problems: [], reason: GPUDirect RDMA by DMA-BUF}}
pcie:
  description:
    - With I(pcie) or I(acs), the GPUs and NICs with their PCIe paths (C(gpus), C(nics)), the bridges on them with
      their C(id) (C(pci:VVVV:DDDD)) and C(acs) (C(cap), C(ctrl); C(unreadable) when config space could not be read
      past 256 bytes), per GPU every NIC and how it is reached (C(pairs)), each GPU's rail (C(rails), the nearest
      NIC below its PCIe switch that no GPU before it took, and C(below), every NIC below that switch) and C(topo),
      nvidia-smi's matrix held against the path (C(disagree); C(error) when it could not be read; None without
      the tool).
  returned: when pcie or acs is given
  type: dict
  sample: {rails: [{gpu: "0000:3a:00.0", index: 0, nic: "0000:3b:00.0", rdma: mlx5_0, kind: PIX, below: ["0000:3b:00.0"]}],
           topo: null}
acs:
  description:
    - With I(acs), the resolved C(mode) (C(gpudirect), C(isolate) or None) and layer 3's plan (C(arg), the kernel
      argument wanted; C(unwanted), booted arguments to go; C(redirecting), ports that send GPU/NIC peer traffic
      upstream; C(open), ports above VM NICs without ACS; C(unknown); C(evidence)).
  returned: when acs is given
  type: dict
  sample: {mode: gpudirect, arg: "pci=disable_acs_redir=pci:1000:c030", unwanted: [], redirecting: []}
stack_options:
  description: With I(stack), the options it was read with (defaults filled in).
  returned: when I(stack) is given
  type: dict
runtime:
  description: With I(runtime), what M(gpufabric.stack.container_runtime_facts) returns as its C(runtime).
  returned: when I(runtime) is given
  type: dict
runtime_options:
  description: With I(runtime), the options it was read with (defaults filled in), for a caller to tell whether it
    asked the same.
  returned: when I(runtime) is given
  type: dict
sysfs_root:
  description: The sysfs root read.
  returned: always
  type: str
  sample: /sys
proc_root:
  description: The procfs root read.
  returned: always
  type: str
  sample: /proc
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.gpufabric.stack.plugins.module_utils.host import boot_state, host_files, pcie, sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import driver_stack, gpudirect
from ansible_collections.gpufabric.stack.plugins.module_utils.nic_firmware import mlx_config
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_check import lldp, rdma_tools
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host import roce_qos_host
from ansible_collections.gpufabric.stack.plugins.module_utils.container_runtime import runtime_facts
from ansible_collections.gpufabric.stack.plugins.module_utils.sriov_vfs import sriov, sriov_host
from ansible_collections.gpufabric.stack.plugins.module_utils.roce_host.roce_qos import RoceQosError


def read_firmware(module, nics, options):
    """The firmware queries of the PFs that options' match names."""
    run = runtime_facts.module_runner(module)
    out = []
    for device in sriov.select_any(sriov.split_vendor(nics, options["vendor"])[0], options["match"]):
        try:
            out.append(mlx_config.read_device(run, options["tool"], options["flint_tool"], device))
        except mlx_config.MlxConfigError as exc:
            out.append({"device": device, "tool": options["tool"], "flint_tool": options["flint_tool"],
                        "msg": str(exc)})
    return out


def read_vf_settings(module, nics):
    """Per PF with VFs, its VFs' settings as the PF's driver reports them
    (``ip -j link show dev <pf>``'s vfinfo_list, what sriov_vf compares)."""
    ip = module.get_bin_path("ip")
    out = {}
    for nic in nics:
        if not nic.get("name") or not ((nic.get("sriov") or {}).get("numvfs") or 0):
            continue
        if not ip:
            return {"failed": True, "msg": "ip (iproute2) not found"}
        rc, stdout, err = module.run_command([ip, "-j", "link", "show", "dev", nic["name"]],
                                             environ_update={"LC_ALL": "C"})
        if rc != 0:
            return {"failed": True, "msg": "ip -j link show dev %s failed: %s" % (nic["name"], err.strip())}
        try:
            out[nic["name"]] = dict((str(v["vf"]), v) for v in rdma_tools.parse_ip_json_vfinfo(stdout))
        except ValueError as exc:
            return {"failed": True, "msg": "%s: %s" % (nic["name"], exc)}
    return out


def read_vfs(module, options, found, vf_settings=None):
    """What a run of the sriov_vf module with ``options`` would do here: its
    own run in check mode (sriov_host.planned), {failed, msg} when the options
    are not the module's or the run would fail. The VF settings read in this
    call (``vf_settings``) are not read again."""
    checked = ArgumentSpecValidator(sriov_host.OPTIONS).validate(options)
    if checked.error_messages:
        return {"failed": True, "msg": "vfs: %s" % "; ".join(checked.error_messages)}
    known = vf_settings if isinstance(vf_settings, dict) and not vf_settings.get("failed") else {}
    return sriov_host.planned(module, dict(checked.validated_parameters, sysfs_root=module.params["sysfs_root"]),
                              backend=lambda check: sriov_host.KnownVfs(sriov_host.IpBackend(check), known),
                              found=found)


def read(module):
    """Everything the options ask for, as the module answers it."""
    # One `systemctl show` answers both the units asked for and the boot
    # files' units (inspect_units), which are then not asked one by one.
    units, units_error, units_active, states = {}, "", {}, {}
    asked = list(dict.fromkeys(module.params["units"] + module.params["inspect_units"]))
    if asked:
        systemctl = module.get_bin_path("systemctl")
        if systemctl:
            active = {}
            states, units_error = boot_state.unit_file_states(
                lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C", "SYSTEMD_PAGER": ""}),
                asked, systemctl, active=active)
            units = dict((u, states[u]) for u in module.params["units"] if u in states)
            units_active = dict((u, active[u]) for u in module.params["units"] if u in active)
        else:
            units_error = "systemctl not found"
    if not module.params["units"]:
        units_error = ""
    try:
        inspected = host_files.inspected(module, unit_states=states)
        modules_load = host_files.inspect_dir(module.params["modules_load_dir"])
        found = sysfs_nic.discover(module.params["sysfs_root"])
    except (sysfs_nic.SysfsError, host_files.HostFilesError) as exc:
        module.fail_json(msg=str(exc))
    vendor = module.params["vendor"].lower().replace("0x", "")
    nics = [n for n in found if n["vendor"] == vendor] if vendor else found
    iommus = sysfs_nic.iommus(module.params["sysfs_root"])
    extra = {"module_probe": {}}
    if module.params["probe_modules"]:
        modprobe = module.get_bin_path("modprobe")  # PATH first, then the sbin directories
        for name in module.params["probe_modules"]:
            if modprobe:
                rc, out, err = module.run_command([modprobe, "-D", name], environ_update={"LC_ALL": "C"})
            else:
                rc, out, err = 127, "", "modprobe (kmod) not found"
            extra["module_probe"][name] = {"rc": rc, "stdout": out, "stderr": err,
                                           "problem": sriov.modprobe_problem(name, rc, out, err) or ""}
    if module.params["vf_settings"]:
        extra["vf_settings"] = read_vf_settings(module, nics)
    if module.params["lldp"]:
        extra["lldp"] = lldp.read(lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}),
                                  module.get_bin_path, [n["name"] for n in nics if n.get("name")])
    if module.params["firmware"] is not None:
        extra["firmware"] = read_firmware(module, nics, module.params["firmware"])
    if module.params["vfs"] is not None:
        extra["vfs"] = read_vfs(module, module.params["vfs"], found, extra.get("vf_settings"))
    qos = module.params["qos"]
    if qos is not None and all(set(pf) <= set(roce_qos_host.PF_SPEC) for pf in qos["pfs"]):
        extra["qos_options"] = dict(qos, pfs=[dict((k, v) for k, v in pf.items() if v is not None)
                                              for pf in qos["pfs"]])
        pfs = [dict((k, pf.get(k)) for k in roce_qos_host.PF_SPEC) for pf in qos["pfs"]]
        try:
            # the NICs and the firmware queries read above, not read again
            extra["qos"] = roce_qos_host.online(module, dict(qos, pfs=pfs, state="gathered",
                                                             sysfs_root=module.params["sysfs_root"]),
                                                found=found,
                                                queries=dict((r["device"], r["query"])
                                                             for r in extra.get("firmware") or [] if "query" in r))
        except RoceQosError as exc:
            extra["qos"] = {"failed": True, "msg": str(exc)}
    if module.params["stack"] is not None:
        stack = module.params["stack"]
        extra["stack_options"] = stack
        try:
            extra["stack"] = driver_stack.read(
                lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}),
                lambda tool: module.get_bin_path(tool), stack["module"],
                sysfs_nic.modules(module.params["sysfs_root"]), module.params["sysfs_root"],
                module.params["proc_root"], stack["flavor"])
        except driver_stack.DriverStackError as exc:
            extra["stack"] = {"failed": True, "msg": str(exc)}
    if module.params["gpudirect"] is not None:
        extra["gpudirect"] = gpudirect.read(module.params["sysfs_root"], module.params["proc_root"])
        extra["gpudirect"]["plan"] = gpudirect.plan(extra["gpudirect"], module.params["gpudirect"]["mode"],
                                                    module.params["sysfs_root"])
    if module.params["pcie"] is not None or module.params["acs"] is not None:
        topo = (module.params["pcie"] or {}).get("topo")
        try:
            extra["pcie"] = pcie.gather(
                module.params["sysfs_root"], gpudirect.gpus(module.params["sysfs_root"]), found,
                lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}),
                module.get_bin_path("nvidia-smi") if topo else None)
            if module.params["acs"] is not None:
                opts = module.params["acs"]
                extra["acs"] = pcie.acs_plan(extra["pcie"], opts["p2p"], opts["vfio"], opts["gpudirect_off"],
                                             sysfs_nic.cmdline(module.params["proc_root"]))
        except pcie.PcieError as exc:
            module.fail_json(msg=str(exc))
    if module.params["runtime"] is not None:
        extra["runtime_options"] = module.params["runtime"]
        extra["runtime"] = runtime_facts.gather(runtime_facts.module_runner(module),
                                                sysfs_root=module.params["sysfs_root"], **module.params["runtime"])
    return dict(nics=nics, iommu_active=bool(iommus), iommus=iommus,
                modules=sysfs_nic.modules(module.params["sysfs_root"]),
                cmdline=sysfs_nic.cmdline(module.params["proc_root"]),
                units=units, units_error=units_error, units_active=units_active,
                files=boot_state.files_present(module.params["files"]),
                contents=boot_state.file_contents(module.params["contents"]),
                inspected=inspected, modules_load=modules_load,
                sysfs_root=module.params["sysfs_root"], proc_root=module.params["proc_root"], **extra)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            vendor=dict(type="str", default=""),
            proc_root=dict(type="path", default="/proc"),
            units=dict(type="list", elements="str", default=[]),
            files=dict(type="list", elements="path", default=[]),
            contents=dict(type="list", elements="path", default=[]),
            modules_load_dir=dict(type="path", default="/etc/modules-load.d"),
            probe_modules=dict(type="list", elements="str", default=[]),
            vf_settings=dict(type="bool", default=False),
            lldp=dict(type="bool", default=False),
            firmware=dict(type="dict", options=dict(
                match=dict(type="list", elements="dict", required=True),
                tool=dict(type="str", choices=["mlxconfig", "mstconfig"], default="mstconfig"),
                flint_tool=dict(type="str", default="mstflint"),
                vendor=dict(type="str", default="15b3"),
            )),
            vfs=dict(type="dict"),
            qos=dict(type="dict", options=dict(
                node=dict(type="str", default="host"),
                pfs=dict(type="list", elements="dict", required=True),
                config=dict(type="dict"),
                roce_mode=dict(type="int"),
                tos=dict(type="raw"),
                config_name=dict(type="str", default=""),
                rdma_port=dict(type="int", default=1),
                firmware_query=dict(type="bool", default=True),
                qos_tool=dict(type="str", choices=["auto", "mlnx_qos", "dcb"], default="auto"),
            )),
            stack=dict(type="dict", options=dict(
                module=dict(type="str", default="mlx5_core"),
                flavor=dict(type="str", choices=list(driver_stack.FLAVORS)),
            )),
            gpudirect=dict(type="dict", options=dict(
                mode=dict(type="str", choices=list(gpudirect.MODES), default="auto"),
            )),
            pcie=dict(type="dict", options=dict(topo=dict(type="bool", default=True))),
            acs=dict(type="dict", options=dict(
                p2p=dict(type="str", choices=list(pcie.P2P_MODES), default="auto"),
                vfio=dict(type="bool", default=False),
                gpudirect_off=dict(type="bool", default=False),
            )),
            runtime=dict(type="dict", options=runtime_facts.OPTIONS),
            # the action's (plugins/action/nic_facts.py); a module run always reads
            reuse=dict(type="bool", default=False),
            forget=dict(type="bool", default=False),
            also=dict(type="dict"),
            also_layers=dict(type="list", elements="int", default=[]),
            **host_files.INSPECT_ARGS
        ),
        supports_check_mode=True,
    )
    for option in ("files", "contents"):
        bad = [f for f in module.params[option] if not f.startswith("/")]
        if bad:
            module.fail_json(msg="%s: %s is not an absolute path" % (option, bad[0]))
    if not module.params["modules_load_dir"].startswith("/"):
        module.fail_json(msg="modules_load_dir: %s is not an absolute path" % module.params["modules_load_dir"])
    # one reading: a sysfs file read by several parts is read once (sysfs_nic.snapshot)
    with sysfs_nic.snapshot():
        answer = read(module)
    module.exit_json(changed=False, **answer)


if __name__ == "__main__":
    main()
