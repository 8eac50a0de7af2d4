"""Faults of layers 1-5 on one node of a converged 2-node twin, through the
playbooks an operator runs: validate.yml names exactly that layer and that
cause on exactly that node while the other node stays green, then site.yml
either repairs the node (validate.yml is green again) or stops on that node
with that cause. Either way the other node converges through layer 6 with no
change and no reboot.

One lab for the module (ready preset, converged once by site.yml); every test
leaves it converged again, so the faults run one after the other on the same
lab."""

import re

import pytest

from tests.integration.twinlab import require_twin
from tests.integration.host_lab import SYSFS, HostLab, green, ran_through_layer6

pytestmark = [pytest.mark.twin, pytest.mark.slow, pytest.mark.layers(1, 2, 3, 4, 5)]

FW_PF = "0000:3b:00.0"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_twin()
    lab = HostLab.up(tmp_path_factory, "hf")
    try:
        proc, rc = lab.site()
        assert rc and all(r["failed"] == 0 and r["unreachable"] == 0 for r in rc.values()), proc.stdout[-4000:]
        layers, _ = lab.validate()
        assert {n: green(layers[n]) for n in lab.nodes} == {n: {} for n in lab.nodes}
        lab.healthy = True
        yield lab
    finally:
        lab.down()


@pytest.fixture
def fresh(lab, request):
    """The lab, converged and green; a test that fails leaves it to be repaired
    before the next one runs."""
    if not lab.healthy:
        for node in lab.nodes:
            lab.fault(node, "clear")
            lab.fault(f"{node}-bmc", "clear")
            lab.host_vars(node, None)
        lab.site()
        layers, _ = lab.validate()
        assert {n: green(layers[n]) for n in lab.nodes} == {n: {} for n in lab.nodes}, "lab not repaired"
    failed = request.session.testsfailed
    yield lab
    lab.healthy = request.session.testsfailed == failed


def other(lab, node):
    return next(n for n in lab.nodes if n != node)


def inject(lab, target, kind, node):
    """Inject the fault; returns the other node's boot time before it."""
    before = lab.boot_time(other(lab, node))
    lab.fault(target, kind)
    return before


def doctor_names(lab, node, layer, status, reason):
    """validate.yml: `node` fails (or warns) at `layer` with `reason`, every
    layer below passes, every layer above is blocked (a warning blocks
    nothing); the other node is green.  Returns the layer row."""
    layers, verdicts = lab.validate()
    rows = layers[node]
    assert (rows[layer]["status"], rows[layer]["reason"]) == (status, reason), rows[layer]
    assert all(rows[n]["status"] == "pass" for n in range(1, layer)), green(rows)
    above = "blocked" if status == "fail" else "pass"
    assert all(rows[n]["status"] == above for n in range(layer + 1, 7)), green(rows)
    if status == "fail":
        assert (verdicts[node]["layer"], verdicts[node]["reason"]) == (layer, reason)
    else:   # a warning is no verdict; no layer up to 6 fails
        assert verdicts[node].get("layer") is None or verdicts[node]["layer"] > 6, verdicts[node]
    assert green(layers[other(lab, node)]) == {}
    return rows[layer]


def site_repairs(lab, node, other_boot):
    """site.yml repairs `node`; the other node converges with no change and no
    reboot; validate.yml is green on both."""
    proc, rc = lab.site()
    assert set(rc) == set(lab.nodes), proc.stdout[-3000:]
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in rc.values()), proc.stdout[-4000:]
    assert rc[node]["changed"] > 0
    untouched(lab, node, proc, rc, other_boot)
    layers, _ = lab.validate()
    assert {n: green(layers[n]) for n in lab.nodes} == {n: {} for n in lab.nodes}
    return proc


