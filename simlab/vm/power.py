"""The BMC power driver of VM nodes: Redfish resets reach QEMU.

``On`` starts the node's QEMU process, ``ForceOff`` ends it (QMP ``quit``:
the plug pulled), ``GracefulShutdown`` presses the ACPI power button
(``system_powerdown``) and waits for the guest to power off.  Restarts are a
power-off and a power-on, so the machine comes up with what the BIOS now
says: the BMC server makes pending BIOS settings current before it calls
:meth:`QemuPowerDriver.on` or :meth:`~QemuPowerDriver.restart` (POST), and
whether VT-d is enabled decides whether the new machine has the IOMMU.

A reboot from inside the guest is a reset of the same QEMU process, as a
warm reboot keeps the board's configuration; BIOS changes wait for a BMC
reset, which is how the collection's bios role applies them.
"""

from __future__ import annotations

import json
from pathlib import Path

from simlab.bmc.power import PowerError

from . import machine
from .qmp import QmpError


class QemuPowerDriver:
    name = "qemu"
    # a cold boot under TCG takes about a minute: answer first, as a BMC does
    answers_first = True

    def __init__(self, lab_dir: Path | str, graceful_timeout: int = 60):
        self.lab_dir = Path(lab_dir)
        self.graceful_timeout = graceful_timeout

    def _hw(self, target: str) -> dict:
        """The node a BMC drives, by its name or its lab-wide name
        (``simlab-<lab>-<node>``, what the BMC spec calls the container)."""
        doc = json.loads((self.lab_dir / "lab.json").read_text())
        for hw in doc["nodes"]:
            if target in (hw["name"], f"simlab-{doc['name']}-{hw['name']}"):
                return hw
        raise PowerError(f"no VM node {target!r} in {self.lab_dir / 'lab.json'}")

    def iommu_enabled(self, node: str) -> bool:
        """VT-d as the BIOS has it now (current attributes, after POST)."""
        from simlab.bmc import state, vendors
        bios = state.load_bios(state.bios_path(self.lab_dir, node))
        return bool(vendors.effective(bios["vendor"], bios.get("current", {})).get("iommu"))

    def state(self, target: str) -> str:
        return machine.state(self.lab_dir, self._hw(target)["name"])

    def on(self, target: str) -> None:
        lab_name = json.loads((self.lab_dir / "lab.json").read_text())["name"]
        hw = self._hw(target)
        try:
            machine.start(lab_name, self.lab_dir, hw, iommu=self.iommu_enabled(hw["name"]))
        except (RuntimeError, OSError) as e:
            raise PowerError(str(e)) from e

    def off(self, target: str, force: bool) -> None:
        try:
            machine.stop(self.lab_dir, self._hw(target)["name"], force=force, timeout=self.graceful_timeout)
        except QmpError as e:
            raise PowerError(str(e)) from e

    def restart(self, node: str, force: bool) -> None:
        self.off(node, force)
        self.on(node)
