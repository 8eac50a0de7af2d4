"""A twin lab of its own for the host bring-up tests (layers 1-6): brought up
with ``python -m simlab up``, converged with playbooks/site.yml (tags
layer01-layer06: the switch and the layers above are not set up), checked with
playbooks/validate.yml writing its report to the lab's own directory (not the
repository's reports/, which other runs share). Only layers 1-6 of the report
are asserted."""

import json
import re

import yaml

from tests.integration.twinlab import Twin, recap
from simlab.lab import node_names

SYSFS = "/run/simlab/sys"
LAYERS = range(1, 7)
LAYER_TAGS = ",".join(f"layer{n:02d}" for n in LAYERS)


class HostLab(Twin):
    """Twin plus the calls the host layer tests repeat."""

    def __init__(self, name, inventory, nodes=()):
        super().__init__(name, inventory)
        self.nodes = list(nodes)

    @classmethod
    def up(cls, tmp_path_factory, prefix, nodes=2, preset="ready"):
        return super().up(tmp_path_factory, prefix, "--nodes", str(nodes), "--switches", "1", "--preset", preset,
                          nodes=node_names(nodes))

    def site(self, *args):
        """playbooks/site.yml on the GPU nodes, layers 1-6 unless args name
        other tags; returns (proc, recap)."""
        tags = () if "--tags" in args else ("--tags", LAYER_TAGS)
        proc = self.playbook("playbooks/site.yml", "--limit", "gpu_workers", *tags, *args)
        return proc, recap(proc.stdout)

    def validate(self, *args):
        """playbooks/validate.yml on the GPU nodes; returns {node: {layer: row}} and the verdicts."""
        proc = self.playbook("playbooks/validate.yml", "--limit", "gpu_workers", *args)
        if proc.returncode:
            raise AssertionError(f"validate.yml failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
        report = json.loads((self.reports / "report.json").read_text())
        return {node: {row["layer"]: row for row in r["layers"]} for node, r in report.items()}, \
            {node: r["verdict"] for node, r in report.items()}

    def boot_time(self, node):
        """PID 1's start time: changes exactly when the node reboots."""
        return self.sh(node, "cut -d' ' -f22 /proc/1/stat").stdout.strip()

    def host(self, node):
        """The node's variables in the generated inventory."""
        doc = yaml.safe_load((self.inventory / "hosts.yml").read_text())
        pools = doc["all"]["children"]["gpu_workers"]["children"].values()
        return next(p["hosts"][node] for p in pools if node in (p.get("hosts") or {}))

    def host_vars(self, node, text):
        path = self.inventory / "host_vars" / f"{node}.yml"
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)


def green(layers):
    """Layer rows 1-6 that do not pass, as {layer: (status, reason)}."""
    return {n: (layers[n]["status"], layers[n]["reason"]) for n in LAYERS if layers[n]["status"] != "pass"}


def ran_through_layer6(stdout, node):
    """True when the node reached the last task of layer 6 in a site.yml run."""
    m = re.search(r"TASK \[gpufabric\.stack\.sriov_vfs : Install the VF boot script and its systemd unit[^\n]*\n((?:(?!TASK).*\n)*)", stdout)
    return bool(m) and re.search(rf"^(ok|changed|skipping): \[{node}\]", m.group(1), re.M) is not None
