"""The twin rack's RDMA fabric: which node pairs can move RDMA traffic over the
cabling and the leaf switches, and at what bandwidth (see ``model``).

Standard library only: the perftest and nccl-tests twins import it inside
the node containers. The model loads on first use of a name below, so the
node twins' lldpcli, which needs the cables only, does not pay for it at
every call.
"""

__all__ = ["HEALTHY_RANGE", "INTENT_DSCP", "INTENT_PRIORITY", "LOSSY_RANGE", "NCCL_EFFICIENCY",
           "NVLINK_BUSBW_GBS", "SOCKET_BUSBW_GBS", "Endpoint", "FabricError", "NcclResult",
           "PathResult", "Rack", "active_mtu", "nccl_busbw", "rdma_path"]


def __getattr__(name):
    if name in __all__:
        from . import model
        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
