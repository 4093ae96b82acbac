"""Which role a workflow parameter plays: the one it declares, else the one its name says.

Names are those workflows of this ecosystem use (`TARGET_RESOURCE_NAME`,
`MEMORY_LIMIT_NEW`, `MEMORY_INCREASE_PERCENT`, `REVISION`, `NODE_NAME`, ...). A name
not listed binds no role: the analyst then has no value for it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["role_of"]

_BY_NAME: dict[str, str] = {
    **dict.fromkeys(
        ("NAMESPACE", "TARGET_NAMESPACE", "TARGET_RESOURCE_NAMESPACE", "RESOURCE_NAMESPACE"),
        "namespace",
    ),
    **dict.fromkeys(
        ("TARGET_RESOURCE_NAME", "TARGET_RESOURCE", "RESOURCE_NAME", "TARGET_NAME"), "target_name"
    ),
    **dict.fromkeys(("TARGET_RESOURCE_KIND", "RESOURCE_KIND", "TARGET_KIND"), "target_kind"),
    **dict.fromkeys(
        (
            "DEPLOYMENT_NAME",
            "TARGET_DEPLOYMENT",
            "STATEFULSET_NAME",
            "DAEMONSET_NAME",
            "WORKLOAD_NAME",
        ),
        "workload",
    ),
    "CONTAINER_NAME": "container",
    "POD_NAME": "pod",
    "NODE_NAME": "node",
    **dict.fromkeys(("MEMORY_LIMIT_NEW", "MEMORY_LIMIT", "NEW_MEMORY_LIMIT"), "memory_limit"),
    "MEMORY_INCREASE_PERCENT": "memory_increase_percent",
    **dict.fromkeys(("CPU_LIMIT_CORES", "CPU_LIMIT_NEW", "NEW_CPU_LIMIT"), "cpu_limit"),
    **dict.fromkeys(("REPLICA_COUNT", "REPLICAS", "TARGET_REPLICAS"), "replicas"),
    "MAX_REPLICAS": "max_replicas",
    **dict.fromkeys(("REVISION", "TARGET_REVISION", "ROLLBACK_REVISION"), "revision"),
    **dict.fromkeys(("NEW_SIZE", "STORAGE_SIZE", "PVC_SIZE"), "size"),
    "PVC_NAME": "claim",
    "HPA_NAME": "hpa",
    "PULL_SECRET_NAME": "pull_secret",
    "CONFIGMAP_NAME": "configmap",
    "CA_SECRET_NAME": "ca_secret",
    "CERTIFICATE_NAME": "certificate",
    "INITIAL_DELAY_SECONDS": "initial_delay_seconds",
    "RESTART_POLICY": "restart_policy",
}


def role_of(spec: dict[str, Any]) -> str:
    """The parameter's role ("" when it binds none)."""
    declared = spec.get("role")
    if isinstance(declared, str) and declared:
        return declared
    return _BY_NAME.get(str(spec.get("name", "")), "")
