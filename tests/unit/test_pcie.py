"""The PCIe path between GPUs and NICs, and ACS on it (module_utils/host/pcie.py),
held to real outputs (tests/unit/fixtures/pcie_real, each with its source):
nvidia-smi topo -m matrices, lspci's ACS lines; and the rack twin's PCIe
switches held to the same (its config space, its ACS after boot, its IOMMU
groups, its topology in nvidia-smi's words)."""

import os
from pathlib import Path

import pytest

from ansible_collections.gpufabric.stack.plugins.module_utils.host import pcie, sysfs_nic
from ansible_collections.gpufabric.stack.plugins.module_utils.rdma_drivers import gpudirect
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import kernel as kernel_check
from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_drivers as drivers_check
from simlab.node import hardware
from simlab.node.sysfs import pci_config
from test_twin_kernel import make

pytestmark = pytest.mark.layers(3, 5)

REAL = Path(__file__).parent / "fixtures" / "pcie_real"
IOMMU = "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt"
ACS_ARG = "pci=disable_acs_redir=pci:1000:c030"


def body(name):
    return (REAL / name).read_text().split("# ---\n", 1)[1]


def twin(tmp_path, cmdline=IOMMU, bios=None, nics=2):
    k, tree, _ = make(cmdline=cmdline, bios=bios, nics=nics)
    root = tmp_path / "sys"
    tree.materialize(str(root))
    return k, str(root)


def reading_of(root):
    return pcie.gather(root, gpudirect.gpus(root), sysfs_nic.discover(root))


# ------------------------------------------------------------------ lspci's ACS words
def test_acs_words_read_as_lspci_prints_them():
    lines = body("acs-lspci-nccl-629.txt").splitlines()
    words = [pcie.parse_acs_text(line) for line in lines]
    # the set the kernel enables for an IOMMU, and ACS off
    assert set(words) == {pcie.ACS_ISOLATION, 0}
    assert words.count(pcie.ACS_ISOLATION) == 4
    for line, word in zip(lines, words):
        assert line.split("\t")[-1] == pcie.acs_text(word)          # and back, flag for flag
    plx = body("acs-lspci-plx-pex8725.txt").splitlines()
    cap = pcie.parse_acs_text(plx[0])
    ctl = pcie.parse_acs_text(plx[1])
    assert cap == hardware.SWITCH_ACS_CAP == 0x7f                 # the twin's switch ports offer what a PLX port does
    assert ctl == pcie.ACS_ISOLATION
    assert ctl & pcie.ACS_REDIRECT                                 # redirect on: peer traffic goes up
    assert pcie.acs_text(ctl & ~pcie.ACS_REDIRECT) == (
        "SrcValid+ TransBlk- ReqRedir- CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-")


def test_an_acs_line_that_cannot_be_read_fails_quoting_it():
    with pytest.raises(pcie.PcieError, match="ReqRedir"):
        pcie.parse_acs_text("ACSCtl:\tSrcValid+ TransBlk- ReqRedir? CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-")
    with pytest.raises(pcie.PcieError, match="every flag"):
        pcie.parse_acs_text("ACSCtl:\tSrcValid+ TransBlk-")


# ------------------------------------------------------------------ config space
def test_the_acs_capability_is_found_by_walking_the_extended_list():
    cfg = pci_config(hardware.PCIE_SWITCH, 6, acs=(0x7f, 0x1d))
    got = pcie.acs(cfg)
    assert (got["offset"], got["cap"], got["ctrl"]) == (0x148, 0x7f, 0x1d)
    assert pcie.acs(pci_config(hardware.PCIE_SWITCH, 5)) is None      # the upstream port has none
    assert pcie.acs(cfg[:256]) == {"unreadable": True}                # what a user other than root reads
    loop = bytearray(cfg)
    loop[0x148:0x14c] = (0x0002 | (1 << 16) | (0x100 << 20)).to_bytes(4, "little")   # a list that loops
    assert pcie.acs(bytes(loop)) is None


