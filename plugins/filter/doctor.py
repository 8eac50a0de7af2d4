# -*- coding: utf-8 -*-
# Copyright: gpufabric.stack contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters behind the doctor (playbooks/validate.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: doctor_sriov_vfs
short_description: The doctor's layer 6 verdict for one host
description:
  - Compares nic_facts with the host's gpufabric_nics and the persistence and udev state; returns
    {layer, name, status, reason, evidence, remediation}.
  - VFs the layout gives to VMs (C(vf_drivers) with C(vfio-pci)) must be on vfio-pci, each alone in its IOMMU group,
    with vfio-pci loadable (C(modprobe -D)); a VF the layout keeps on the kernel's driver must not be on vfio-pci.
    Each passthrough VF is in the evidence with its IOMMU group and NUMA node.
  - The same plugin file provides C(doctor_kernel) (the layer 3 verdict from a nic_facts reading and the wanted kernel
    arguments), C(doctor_nic_firmware) (the layer 4 verdict from mlx_config's check-mode answer, the selected PFs,
    the nics, the minimum firmware version and the selected PFs that are not ConnectX, which make the layer
    not applicable, status skipped, when there is no other), C(doctor_rdma_drivers) (the layer 5 verdict from the selected PFs, the nics,
    the loaded and the wanted modules; an RDMA device is asked of the PFs of the RDMA driver's vendor only),
    C(kernel_iov_unassigned) (the PFs of a vendor whose IOV BARs are unassigned), C(doctor_failed)
    (whether a host failed one of the given layers in this run), C(doctor_layer_results) (a host's result per layer,
    the checks' own, skipped for --skip-tags, blocked above the first failure), C(doctor_verdict)
    (first failing layer per host, upper layers blocked), C(doctor_table) (a hosts x layers text table, ANSI colours
    optional), C(doctor_junit) (JUnit XML, one testsuite per host), C(doctor_html) (a self-contained HTML rack view)
    and C(doctor_use_color) (whether to colour).
positional: _input, nics, unit_enabled, udev_rule_present, persist, nm_unmanaged, module_probe, iommu_active,
  unit_failed
options:
  _input:
    description: The nics list returned by gpufabric.stack.nic_facts.
    type: list
    required: true
  nics:
    description: The host's gpufabric_nics.
    type: list
    required: true
  unit_enabled:
    description: Whether the persistence unit is enabled.
    type: bool
    required: true
  udev_rule_present:
    description: Whether the NM_UNMANAGED udev rule is installed.
    type: bool
    required: true
  persist:
    description: Whether the persistence unit is expected.
    type: bool
    default: true
  nm_unmanaged:
    description: Whether the udev rule is expected.
    type: bool
    default: true
  module_probe:
    description: nic_facts' C(module_probe) (C(modprobe -D) per module); with VFs meant for VMs, vfio-pci's entry
      tells whether it could be loaded.
    type: dict
  iommu_active:
    description: nic_facts' C(iommu_active).
    type: bool
  unit_failed:
    description: Whether the persistence unit failed at this boot (its ActiveState is C(failed)).
    type: bool
    default: false
"""

EXAMPLES = r"""
result: "{{ facts.nics | gpufabric.stack.doctor_sriov_vfs(gpufabric_nics, true, true) }}"
"""

RETURN = r"""
_value:
  description: The layer result.
  type: dict
"""

from ansible_collections.gpufabric.stack.plugins.module_utils.deferred import deferred

doctor = deferred("doctor")
doctor_report = deferred("doctor_report")


def doctor_sriov_vfs(pfs, nics, unit_enabled, udev_rule_present, persist=True, nm_unmanaged=True,
                     module_probe=None, iommu_active=None, unit_failed=False):
    return doctor.check_sriov_vfs(pfs, nics, unit_enabled, udev_rule_present, persist, nm_unmanaged,
                                  module_probe=module_probe, iommu_active=iommu_active, unit_failed=unit_failed)


def doctor_kernel(reading, wanted, iommu=True, verify_iov_bars=True, nic_vendor="15b3", sysfs_root="/sys",
                  proc_root="/proc"):
    return doctor.check_kernel(reading or {}, list(wanted or []), bool(iommu), bool(verify_iov_bars), nic_vendor,
                               sysfs_root, proc_root)


def doctor_nic_firmware(checked, pfs, nics, min_fw_version="", left_out=None):
    return doctor.check_nic_firmware(checked or {}, pfs or [], nics or [], min_fw_version or "", left_out or [])


def doctor_rdma_drivers(pfs, nics, loaded, modules, sysfs_root="/sys", vendor="15b3"):
    return doctor.check_rdma_drivers(pfs or [], nics or [], list(loaded or []), list(modules or []), sysfs_root,
                                     str(vendor or ""))


def kernel_iov_unassigned(nics, nic_vendor="15b3"):
    return doctor.kernel_iov_unassigned(nics, nic_vendor)


def doctor_failed(layers, host_facts, skip_tags=None):
    return doctor.earlier_failure(layers, host_facts or {}, skip_tags or []) is not None


def doctor_layer_results(layers, host_facts, skip_tags=None):
    return doctor.layer_results(layers, host_facts or {}, skip_tags or [])


def doctor_verdict(results):
    v, rows = doctor.verdict(results or [])
    return {"verdict": v, "layers": rows}


def doctor_table(report, color=False):
    """report: {host: {verdict, layers}} -> list of text lines (ANSI colours with color)."""
    return doctor_report.table(report or {}, bool(color))


def doctor_junit(report, name="gpufabric doctor", timestamp=None):
    """report -> JUnit XML text (one testsuite per host, one testcase per layer)."""
    return doctor_report.junit_xml(report or {}, name, timestamp)


def doctor_html(report, switches=None, cabling=None, title="gpufabric doctor", generated=None):
    """report -> a self-contained HTML rack view."""
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
        return {"doctor_sriov_vfs": doctor_sriov_vfs, "doctor_kernel": doctor_kernel,
                "doctor_nic_firmware": doctor_nic_firmware, "doctor_rdma_drivers": doctor_rdma_drivers,
                "kernel_iov_unassigned": kernel_iov_unassigned, "doctor_failed": doctor_failed,
                "doctor_layer_results": doctor_layer_results, "doctor_verdict": doctor_verdict,
                "doctor_table": doctor_table, "doctor_junit": doctor_junit, "doctor_html": doctor_html,
                "doctor_use_color": doctor_use_color}
