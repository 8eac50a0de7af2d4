"""The VM rack's node backend (simlab/backend.py): each node a QEMU machine
with Debian's real kernel, reached over SSH (:mod:`simlab.vm.lab`), its
faults made the real way (:mod:`simlab.vm.faults`)."""

from __future__ import annotations

from pathlib import Path

from simlab.backend import Backend
from simlab.inventory import dump

from . import lab as vm_lab


class VmBackend(Backend):
    kind = "vm"

    @property
    def node_faults(self):
        from . import faults
        return tuple(faults.NODE_FAULTS)

    def build_image(self, force: bool = False, log=print) -> str:
        from . import image
        image.build(force=force, log=log)
        return ""

    def plan(self, name: str, args) -> dict:
        return vm_lab.plan(name, args.nodes or 2, nics=args.nics or 1, switches=args.switches or 0,
                           preset=args.preset or "factory", nos=args.nos.split(",") if args.nos else None,
                           memory_mb=args.memory,
                           sushy_nodes=args.sushy_nodes.split(",") if getattr(args, "sushy_nodes", None) else None)

    def up(self, lab, doc: dict, inventory: Path | None, log=print) -> dict:
        return vm_lab.up(lab, doc, inventory, log)

    def stop_nodes(self, lab) -> None:
        vm_lab.down(lab)

    def status(self, lab, doc: dict) -> dict:
        return {"nodes": vm_lab.status(lab)}

    def node_exec(self, lab, node: str, *cmd: str, check: bool = True):
        return vm_lab.ssh(lab, node, *cmd, check=check)

    def reboot(self, lab, node: str) -> None:
        vm_lab.reboot(lab, node)

    def fault(self, lab, target: str, kind: str) -> str:
        from simlab.faults import FaultError
        from . import faults
        try:
            return faults.inject(lab, target, kind)
        except faults.FaultError as exc:
            raise FaultError(str(exc)) from None

    def node_vars(self, lab, doc: dict, hw: dict) -> dict:
        return {
            "ansible_host": "127.0.0.1",
            "ansible_port": hw["ssh_port"],
            "bmc_address": f"127.0.0.1:{hw['bmc_port']}",
            "bmc_vendor": hw["bmc_vendor"],
            "gpu_count": hw["gpus"],
            "numa_nodes": hw["numa_nodes"],
            "cpu_vendor": hw["cpu_vendor"],
            "roce_addresses": {n["netdev"]: n["ipv4"].split("/")[0] for n in hw["nics"]},
        }

    def group_vars(self, lab, doc: dict, out: Path) -> None:
        """VM nodes: a real kernel reached over SSH; only the NICs and what the
        guest image lacks (a package mirror) differ from a rack of ConnectX nodes."""
        from .lab import IGB
        name = doc["name"]
        dump(out / "group_vars/all/vm.yml", {
            "simlab_lab": name,
            "simlab_kind": "vm",
            # The real /sys, /proc and boot id: nothing about the kernel is simulated.
            # A cold boot under software emulation takes a minute or more.
            "gpufabric_reboot_timeout": 900,
            # A lab brought up from factory serves nothing: its nodes reboot
            # together (roles/reboot; a production pool keeps the default, one at a time).
            "gpufabric_reboot_throttle": 0,
            # No Kubernetes runs in the lab: cordon, drain and uncordon go to the
            # twin's stand-in (roles/node_maintenance, backend twin).
            "gpufabric_kube_backend": "twin",
            "gpufabric_kubernetes": False,
        }, name)
        vendor, device = IGB["vendor"], IGB["device"]
        dump(out / "group_vars/gpu_workers.yml", {
            "ansible_connection": "ssh",
            "ansible_user": "root",
            "ansible_python_interpreter": "/usr/bin/python3",
            "ansible_ssh_private_key_file": doc["ssh_key"],
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={lab.dir / 'known_hosts'} -o StrictHostKeyChecking=yes",
            # Layer 6: every igb PF (Intel 82576, 7 VFs at most) gets 4 VFs; VFs 0-1
            # stay on igbvf (pods), VFs 2-3 go to vfio-pci (tenant VMs).
            "gpufabric_nics": [{"match": {"vendor_device": f"{vendor}:{device}"}, "num_vfs": 4,
                                "vf_drivers": [{"vfs": "2-3", "driver": "vfio-pci"}],
                                "resource_prefix": "gpu_rail"}],
            "gpufabric_nics_per_node": len(doc["nodes"][0]["nics"]),
            # Layer 5 on igb: the Intel drivers, and RoCE v2 in software (Soft-RoCE)
            # over each fabric PF; the guest has no package mirror, its image carries
            # rdma-core.
            "rdma_drivers_install_packages": False,
            "rdma_drivers_vendor": vendor,
            "rdma_drivers_pf_driver": IGB["driver"],
            "rdma_drivers_modules": [IGB["driver"], IGB["vf_driver"], "rdma_rxe", "ib_uverbs", "rdma_ucm"],
            "rdma_drivers_soft_roce": True,
            "kernel_nic_vendor": vendor,
            # Layer 9: the rate a pair is gated against is what this emulated link carries.
            "rdma_check_vendor": vendor,
            "rdma_check_line_rate_mbps": doc.get("link_rate_mbps", 40),
            "rdma_check_duration": 3,
            "rdma_check_message_size": 65536,
        }, name)