# ------------------------------------------------------------------ nvidia-smi topo -m
@pytest.mark.parametrize("name,gpus,nics,first", [
    ("topo-sglang-30401-8xH100-SXM-8nic.txt", 8, 8, {(0, "mlx5_0"): "PIX", (0, "mlx5_1"): "NODE", (0, "mlx5_4"): "SYS",
                                                     (7, "mlx5_7"): "PIX"}),
    ("topo-sglang-24413-1xH100-PCIe-KVM.txt", 1, 1, {(0, "mlx5_0"): "PHB"}),
    # driver 590: the header underlined (ANSI [4m ... [0m), as published without the ESC byte
    ("topo-sglang-26039-8xB300-9nic-ansi-header.txt", 8, 9, {(0, "mlx5_10"): "PXB", (1, "mlx5_10"): "NODE",
                                                             (7, "mlx5_17"): "PXB", (7, "mlx5_bond_0"): "NODE"}),
    ("topo-dgxa100-style-10nic-tabs.txt", 8, 10, {(0, "mlx5_0"): "PXB", (0, "mlx5_8"): "SYS", (6, "mlx5_7"): "PXB"}),
    ("topo-nccl-707-8xA100-mlx5-columns.partial.txt", 8, 18, {(0, "mlx5_4"): "PXB", (2, "mlx5_0"): "PXB",
                                                              (0, "mlx5_17"): "SYS"}),
    ("topo-nccl-tests-78-16xV100-DGX2.partial.txt", 16, 10, {(0, "mlx5_0"): "PIX", (2, "mlx5_1"): "PIX",
                                                             (3, "mlx5_9"): "SYS"}),
    ("topo-nccl-1505-DGX-A100-12nic.partial.txt", 8, 12, {(0, "NIC0"): "PXB", (3, "NIC3"): "PXB"}),
    ("topo-nccl-1737-8xH100-6nic-lsmod.partial.txt", 8, 6, {(0, "NIC0"): "PIX", (1, "NIC0"): "NODE",
                                                            (2, "NIC1"): "PIX"}),
    ("topo-deepep-128-8GPU-no-nvlink.partial.txt", 8, 10, {(0, "NIC0"): "PIX", (5, "NIC5"): "PIX",
                                                           (1, "NIC0"): "SYS"}),
])
def test_topo_matrices_read_as_published(name, gpus, nics, first):
    topo = pcie.parse_topo(body(name))
    assert len([c for c in topo["columns"] if c.startswith("GPU")]) == gpus
    assert len([c for c in topo["columns"] if not c.startswith("GPU")]) == nics
    links = pcie.topo_links(topo)
    for key, kind in first.items():
        assert links[key] == kind, key
    assert set(links.values()) <= set(pcie.RELATIONS)


def test_a_topo_header_underlined_with_its_escape_bytes_reads_as_without():
    text = body("topo-sglang-26039-8xB300-9nic-ansi-header.txt")
    raw = text.replace("[4m", "\x1b[4m").replace("[0m", "\x1b[0m")
    assert "\x1b[4mGPU0" in raw and pcie.parse_topo(raw) == pcie.parse_topo(text)


def test_a_topo_row_that_cannot_be_read_fails_quoting_it():
    text = body("topo-sglang-30401-8xH100-SXM-8nic.txt")
    broken = text.replace("GPU3    NV18    NV18    NV18     X      NV18    NV18    NV18    NV18    NODE    NODE    NODE    PIX",
                          "GPU3    NV18    NV18    NV18     X      NV18    NV18    NV18    NV18    NODE    NODE    NODE    P1X")
    assert broken != text
    with pytest.raises(pcie.PcieError, match="GPU3.*P1X"):
        pcie.parse_topo(broken)
    with pytest.raises(pcie.PcieError, match="NIC Legend"):
        pcie.parse_topo(text.replace("  NIC7: mlx5_7", "  NIC7 is mlx5_7"))