def site_stops(lab, node, other_boot, cause):
    """site.yml stops on `node` with `cause`, changing nothing there; the other
    node converges with no change and no reboot."""
    proc, rc = lab.site()
    assert rc[node]["failed"] == 1 and rc[node]["changed"] == 0, proc.stdout[-4000:]
    fatal = re.findall(rf"^fatal: \[{node}\]: FAILED! => \n(.*?)\n(?:\S|\Z)", proc.stdout, re.M | re.S)
    assert fatal and cause in " ".join(" ".join(fatal).split()), proc.stdout[-4000:]
    untouched(lab, node, proc, rc, other_boot)
    return proc


def untouched(lab, node, proc, rc, other_boot):
    o = other(lab, node)
    assert rc[o]["failed"] == 0 and rc[o]["changed"] == 0, proc.stdout[-4000:]
    assert ran_through_layer6(proc.stdout, o), "the other node did not converge through layer 6"
    assert lab.boot_time(o) == other_boot, f"{o} rebooted"


def firmware(lab, node, param="NUM_OF_VFS"):
    """(current, next boot) of a firmware parameter, as mstconfig prints it."""
    out = lab.sh(node, f"mstconfig -d {FW_PF} -e q {param}").stdout
    row = next(line.split() for line in out.splitlines() if param in line.split())
    return row[-2], row[-1]


# ------------------------------------------------------------------ layer 1

def test_bmc_unreachable_stops_site_on_that_node(fresh):
    lab, node = fresh, "node02"
    boot = inject(lab, f"{node}-bmc", "bmc-unreachable", node)
    row = doctor_names(lab, node, 1, "fail", "BMC unreachable")
    address = lab.host(node)["bmc_address"]
    assert address in str(row["evidence"])
    site_stops(lab, node, boot, f"{node}: BMC unreachable: no Redfish answer from {address}")
    lab.fault(f"{node}-bmc", "clear")
    layers, _ = lab.validate()
    assert {n: green(layers[n]) for n in lab.nodes} == {n: {} for n in lab.nodes}


# ------------------------------------------------------------------ layer 2

def test_bios_sriov_off_named_and_repaired(fresh):
    lab, node = fresh, "node01"
    boot = inject(lab, f"{node}-bmc", "bios-sriov-off", node)
    row = doctor_names(lab, node, 2, "fail", "SR-IOV disabled in BIOS")
    assert "Disabled" in str(row["evidence"])
    site_repairs(lab, node, boot)
    # the VFs the boot unit could not create (no IOV BARs) are back
    assert lab.sh(node, f"cat {SYSFS}/bus/pci/devices/{FW_PF}/sriov_numvfs").stdout.strip() == "8"


def test_bios_vtd_off_named_and_repaired(fresh):
    lab, node = fresh, "node02"
    boot = inject(lab, node, "bios-vtd-off", node)
    row = doctor_names(lab, node, 2, "fail", "VT-d disabled")
    assert "Disabled" in str(row["evidence"])
    site_repairs(lab, node, boot)
    assert lab.sh(node, f"ls {SYSFS}/class/iommu").stdout.split() != []


# ------------------------------------------------------------------ layer 3

def test_iommu_off_named_and_repaired(fresh):
    lab, node = fresh, "node01"
    boot = inject(lab, node, "iommu-off", node)
    doctor_names(lab, node, 3, "fail", "flag intel_iommu=on missing from /proc/cmdline")
    proc = site_repairs(lab, node, boot)
    assert "Reboot for kernel arguments intel_iommu=on" in proc.stdout
    assert "intel_iommu=on" in lab.sh(node, "cat /run/simlab/proc/cmdline").stdout.split()


def test_acs_redirect_named_and_repaired(fresh):
    """The GPU node's boot loader loses pci=disable_acs_redir=: with the IOMMU
    on, the kernel turns ACS redirect on again on every PCIe switch port, as
    the ports' config space shows; site.yml puts the argument back."""
    lab, node = fresh, "node02"
    boot = inject(lab, node, "acs-redirect", node)
    row = doctor_names(lab, node, 3, "fail", "flag pci=disable_acs_redir=pci:1000:c030 missing from /proc/cmdline")
    ports = [e for e in row["evidence"] if e.startswith("PCIe ")]
    assert ports and all(e.endswith("ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- "
                                    "DirectTrans-") for e in ports), row["evidence"]
    proc = site_repairs(lab, node, boot)
    assert "Reboot for kernel arguments pci=disable_acs_redir=pci:1000:c030" in proc.stdout
    assert "pci=disable_acs_redir=pci:1000:c030" in lab.sh(node, "cat /run/simlab/proc/cmdline").stdout.split()


