"""A lab's node backend: everything that differs between a twin rack (podman
containers running the twin kernel, :mod:`simlab.containers`) and a VM rack
(QEMU machines with a real kernel, :mod:`simlab.vm.backend`).

:class:`simlab.lab.Lab` holds the backend its ``lab.json`` names and has no
branch on the kind; the fault injector, the inventory writer and the command
line ask the backend too.  What both kinds share (the Redfish BMCs, the
switch twins, the lab directory, the cabling plan, the common inventory) stays
in :mod:`simlab.lab` and :mod:`simlab.inventory`.
"""

from __future__ import annotations

from pathlib import Path


class Backend:
    """The interface; each method gets the :class:`~simlab.lab.Lab`."""

    kind = ""
    # the node faults this backend injects (simlab fault; BMC and switch faults are shared)
    node_faults: tuple = ()

    def build_image(self, force: bool = False, log=print) -> str:
        """Build this kind's node image; returns what names it."""
        raise NotImplementedError

    def plan(self, name: str, args) -> dict:
        """The lab's document (lab.json) from the command line's options."""
        raise NotImplementedError

    def up(self, lab, doc: dict, inventory: Path | None, log=print) -> dict:
        raise NotImplementedError

    def stop_nodes(self, lab) -> None:
        """Stop the nodes (the lab directory and the shared services go after)."""
        raise NotImplementedError

    def status(self, lab, doc: dict) -> dict:
        raise NotImplementedError

    def node_exec(self, lab, node: str, *cmd: str, check: bool = True):
        raise NotImplementedError

    def reboot(self, lab, node: str) -> None:
        raise NotImplementedError

    def fault(self, lab, target: str, kind: str) -> str:
        raise NotImplementedError

    def node_vars(self, lab, doc: dict, hw: dict) -> dict:
        """The inventory host variables of one node."""
        raise NotImplementedError

    def group_vars(self, lab, doc: dict, out: Path) -> None:
        """The inventory group variables only this kind has."""
        raise NotImplementedError

    def offline_inventory(self, lab, doc: dict, out: Path) -> Path:
        """``simlab inventory``: the inventory of a lab that is not up."""
        raise ValueError(f"--kind {self.kind}: 'inventory' needs the ports of a running lab; use 'up'")


KINDS = ("twin", "vm")


def of(kind: str) -> Backend:
    """The backend of a lab kind (``twin`` or ``vm``)."""
    from . import containers
    from .vm import backend as vm_backend
    backends = {b.kind: b for b in (containers.ContainerBackend(), vm_backend.VmBackend())}
    if kind not in backends:
        raise ValueError(f"unknown lab kind {kind!r}; known: {', '.join(sorted(backends))}")
    return backends[kind]