# ------------------------------------------------------------------ the path, on the twin
def test_the_twin_h100_node_reads_as_a_real_h100_sxm_server(tmp_path):
    """The twin's XE9680-style node (one GPU and at most one NIC below each
    PCIe switch, two sockets) in nvidia-smi's words: a rail GPU PIX to its
    NIC, NODE to NICs of its socket, SYS across; the real 8x H100 SXM matrix
    shows exactly those kinds and one PIX NIC per GPU."""
    real = pcie.topo_links(pcie.parse_topo(body("topo-sglang-30401-8xH100-SXM-8nic.txt")))
    assert set(real.values()) == {"PIX", "NODE", "SYS"}
    _k, root = twin(tmp_path, nics=8)
    r = reading_of(root)
    kinds = {(p["index"], link["nic"]): link["kind"] for p in r["pairs"] for link in p["links"]}
    assert set(kinds.values()) == set(real.values())
    for gpu in range(8):
        assert sorted(k for (g, _n), k in kinds.items() if g == gpu) == \
            sorted(k for (g, _n), k in real.items() if g == gpu), gpu
    assert all(rail["nic"] and rail["kind"] == "PIX" for rail in r["rails"])
    # the twin's switch ports: a rail's route crosses its two downstream ports only
    rail = next(p for p in r["pairs"] if p["links"][0]["kind"] == "PIX")
    assert len(rail["links"][0]["bridges"]) == 2


def test_relation_names_the_route_as_nvidia_smi_does():
    hb, rp, up, d0, d1 = "pci0000:3a", "0000:3a:01.0", "0000:3b:00.0", "0000:3c:00.0", "0000:3c:01.0"
    gpu = {"path": [hb, rp, up, d0, "0000:3d:00.0"], "numa_node": "0"}
    nic = {"path": [hb, rp, up, d1, "0000:3e:00.0"], "numa_node": "0"}
    assert pcie.relation(gpu, nic)["kind"] == "PIX"
    nested = {"path": [hb, rp, up, d1, "0000:3e:00.0", "0000:3f:00.0", "0000:40:00.0"], "numa_node": "0"}
    assert pcie.relation(gpu, nested)["kind"] == "PXB"
    at_root_port = {"path": [hb, rp, "0000:3b:00.0"], "numa_node": "0"}
    assert pcie.relation({"path": [hb, "0000:3a:02.0", "0000:50:00.0"], "numa_node": "0"}, at_root_port)["kind"] == "PHB"
    other_bridge = {"path": ["pci0000:5d", "0000:5d:01.0", "0000:5e:00.0"], "numa_node": "0"}
    assert pcie.relation(gpu, other_bridge)["kind"] == "NODE"
    assert pcie.relation(gpu, dict(other_bridge, numa_node="1"))["kind"] == "SYS"


def test_cross_check_names_where_nvidia_smi_and_sysfs_disagree():
    topo = pcie.parse_topo(body("topo-sglang-30401-8xH100-SXM-8nic.txt"))
    links = pcie.topo_links(topo)
    # a reading that agrees with the real matrix everywhere but one pair
    reading = {"pairs": [{"gpu": "0000:%02x:00.0" % g, "index": g,
                          "links": [{"rdma": "mlx5_%d" % n, "kind": links[(g, "mlx5_%d" % n)]} for n in range(8)]}
                         for g in range(8)]}
    assert pcie.cross_check(reading, topo) == []
    reading["pairs"][3]["links"][3]["kind"] = "SYS"
    assert pcie.cross_check(reading, topo) == [{"gpu": "0000:03:00.0", "index": 3, "rdma": "mlx5_3", "sysfs": "SYS",
                                                "nvidia_smi": "PIX"}]


