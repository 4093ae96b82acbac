"""Each kind of fact the observed record keeps, typed once.

Design notes: docs/internals.md (`domain/observed/facts.py`).
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "AccessPolicyFacts",
    "AcmeFacts",
    "AlertFacts",
    "AutoscalerFacts",
    "CertificateFacts",
    "ClaimFacts",
    "ConditionFacts",
    "ConfigRef",
    "ContainerFacts",
    "DisruptionBudgetFacts",
    "EventFacts",
    "IssuerFacts",
    "LeaseFacts",
    "LimitRangeFacts",
    "LogFacts",
    "MetricFacts",
    "NetworkPolicyFacts",
    "NodeFacts",
    "NodeStatsFacts",
    "ObjectFacts",
    "ObservedView",
    "PodFacts",
    "PodView",
    "ProbeTiming",
    "QuotaFacts",
    "Ref",
    "Replicas",
    "Rollout",
    "ScalingMetric",
    "SeriesFacts",
    "SeriesSubject",
    "StorageClassFacts",
    "Taint",
    "Termination",
    "VolumeUse",
    "WorkloadFacts",
]


class Ref(TypedDict):
    kind: str
    name: str


class ConditionFacts(TypedDict):
    type: str
    status: str
    reason: str
    message: str
    changed_at: float  # its last transition
    updated_at: float  # its last update (lastUpdateTime), else its last transition


class ObjectFacts(TypedDict):
    """What every object has; each kind below adds its own."""

    kind: str
    namespace: str
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    owners: list[Ref]
    owner_chain: list[str]  # `namespace/group/Kind/name` up from it, when the tool ran
    deleting: bool
    conditions: list[ConditionFacts]
    gitops: bool  # Argo CD or Flux reconciles it
    helm_release: str


class ProbeTiming(TypedDict):
    initial_delay_seconds: int
    period_seconds: int
    failure_threshold: int
    timeout_seconds: int


class Termination(TypedDict):
    reason: str
    exit_code: int  # -1 when none
    message: str
    started: str
    finished: str
    ran_seconds: float  # how long that instance ran; -1 when unknown


class ContainerFacts(TypedDict):
    name: str
    image: str
    limits: dict[str, str]
    requests: dict[str, str]
    probes: list[str]
    probe_timing: dict[str, ProbeTiming]
    ready: bool
    restarts: int
    state: str
    state_reason: str
    state_message: str
    last_termination: Termination


class ConfigRef(TypedDict):
    kind: str  # ConfigMap or Secret
    name: str
    optional: bool
    via: str  # volume, envFrom or env


class PodFacts(ObjectFacts):
    deleting_seconds: float
    grace_period_seconds: int
    controller: Ref
    phase: str
    reason: str
    node: str
    containers: list[ContainerFacts]
    init_containers: list[ContainerFacts]
    config_refs: list[ConfigRef]
    service_account: str  # spec.serviceAccountName; "default" when the spec names none


class PodView(PodFacts):
    """A Pod in `observed.pods`: with the workload that manages it."""

    workload: Ref


class Taint(TypedDict):
    key: str
    value: str
    effect: str
    automatic: bool  # set by the node lifecycle controller or the kubelet


class NodeFacts(ObjectFacts):
    unschedulable: bool
    taints: list[Taint]
    pressure: list[str]
    ready: str


class Replicas(TypedDict):
    desired: int
    ready: int
    available: int


class Rollout(TypedDict):
    under_way: bool  # the latest template is not yet on every replica
    completed_at: float  # when the last rollout completed (a Deployment's); 0 unknown


class WorkloadFacts(ObjectFacts):
    """Deployment, StatefulSet, DaemonSet, ReplicaSet."""

    replicas: Replicas
    paused: bool
    selector: dict[str, str]
    template_containers: list[ContainerFacts]
    config_refs: list[ConfigRef]
    revision: int
    template_hash: str
    claim_templates: list[str]
    rollout: Rollout
    claims: list[str]  # a StatefulSet's: <template>-<name>-<ordinal> below its replicas


class ScalingMetric(TypedDict):
    """One metric an autoscaler scales on, its target and its current value."""

    type: str  # Resource, ContainerResource, Pods, Object, External
    name: str  # cpu, memory, or the metric's name
    target_utilization: int  # percent of the Pods' requests; -1 when not a utilization
    current_utilization: int  # -1 when not reported
    target_average: str  # a quantity per Pod; "" when none
    current_average: str


class AutoscalerFacts(ObjectFacts):
    min_replicas: int
    max_replicas: int
    current_replicas: int
    target: Ref
    metrics: list[ScalingMetric]


class ClaimFacts(ObjectFacts):
    phase: str
    storage_request: str
    capacity: str
    storage_class: str
    allocated_storage: str  # status.allocatedResources: what a resize was granted; "" none
    resize_status: str  # status.allocatedResourceStatuses: a resize under way; "" none


class LeaseFacts(ObjectFacts):
    holder: str
    renewed_at: float
    duration_seconds: int


class DisruptionBudgetFacts(ObjectFacts):
    selector: dict[str, str]
    selector_expressions: bool
    disruptions_allowed: int
    current_healthy: int
    desired_healthy: int
    expected_pods: int


class LimitRangeFacts(ObjectFacts):
    container_max: dict[str, str]


class QuotaFacts(ObjectFacts):
    hard: dict[str, str]
    used: dict[str, str]


class StorageClassFacts(ObjectFacts):
    allow_expansion: bool
    provisioner: str


class NetworkPolicyFacts(ObjectFacts):
    selector: dict[str, str]
    selector_expressions: bool
    policy_types: list[str]
    ingress_rules: int
    egress_rules: int


class AccessPolicyFacts(ObjectFacts):
    """An Istio AuthorizationPolicy."""

    selector: dict[str, str]
    action: str
    rules: int


class IssuerFacts(ObjectFacts):
    """A cert-manager Issuer or ClusterIssuer."""

    ca_secret: str
    acme: bool  # issues through an ACME server (spec.acme): challenges, and their limits


class CertificateFacts(ObjectFacts):
    secret_name: str
    issuer: Ref
    failed_issuance_attempts: int  # cert-manager's count of failed issuances in a row
    last_failure_at: float  # epoch seconds of the last; 0.0 when none


class AcmeFacts(ObjectFacts):
    """A cert-manager ACME Order or Challenge: one attempt to prove a domain."""

    acme_state: str  # pending, ready, valid, invalid, errored, ...
    acme_reason: str  # why it is in that state (a failing self-check says so)
    presented: bool  # a Challenge's solver was presented
    issuer: Ref


class EventFacts(TypedDict):
    kind: str  # of the object it is about
    namespace: str
    name: str
    type: str
    reason: str
    message: str  # whole, up to the API's own 1024 characters
    count: int
    first_at: float  # when it was first seen (folded: the earliest); 0 unknown
    last_at: float  # when it was last seen; 0 unknown


class LogFacts(TypedDict):
    namespace: str
    pod: str
    container: str
    previous: bool
    lines_read: int
    config_errors: list[str]  # lines that blame the configuration
    last_line: str
    startup_seconds: float  # the longest start-up time a line states; 0 when none


class SeriesSubject(TypedDict):
    """What a series is about: from its labels and the metric names its query reads."""

    metric: str
    resource: str  # memory, cpu or ""
    counter: bool  # a cumulative counter read raw
    namespace: str
    pod: str
    container: str


class SeriesFacts(SeriesSubject):
    labels: dict[str, str]
    min: float | None
    max: float | None
    last: float | None
    trend: str  # rising, falling, flat
    slope_per_minute: float | None


class MetricFacts(TypedDict):
    query: str
    series: list[SeriesFacts]


class AlertFacts(TypedDict):
    alertname: str
    severity: str
    labels: dict[str, str]


class VolumeUse(TypedDict):
    namespace: str
    pod: str
    volume: str
    used_bytes: int


class NodeStatsFacts(TypedDict):
    node: str
    fs_used_bytes: int
    fs_capacity_bytes: int
    fs_available_bytes: int
    image_fs_used_bytes: int
    image_fs_shared: bool
    images_in_use_bytes: int  # of the Node's images a Pod on it uses; -1 unknown
    logs_bytes: int
    rootfs_bytes: int
    volumes_bytes: int
    unattributed_bytes: int  # used, but in no pod's stats: hostPath data, host files
    reclaimable_bytes: int  # logs, and images no Pod uses when on the node filesystem
    workload_bytes: int  # node-local volumes and writable layers
    largest_volumes: list[VolumeUse]


class ObservedView(TypedDict):
    """CEL's `observed`: the record, with views of its objects by kind."""

    evidence: bool
    objects: list[ObjectFacts]
    other_objects: list[ObjectFacts]
    pods: list[PodView]
    nodes: list[ObjectFacts]
    workloads: list[ObjectFacts]
    events: list[EventFacts]
    logs: list[LogFacts]
    metrics: list[MetricFacts]
    alerts: list[AlertFacts]
    node_stats: list[NodeStatsFacts]
