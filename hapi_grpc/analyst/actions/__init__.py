"""Per action type, the reads its premises need and the parameter values the evidence gives.

`evidence_for(action_type)` is the module that knows one type (see `base`); a type
the analyst has no module for gets none, and a state-changing workflow of that type
is not proposed: what the analyst cannot read evidence for, it does not select.
"""

from __future__ import annotations

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values
from hapi_grpc.analyst.actions.cpu import IncreaseCPU
from hapi_grpc.analyst.actions.memory import IncreaseMemory
from hapi_grpc.analyst.actions.nodes import CleanupNode, DrainNode, RestartNode
from hapi_grpc.analyst.actions.objects import Certificate, PullSecret, RevertConfiguration
from hapi_grpc.analyst.actions.probes import TuneProbes
from hapi_grpc.analyst.actions.restarts import NoTarget, RecreatePod, RestartPod, RestartWorkload
from hapi_grpc.analyst.actions.rollback import Rollback
from hapi_grpc.analyst.actions.scaling import PatchAutoscaler, ScaleOut
from hapi_grpc.analyst.actions.storage import ExpandClaim

__all__ = ["Evidence", "Objection", "Situation", "Values", "evidence_for"]

_DRAIN = DrainNode()
_RESTART_NODE = RestartNode()
_RESTART_POD = RestartPod()
_RESTART_WORKLOAD = RestartWorkload()
_CERTIFICATE = Certificate()
_NOTHING = NoTarget()

_BY_TYPE: dict[str, Evidence] = {
    "IncreaseMemoryLimits": IncreaseMemory(),
    "IncreaseCPULimits": IncreaseCPU(),
    "RollbackDeployment": Rollback(),
    "ScaleReplicas": ScaleOut(),
    "PatchHPA": PatchAutoscaler(),
    "ExpandPVC": ExpandClaim(),
    "DrainNode": _DRAIN,
    "CordonDrainNode": _DRAIN,
    "CordonNode": _DRAIN,
    "RebootNode": _RESTART_NODE,
    "RestartKubelet": _RESTART_NODE,
    "CleanupNode": CleanupNode(),
    "RestartPod": _RESTART_POD,
    "DeletePod": _RESTART_POD,
    "RecreatePod": RecreatePod(),
    "RestartDeployment": _RESTART_WORKLOAD,
    "GracefulRestart": _RESTART_WORKLOAD,
    "CleanupEvictedPods": _NOTHING,
    # More nodes for Pods no node has room for: the scheduler's verdict on the Pending
    # Pod (its events, read with it) is the evidence; nothing in it is a parameter.
    "ProvisionNode": _NOTHING,
    "CollectDiagnostics": _NOTHING,
    "RevertConfiguration": RevertConfiguration(),
    "RepairPullSecret": PullSecret(),
    "FixCertificate": _CERTIFICATE,
    "RenewCertificate": _CERTIFICATE,
    "FixCertificateGitOps": _CERTIFICATE,
    "TuneProbes": TuneProbes(),
}


def evidence_for(action_type: str) -> Evidence | None:
    """The module for `action_type`; None for a type the analyst knows nothing of."""
    return _BY_TYPE.get(action_type)