# ------------------------------------------------------------------ ACS on the twin and layer 3's plan
def test_the_kernel_turns_acs_on_with_the_iommu_and_the_argument_takes_redirect_away(tmp_path):
    k, root = twin(tmp_path / "a")
    r = reading_of(root)
    plan = pcie.acs_plan(r, "auto", cmdline=k.cmdline)
    assert plan["mode"] == "gpudirect" and plan["arg"] == ACS_ARG
    ports = sorted({x["port"] for x in plan["redirecting"]})
    assert len(ports) == 4 and all(x["acsctl"] == body("acs-lspci-plx-pex8725.txt").splitlines()[1].split(": ")[1]
                                   for x in plan["redirecting"])
    groups_before = len(os.listdir(Path(root, "kernel/iommu_groups")))

    k, root = twin(tmp_path / "b", cmdline=IOMMU + " " + ACS_ARG)
    r = reading_of(root)
    plan = pcie.acs_plan(r, "auto", cmdline=k.cmdline)
    assert plan["redirecting"] == [] and plan["unwanted"] == []
    assert all("ReqRedir- CmpltRedir-" in e for e in plan["evidence"])
    # a port without redirect no longer isolates what is below it: the NIC joins its port's group
    pf = Path(root, "bus/pci/devices/0000:3b:00.0/iommu_group/devices")
    assert sorted(os.listdir(pf)) == ["0000:39:01.0", "0000:3b:00.0"]
    assert len(os.listdir(Path(root, "kernel/iommu_groups"))) < groups_before

    # no IOMMU, BIOS ACS off: nothing redirects, nothing to add but the argument that keeps it so
    k, root = twin(tmp_path / "c", cmdline="BOOT_IMAGE=/vmlinuz ro", bios={"sriov": True, "iommu": False})
    assert pcie.acs_plan(reading_of(root), "auto", cmdline=k.cmdline)["redirecting"] == []


def test_disable_acs_redir_is_parsed_as_the_kernel_does():
    k, _tree, _ = make(cmdline=IOMMU + " pci=realloc,disable_acs_redir=0000:39:00.0;pci:15b3:0")
    assert k.disable_acs_redir() == ["0000:39:00.0", "pci:15b3:0"]
    assert k.acs_ctrl("0000:39:00.0", 0x1000, 0xc030, 0x7f) == 0x11
    assert k.acs_ctrl("0000:39:01.0", 0x1000, 0xc030, 0x7f) == 0x1d
    assert k.acs_ctrl("0000:11:00.0", 0x15b3, 0x1021, 0x7f) == 0x11     # device 0: any device of the vendor
    k, _tree, _ = make(cmdline=IOMMU + " pci=disable_acs_redir=pci:1000:c030 pci=disable_acs_redir=0000:39:00.0")
    assert k.disable_acs_redir() == ["0000:39:00.0"]                    # the last one wins


def test_isolate_takes_the_argument_away_and_names_open_ports(tmp_path):
    k, root = twin(tmp_path, cmdline=IOMMU + " " + ACS_ARG)
    plan = pcie.acs_plan(reading_of(root), "auto", vfio=True, cmdline=k.cmdline)
    assert plan["mode"] == "isolate" and plan["arg"] is None and plan["unwanted"] == [ACS_ARG]
    assert sorted(o["port"] for o in plan["open"]) == ["0000:39:01.0", "0000:84:01.0"]
    with pytest.raises(pcie.PcieError, match="VMs"):
        pcie.acs_plan(reading_of(root), "gpudirect", vfio=True)
    with pytest.raises(pcie.PcieError, match="gpufabric_pcie_p2p is 'bogus'"):
        pcie.acs_plan(reading_of(root), "bogus")
    assert pcie.acs_plan(reading_of(root), "auto", gpudirect_off=True)["mode"] is None


def test_several_switch_models_make_one_argument_with_semicolons():
    assert pcie.acs_arg(["pci:1000:c030", "pci:10b5:8725", "pci:1000:c030"]) == \
        "pci=disable_acs_redir=pci:1000:c030;pci:10b5:8725"
    assert pcie.booted_acs_args("ro 'pci=disable_acs_redir=pci:1000:c030;pci:10b5:8725' quiet") == \
        ["pci=disable_acs_redir=pci:1000:c030;pci:10b5:8725"]