def test_numvfs_enomem_named_stops_site_then_pci_realloc_repairs(fresh):
    lab, node = fresh, "node02"
    boot = inject(lab, node, "numvfs-enomem", node)
    pfs = ", ".join(sorted(lab.sh(node, f"cd {SYSFS}/bus/pci/devices && ls -d */sriov_totalvfs | cut -d/ -f1")
                           .stdout.split()))
    reason = (f"IOV BARs unassigned on PF {pfs}: not enough MMIO for the VFs (ENOMEM on sriov_numvfs), "
              "pci=realloc missing from /proc/cmdline")
    row = doctor_names(lab, node, 3, "fail", reason)
    assert "kernel_pci_realloc: true" in row["remediation"]
    # the kernel really refuses VFs on that PF
    write = lab.sh(node, "python3 -c \"import os; "
                         f"os.write(os.open('{SYSFS}/bus/pci/devices/{FW_PF}/sriov_numvfs', os.O_WRONLY), b'1')\"",
                   check=False)
    assert "[Errno 12] Cannot allocate memory" in write.stderr, write.stderr
    site_stops(lab, node, boot, f"{node}: IOV BARs unassigned on PF {pfs}: not enough MMIO for the VFs "
                                "(sriov_numvfs fails with ENOMEM), pci=realloc missing from")
    # the remediation the doctor names, for that host only; it stays in the
    # inventory, as an operator would keep it
    lab.host_vars(node, "kernel_pci_realloc: true\n")
    proc = site_repairs(lab, node, boot)
    assert "Reboot for kernel arguments pci=realloc" in proc.stdout
    assert lab.sh(node, f"cat {SYSFS}/bus/pci/devices/{FW_PF}/sriov_numvfs").stdout.strip() == "8"
    lab.fault(node, "clear")


# ------------------------------------------------------------------ layer 4

def test_fw_sriov_off_named_and_repaired(fresh):
    lab, node = fresh, "node01"
    boot = inject(lab, node, "fw-sriov-off", node)
    row = doctor_names(lab, node, 4, "fail", "SR-IOV disabled in NIC firmware (no sriov_totalvfs)")
    assert any("SRIOV_EN current False(0)" in e for e in row["evidence"]), row["evidence"]
    proc = site_repairs(lab, node, boot)
    assert "Reboot for NIC firmware SR-IOV settings" in proc.stdout
    assert firmware(lab, node, "SRIOV_EN") == ("True(1)", "True(1)")


def test_fw_pending_reboot_named_and_repaired(fresh):
    lab, node = fresh, "node02"
    boot = inject(lab, node, "fw-pending-reboot", node)
    current, nxt = firmware(lab, node)
    assert current != nxt
    doctor_names(lab, node, 4, "warn", f"firmware change pending a reboot: NUM_OF_VFS current {current} next {nxt}")
    site_repairs(lab, node, boot)
    now, nxt_after = firmware(lab, node)
    assert now == nxt_after


# ------------------------------------------------------------------ layer 5

def test_driver_unbound_named_and_repaired(fresh):
    lab, node = fresh, "node01"
    boot = inject(lab, node, "driver-unbound", node)
    unbound = lab.sh(node, f"cd {SYSFS}/bus/pci/devices && for d in */sriov_totalvfs; do d=${{d%/*}}; "
                           "[ -e $d/driver ] || echo $d; done").stdout.split()
    assert len(unbound) == 1
    doctor_names(lab, node, 5, "fail", f"PF {unbound[0]} has no driver bound")
    site_repairs(lab, node, boot)
    assert lab.sh(node, f"cat {SYSFS}/bus/pci/devices/{unbound[0]}/sriov_numvfs").stdout.strip() == "8"
