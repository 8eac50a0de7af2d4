"""The twin rack's node backend (simlab/backend.py): each node a podman
container running systemd and the node agent (the twin kernel, its FUSE
sysfs, the tool twins); Ansible reaches it with the simlab_podman connection."""

from __future__ import annotations

import json
import time
from pathlib import Path

from . import image, podman
from .backend import Backend
from .inventory import dump
from .lab import HOME, REPO, container_name, ensure_inotify, free_ports
from .node import hardware


# What the nodes' Python compiles from AnsiballZ payloads (simlab/node/simlab_zipcache.py),
# kept across runs in one directory of this host that every node of every lab shares.
ZIPCACHE = HOME / ".zipcache"
_NODE_SITE = "/usr/lib/python3/dist-packages"


def zipcache_mounts() -> list[str]:
    """podman arguments that load the bytecode cache in a node's Python (the
    module and its .pth from the checkout) and give it the host's directory."""
    from .node import simlab_zipcache

    module = Path(simlab_zipcache.__file__)
    pth = module.with_suffix(".pth")
    return ["-v", f"{module}:{_NODE_SITE}/{module.name}:ro",
            "-v", f"{pth}:{_NODE_SITE}/{pth.name}:ro",
            "-v", f"{ZIPCACHE}:{simlab_zipcache.CACHE_DIR}"]