def test_the_intent_read_before_the_os_gives_layer_2_its_acs():
    """Layer 2 (BIOS ACS) and layer 3 read gpufabric_pcie_p2p and the VFs for
    VMs through the same functions; the filters wrap them."""
    from ansible_collections.gpufabric.stack.plugins.filter import kernel as kernel_filters
    vms = [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8, "vf_drivers": [{"vfs": "6-7", "driver": "vfio-pci"}]}]
    pods = [{"match": {"vendor_device": "15b3:1021"}, "num_vfs": 8, "vf_drivers": [{"vfs": "0-7", "driver": "mlx5_core"}]}]
    assert pcie.hands_vfs_to_vms(vms) and not pcie.hands_vfs_to_vms(pods) and not pcie.hands_vfs_to_vms(None)
    assert pcie.bios_acs("auto", vms) is True          # VMs: ACS on in the BIOS too
    assert pcie.bios_acs("auto", pods) is False        # GPUDirect, or nothing asked: off, as before
    assert pcie.bios_acs("isolate", pods) is True and pcie.bios_acs("gpudirect", pods) is False
    with pytest.raises(pcie.PcieError, match="gpudirect, but gpufabric_nics hands VFs to VMs"):
        pcie.bios_acs("gpudirect", vms)
    with pytest.raises(pcie.PcieError, match="'peer': not one of auto, gpudirect, isolate"):
        pcie.bios_acs("peer", pods)
    filters = kernel_filters.FilterModule().filters()
    assert filters["pcie_vfio"](vms) is True and filters["pcie_bios_acs"](vms) is True
    from ansible.errors import AnsibleFilterError
    with pytest.raises(AnsibleFilterError, match="pcie_bios_acs: gpufabric_pcie_p2p is 'peer'"):
        filters["pcie_bios_acs"](pods, "peer")


# ------------------------------------------------------------------ the doctor
def test_layer_3_names_the_redirecting_port_the_gpu_and_the_nic(tmp_path):
    k, root = twin(tmp_path)
    r = reading_of(root)
    acs = pcie.acs_plan(r, "auto", cmdline=k.cmdline)
    wanted = ["intel_iommu=on", "iommu=pt"]
    got = kernel_check.check_kernel({"cmdline": k.cmdline + " " + ACS_ARG.replace("c030", "c031"),
                                     "iommus": ["dmar0"], "nics": []}, wanted, acs=acs)
    assert got["status"] == "fail" and ACS_ARG in got["reason"]           # the argument is missing first
    booted = dict(acs, arg=None)
    got = kernel_check.check_kernel({"cmdline": k.cmdline, "iommus": ["dmar0"], "nics": []}, wanted, acs=booted)
    assert got["status"] == "fail"
    assert "0000:39:00.0" in got["reason"] and "0000:3a:00.0" in got["reason"] and "ReqRedir+" in got["reason"]
    assert "3 more port" in got["reason"] and "layer03" in got["remediation"]

    k, root = twin(tmp_path / "ok", cmdline=IOMMU + " " + ACS_ARG)
    acs = pcie.acs_plan(reading_of(root), "auto", cmdline=k.cmdline)
    got = kernel_check.check_kernel({"cmdline": k.cmdline, "iommus": ["dmar0"], "nics": []}, wanted, acs=acs)
    assert got["status"] == "pass" and "ACS redirect off" in got["reason"]
    unwanted = pcie.acs_plan(reading_of(root), "isolate", cmdline=k.cmdline)
    got = kernel_check.check_kernel({"cmdline": k.cmdline, "iommus": ["dmar0"], "nics": []}, wanted, acs=unwanted)
    assert got["status"] == "fail" and ACS_ARG in got["reason"] and "VMs" in got["reason"]


def test_layer_5_lists_every_gpu_rail(tmp_path):
    _k, root = twin(tmp_path)
    r = reading_of(root)
    passing = {"layer": 5, "status": "pass", "reason": "modules loaded", "evidence": []}
    dmabuf = gpudirect.read(root, str(tmp_path))
    got = drivers_check.with_gpudirect(passing, dmabuf, "auto", root, r)
    rails = [e for e in got["evidence"] if e.startswith("rail: ")]
    assert len(rails) == 8
    assert "rail: GPU2 0000:3a:00.0 -> rocep59s0f0 (0000:3b:00.0, PIX)" in rails
    assert "2 of 8 GPU(s) with a NIC below their PCIe switch" in got["reason"]
    disagree = dict(r, topo={"disagree": [{"gpu": "0000:3a:00.0", "index": 2, "rdma": "rocep59s0f0",
                                           "sysfs": "PIX", "nvidia_smi": "SYS"}]})
    got = drivers_check.with_gpudirect(passing, dmabuf, "auto", root, disagree)
    assert got["status"] == "warn" and "GPU2" in got["reason"] and "SYS by nvidia-smi" in got["reason"]


