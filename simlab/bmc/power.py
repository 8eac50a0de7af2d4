"""Power drivers: what a BMC's power and reset actions do to the node.

A driver acts on a node by its container name:

* ``state(container)`` -> ``"On"`` or ``"Off"``
* ``on(container)``, ``off(container, force)``, ``restart(container, force)``

The server applies pending BIOS settings *before* it calls ``on`` or
``restart``, so the node reads the new attributes on its next boot, as after
a real POST.

:class:`PodmanPowerDriver` drives the twin's podman containers (through
:mod:`simlab.podman`, which passes CONTAINERS_CONF); :class:`FakePowerDriver`
keeps the power state in memory, for tests and container-less labs.
"""

from __future__ import annotations

import threading


class PowerError(RuntimeError):
    """A power operation failed; the message goes into the Redfish error."""


class PodmanPowerDriver:
    name = "podman"
    # container starts and stops take seconds, and many at once take longer
    # than a Redfish client waits: the BMC answers before it acts
    answers_first = True

    def __init__(self, graceful_timeout: int = 20):
        self.graceful_timeout = graceful_timeout

    def _run(self, *args, check=True):
        from simlab import podman
        try:
            return podman.run(*args, check=check)
        except podman.PodmanError as e:
            raise PowerError(str(e)) from e
        except OSError as e:  # podman missing
            raise PowerError(f"podman: {e}") from e

    def state(self, container: str) -> str:
        proc = self._run("inspect", "--type", "container", "--format",
                         "{{.State.Running}}", container, check=False)
        if proc.returncode != 0:
            return "Off"
        return "On" if proc.stdout.strip() == "true" else "Off"

    def on(self, container: str) -> None:
        self._run("start", container)

    def off(self, container: str, force: bool) -> None:
        self._run("stop", "-t", "0" if force else str(self.graceful_timeout), container)

    def restart(self, container: str, force: bool) -> None:
        self._run("restart", "-t", "0" if force else str(self.graceful_timeout), container)


class FakePowerDriver:
    """In-memory power switch.  ``events`` lists ``(action, container)`` in
    order; ``on_boot`` (if set) is called with the container name at every
    power-on and restart, after the server applied pending settings."""

    name = "fake"
    answers_first = False

    def __init__(self, initial: str = "On", states: dict | None = None, on_boot=None):
        self.default = initial
        self.states = dict(states or {})
        self.events: list[tuple[str, str]] = []
        self.on_boot = on_boot
        self._lock = threading.Lock()

    def state(self, container: str) -> str:
        with self._lock:
            return self.states.setdefault(container, self.default)

    def on(self, container: str) -> None:
        with self._lock:
            self.events.append(("on", container))
            self.states[container] = "On"
        if self.on_boot:
            self.on_boot(container)

    def off(self, container: str, force: bool) -> None:
        with self._lock:
            self.events.append(("force-off" if force else "off", container))
            self.states[container] = "Off"

    def restart(self, container: str, force: bool) -> None:
        with self._lock:
            self.events.append(("force-restart" if force else "restart", container))
            self.states[container] = "On"
        if self.on_boot:
            self.on_boot(container)


DRIVERS = {"podman": PodmanPowerDriver, "fake": FakePowerDriver}