class ContainerBackend(Backend):
    kind = "twin"

    @property
    def node_faults(self):
        from . import faults
        return tuple(faults.NODE_FAULTS)

    def build_image(self, force: bool = False, log=print) -> str:
        return image.build(force=force)

    def plan(self, name: str, args) -> dict:
        from .lab import plan
        if getattr(args, "sushy_nodes", None):
            raise ValueError("--sushy-nodes: sushy-tools' emulator drives libvirt domains, which only VM nodes "
                             "(--kind vm) are")
        return plan(name, args.nodes or 4, 2 if args.switches is None else args.switches, nics=args.nics or 2,
                    model=args.model, driver=args.driver.split(","), preset=args.preset or "ready",
                    totalvfs=args.totalvfs, link_type=args.link_type, nos=args.nos.split(",") if args.nos else None)

    def up(self, lab, doc: dict, inventory: Path | None, log=print) -> dict:
        t0 = time.monotonic()
        ref = image.build(log=log)
        if lab.exists():
            lab.down(log=lambda *_: None)
        (lab.dir / "nodes").mkdir(parents=True, exist_ok=True)
        (lab.dir / "logs").mkdir(exist_ok=True)
        (lab.dir / "fabric").mkdir(exist_ok=True)
        bmc_ports = free_ports(len(doc["nodes"]))
        sw_ports = free_ports(len(doc["switches"]))
        for i, hw in enumerate(doc["nodes"]):
            hw["bmc_port"] = bmc_ports[i]
            hw["bmc_vendor"] = doc["vendors"][i % len(doc["vendors"])]
            nd = lab.dir / "nodes" / hw["name"]
            nd.mkdir(parents=True, exist_ok=True)
            hardware.dump(hw, nd / "hardware.json")
            (nd / "faults.json").write_text("{}\n")
        for i, sw in enumerate(doc["switches"]):
            sw["ssh_port"] = sw_ports[i]
        (lab.dir / "lab.json").write_text(json.dumps(doc, indent=2) + "\n")
        lab._init_bmc_state(doc)
        ensure_inotify(len(doc["nodes"]), log)
        lab._start_services(doc, log)
        for hw in doc["nodes"]:
            self._run_node(lab, ref, hw)
        self.wait_nodes(lab, [hw["name"] for hw in doc["nodes"]])
        if inventory:
            from .inventory import write_inventory
            write_inventory(doc, lab, Path(inventory))
        log(f"simlab: lab {lab.name} up: {len(doc['nodes'])} nodes, {len(doc['switches'])} switches "
            f"in {time.monotonic() - t0:.1f}s")
        return doc


    def _run_node(self, lab, ref: str, hw: dict) -> None:
        name = container_name(lab.name, hw["name"])
        nd = lab.dir / "nodes" / hw["name"]
        ZIPCACHE.mkdir(parents=True, exist_ok=True)
        # the container's ID for the inventory (ansible_simlab_container_id):
        # the nodes' connection runs commands through runc exec on it
        hw["container_id"] = podman.run("run", "-d", "--name", name, "--hostname", hw["name"],
                   "--label", f"simlab.lab={lab.name}", "--label", "simlab.kind=node",
                   "--systemd=always", "--network=none", "--restart=always",
                   "--device", "/dev/fuse", "--cap-add", "SYS_ADMIN",
                   "-v", f"{REPO / 'simlab'}:/opt/simlab/simlab:ro",
                   "-v", f"{nd}:/var/lib/simlab/lab",
                   "-v", f"{lab.dir}/fabric:/run/simlab-fabric",
                   "-v", f"{lab.dir}:/var/lib/simlab/rack:ro",
                   *zipcache_mounts(),
                   ref, "/sbin/init").stdout.strip()

    def wait_nodes(self, lab, nodes: list[str], timeout: float = 120) -> None:
        """Until every node's twin hardware is up (its sysfs is mounted)."""
        pending = set(nodes)
        deadline = time.monotonic() + timeout
        while pending:
            for node in sorted(pending):
                proc = podman.run("exec", container_name(lab.name, node), "mountpoint", "-q",
                                  "/run/simlab/sys", check=False)
                if proc.returncode == 0:
                    pending.discard(node)
            if pending:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"twin hardware did not come up on {', '.join(sorted(pending))}")
                time.sleep(0.2)

    def stop_nodes(self, lab) -> None:
        """The containers go with the lab's (Lab.down removes every container of it)."""

    def status(self, lab, doc: dict) -> dict:
        states = {c["Names"][0]: c["State"] for c in podman.containers(f"simlab.lab={lab.name}")}
        nodes = {}
        for hw in doc["nodes"]:
            faults = json.loads((lab.dir / "nodes" / hw["name"] / "faults.json").read_text() or "{}")
            nodes[hw["name"]] = {"container": states.get(container_name(lab.name, hw["name"]), "missing"),
                                 "bmc": f"127.0.0.1:{hw['bmc_port']}", "faults": sorted(faults)}
        return {"nodes": nodes}

    def node_exec(self, lab, node: str, *cmd: str, check: bool = True):
        return podman.run("exec", container_name(lab.name, node), *cmd, check=check)

    def reboot(self, lab, node: str) -> None:
        podman.run("restart", "-t", "5", container_name(lab.name, node))
        self.wait_nodes(lab, [node])

    def fault(self, lab, target: str, kind: str) -> str:
        from . import faults
        return faults.inject_twin(lab, target, kind)

    def node_vars(self, lab, doc: dict, hw: dict) -> dict:
        specs = hardware.nic_specs(hw)
        out = {
            "ansible_host": container_name(doc["name"], hw["name"]),
            "bmc_address": f"127.0.0.1:{hw['bmc_port']}",
            "bmc_vendor": hw["bmc_vendor"],
            "gpu_count": hw["gpus"],
            "numa_nodes": hw["numa_nodes"],
            "cpu_vendor": hw["cpu_vendor"],
            "roce_addresses": {s.netdev: s.ipv4 for s in specs if s.ipv4},
        }
        if hw.get("container_id"):
            out["ansible_simlab_container_id"] = hw["container_id"]
        if hw.get("driver") == "ofed":
            # layer 5 tells the stack a node runs; this node's is DOCA-OFED
            out["rdma_drivers_flavor"] = "doca"
        return out

    def group_vars(self, lab, doc: dict, out: Path) -> None:
        name = doc["name"]
        model = doc["nodes"][0]["nics"][0]["model"]
        dev = hardware.MODELS[model]["device"]
        nic_count = len(doc["nodes"][0]["nics"])
        dump(out / "group_vars/all/twin.yml", {
            "simlab_lab": name,
            # How the twin differs from a real rack: everything else is the same.
            "gpufabric_sysfs_root": "/run/simlab/sys",
            "gpufabric_proc_root": "/run/simlab/proc",
            "gpufabric_boot_time_command": "cut -d' ' -f22 /proc/1/stat",
            "gpufabric_reboot_timeout": 120,
            # A twin node restarts in about a second where a real one POSTs for
            # minutes: the BMC role's wait after a reset or power-on polls after
            # 1 s, not 10 (a poll that still reaches the boot read before the
            # reset polls again).
            "bmc_reset_delay": 1,
            # No Kubernetes runs in the twin: cordon, drain and uncordon go to the
            # twin's stand-in (roles/node_maintenance, backend twin), which keeps
            # the node's state and a log of operations on the node.
            "gpufabric_kube_backend": "twin",
            # Layer 10 (containerd) converges in the twin nodes; no kubeadm or
            # kubelet can run there, so site.yml leaves layers 11-14 out (make
            # render writes what they would apply) and layer 15 runs on the hosts.
            "gpufabric_kubernetes": False,
        }, name)
        dump(out / "group_vars/gpu_workers.yml", {
            # containers.podman's podman connection with pipelining (one
            # `podman exec` a task): simlab/ansible_plugins/connection
            "ansible_connection": "simlab_podman",
            "ansible_python_interpreter": "/usr/bin/python3",
            "ansible_podman_extra_args": "",
            # Layer 6: every ConnectX-7 PF gets 8 VFs; rail r is resource gpu_rail<r>.
            "gpufabric_nics": [
                {"match": {"vendor_device": f"15b3:{dev:04x}"}, "num_vfs": 8, "vf_mtu": 9000,
                 "resource_prefix": "gpu_rail"},
            ],
            "gpufabric_nics_per_node": nic_count,
            # The node image carries no rdma-core packages and has no network.
            "rdma_drivers_install_packages": False,
            # nor an lldpd unit: the node twin's lldpcli answers for it (simlab/fabric/cables.py);
            # the VM nodes run the real one, which the role starts
            "rdma_drivers_lldp": False,
        }, name)

    def offline_inventory(self, lab, doc: dict, out: Path) -> Path:
        # What 'up' assigns when it starts the BMCs and switches; port 0
        # marks endpoints that do not exist.
        for i, hw in enumerate(doc["nodes"]):
            hw["bmc_port"] = 0
            hw["bmc_vendor"] = doc["vendors"][i % len(doc["vendors"])]
        for sw in doc["switches"]:
            sw["ssh_port"] = 0
        from .inventory import write_inventory
        return write_inventory(doc, lab, out)