# ------------------------------------------------------------------ the twin's nvidia-smi
def test_the_twins_nvidia_smi_prints_a_real_matrix_and_agrees_with_sysfs(tmp_path):
    from simlab.tools import nvidia_smi
    k, root = twin(tmp_path, nics=8)
    r = reading_of(root)
    text = nvidia_smi.matrix(k.hw, {pf.spec.index: k.rdma_name(pf) for pf in k.pfs})
    real = body("topo-sglang-30401-8xH100-SXM-8nic.txt")
    # the same legend, line for line, and the same columns
    assert text[text.index("Legend:"):text.index("NIC Legend:")].split("\n") == \
        real[real.index("Legend:"):real.index("NIC Legend:")].split("\n")
    topo, real_topo = pcie.parse_topo(text), pcie.parse_topo(real)
    assert topo["columns"] == real_topo["columns"]
    assert text.split("\n")[0].split("\t")[-3:] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    # the NIC rows carry no affinity cells, as the real ones
    for out in (text, real):
        rows = [line.split() for line in out.splitlines() if line.startswith("NIC") and not line.startswith("NIC ")]
        assert [row[0] for row in rows] == ["NIC%d" % i for i in range(8)]
        assert all(len(row) == 1 + len(topo["columns"]) for row in rows)
    # held against the path the collection reads from the twin's sysfs: no pair differs
    assert pcie.cross_check(r, topo) == []
    assert len(pcie.topo_links(topo)) == 64


def test_nvidia_smi_without_the_driver_fails_as_it_does(monkeypatch, capsys):
    from simlab.tools import nvidia_smi
    monkeypatch.setattr(nvidia_smi.agentclient, "summary", lambda prog: {"modules": ["mlx5_core"], "hw": {"gpus": 8}})
    assert nvidia_smi.main(["topo", "-m"]) == 9
    assert capsys.readouterr().out.strip() == nvidia_smi.NO_DRIVER


def test_a_write_of_the_acs_word_holds_until_the_next_boot():
    """What setpci -s <port> ECAP_ACS+0x6.w=<word> does: the twin keeps the
    word written at the ACS control register; other registers are not
    modelled."""
    from simlab.node.kernel import KernelError
    from simlab.node.sysfs import ACS_CTRL_AT
    k, tree, _ = make(cmdline=IOMMU + " " + ACS_ARG)
    path = "/bus/pci/devices/0000:39:00.0/config"
    assert pcie.acs(tree.read(path))["ctrl"] == 0x11
    tree.write(path, (pcie.ACS_ISOLATION).to_bytes(2, "little"), ACS_CTRL_AT)
    assert pcie.acs(tree.read(path))["ctrl"] == pcie.ACS_ISOLATION
    assert pcie.acs(tree.read("/bus/pci/devices/0000:39:01.0/config"))["ctrl"] == 0x11
    with pytest.raises(KernelError):
        tree.write(path, b"\x00\x00", 0x10)
    with pytest.raises(KernelError):
        tree.write("/bus/pci/devices/0000:38:00.0/config", b"\x00\x00", ACS_CTRL_AT)   # the upstream port has no ACS
    k2, tree2, _ = make(cmdline=IOMMU + " " + ACS_ARG)                                    # a boot forgets it
    assert pcie.acs(tree2.read(path))["ctrl"] == 0x11


