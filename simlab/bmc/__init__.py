"""The twin's BMCs: one Redfish (HTTPS) endpoint per node on 127.0.0.1.

* :mod:`simlab.bmc.server` -- the Redfish resources and the per-node listeners
  (``python -m simlab.bmc serve --state-dir DIR --spec SPEC.json``).
* :mod:`simlab.bmc.vendors` -- vendor BIOS attribute catalogues (Dell, HPE,
  Supermicro) and :func:`~simlab.bmc.vendors.effective`, which the node calls
  at boot to know whether SR-IOV, the IOMMU and ACS are on.
* :mod:`simlab.bmc.state` -- ``<state_dir>/nodes/<name>/bios.json``
  (current and pending attributes, boot order, inventory) and
  :func:`~simlab.bmc.state.load_bios`.
* :mod:`simlab.bmc.power` -- power drivers (podman, fake).
* :mod:`simlab.bmc.faults` -- ``bmc-unreachable``, ``bios-sriov-off``,
  ``bios-vtd-off``.

``vendors`` and ``state`` use the standard library only; they also run inside
the node containers.
"""
