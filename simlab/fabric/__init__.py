"""The twin rack's RDMA fabric: which node pairs can move RDMA traffic over the
cabling and the leaf switches, and at what bandwidth (see ``model``).

Standard library only: the perftest and nccl-tests twins import it inside
the node containers.
"""

from .model import (HEALTHY_RANGE, INTENT_DSCP, INTENT_PRIORITY, LOSSY_RANGE, NCCL_EFFICIENCY,
                    NVLINK_BUSBW_GBS, SOCKET_BUSBW_GBS, Endpoint, FabricError, NcclResult,
                    PathResult, Rack, active_mtu, nccl_busbw, rdma_path)

__all__ = ["HEALTHY_RANGE", "INTENT_DSCP", "INTENT_PRIORITY", "LOSSY_RANGE", "NCCL_EFFICIENCY",
           "NVLINK_BUSBW_GBS", "SOCKET_BUSBW_GBS", "Endpoint", "FabricError", "NcclResult",
           "PathResult", "Rack", "active_mtu", "nccl_busbw", "rdma_path"]