# ------------------------------------------------------------------ the plan's GPU of each NIC
def test_a_plan_that_gives_a_nic_to_a_gpu_of_the_other_socket_is_named(tmp_path):
    """The twin's GPU node: GPU2 (NUMA 0) below the switch of 0000:3b:00.0,
    GPU4 (NUMA 1) below 0000:86:00.0's; GPU3 on NUMA 0 has no NIC of its own."""
    _k, root = twin(tmp_path)
    r = reading_of(root)
    assert pcie.planned_gpu_problem(r, "0000:3b:00.0", 2) is None
    assert pcie.planned_gpu_problem(r, "0000:86:00.0", 4) is None
    crossed = pcie.planned_gpu_problem(r, "0000:86:00.0", 2)
    assert crossed == ("GPU2 0000:3a:00.0 (NUMA 0) reaches it across the socket interconnect (SYS), so NCCL gives "
                       "that GPU no GPUDirect RDMA over it; by the PCIe path it is GPU4's rail (below its PCIe "
                       "switch), and GPU2's own NIC is rocep59s0f0")
    same_socket = pcie.planned_gpu_problem(r, "0000:3b:00.0", 3)
    assert same_socket.startswith("GPU3 0000:5d:00.0 (NUMA 0) reaches it across the host bridges of its socket (NODE)")
    assert same_socket.endswith("it is GPU2's rail (below its PCIe switch)")
    assert pcie.planned_gpu_problem(r, "0000:3b:00.0", 9).startswith("the node has no GPU9 (its GPUs: GPU0 ")
    # no GPU read: nothing to hold the plan to
    assert pcie.planned_gpu_problem({"pairs": []}, "0000:3b:00.0", 2) is None


def test_layer_9_fails_the_pf_the_plan_gives_to_a_gpu_across_the_socket(tmp_path):
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.rdma_check import rdma_pairs as RP
    from ansible_collections.gpufabric.stack.plugins.plugin_utils.checks import rdma_check as layer9
    _k, root = twin(tmp_path)
    pfs = sysfs_nic.discover(root)
    r = reading_of(root)
    nics = [{"match": {"vendor_device": "15b3:1021"}}]
    cabling = [{"node": "node01", "pf": "enp59s0f0np0", "pci_address": "0000:3b:00.0", "gpu": 4,
                "switch": "leaf1", "port": "swp1"},
               {"node": "node01", "pf": "enp134s0f0np0", "pci_address": "0000:86:00.0", "gpu": 2,
                "switch": "leaf2", "port": "Ethernet1"}]
    links = RP.link_check("node01", pfs, nics, cabling, pcie_reading=r)
    rails = [p for p in links["pfs"] if p["kind"] == "rail"]
    assert [p["pf"] for p in rails] == ["enp59s0f0np0", "enp134s0f0np0"]
    assert rails[0]["cause"].startswith("gpufabric_cabling makes it GPU4's rail, but GPU4 0000:85:00.0 (NUMA 1) "
                                        "reaches it across the socket interconnect (SYS)")
    summary = RP.summary(links, bandwidth=False)
    assert not summary["passed"] and "enp59s0f0np0" in summary["failures"][0]
    assert "gpu: <index>" in layer9.remediation(summary)
    # the plan as the node is: nothing to say
    for c, gpu in zip(cabling, (2, 4)):
        c["gpu"] = gpu
    assert [p for p in RP.link_check("node01", pfs, nics, cabling, pcie_reading=r)["pfs"] if p["kind"] == "rail"] == []


@pytest.mark.parametrize("nics", [1, 2, 4, 8])
def test_the_twins_cabling_plan_names_the_gpu_its_sysfs_pairs_with_each_nic(tmp_path, nics):
    """simlab's lab plan writes each cable's ``gpu`` from the hardware
    document (hardware.gpu_of_nic); the collection's read of the twin's
    sysfs must pair the same GPU with the same NIC, or the twin's own plan
    would fail layer 9."""
    k, root = twin(tmp_path, nics=nics)
    r = reading_of(root)
    read = {nic: g["index"] for nic, g in pcie.gpu_of_nic(r["rails"]).items()}
    planned = {spec.bdf: gpu for spec in hardware.nic_specs(k.hw)
               for n, gpu in hardware.gpu_of_nic(k.hw).items() if n == spec.index}
    assert planned and read == planned
    assert all(pcie.planned_gpu_problem(r, nic, gpu) is None for nic, gpu in planned.items())
