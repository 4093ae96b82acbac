"""The incident under investigation: observable facts only (ADR-038).

The transport layer builds an `Incident` from the request; the engine turns
its sections into the prompt (`prompt.py`) and its search context into
auto-appended search filters. Empty strings / None mean "not reported".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hapi_grpc.domain.levels import RiskLevel, Severity
from hapi_grpc.domain.recovery import RecoveryContext


@dataclass(frozen=True, slots=True)
class SignalInfo:
    signal_type: str
    severity: Severity | None = None
    component: str = ""
    alert_name: str = ""
    namespace: str = ""
    resource_kind: str = ""
    resource_name: str = ""


@dataclass(frozen=True, slots=True)
class ErrorDetails:
    error_message: str = ""
    description: str = ""
    firing_time: datetime | None = None
    received_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class DeduplicationContext:
    is_duplicate: bool = False
    first_seen: datetime | None = None
    last_seen: datetime | None = None
    occurrence_count: int = 0
    previous_remediation_ref: str = ""


@dataclass(frozen=True, slots=True)
class StormDetection:
    is_storm: bool = False
    storm_type: str = ""
    storm_window: str = ""
    storm_alert_count: int = 0
    affected_resources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterContext:
    cluster_name: str = ""
    signal_source: str = ""
    signal_labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BusinessContext:
    """For workflow matching only; never used for the root cause analysis."""

    environment: str = ""
    priority: str = ""
    business_category: str = ""
    risk_tolerance: RiskLevel | None = None


@dataclass(frozen=True, slots=True)
class EnrichmentResults:
    """DD-HAPI-001: appended to every catalog search, never shown to the LLM."""

    custom_labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    detected_labels: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Incident:
    remediation_id: str
    signal: SignalInfo
    incident_id: str = ""
    error_details: ErrorDetails = field(default_factory=ErrorDetails)
    deduplication: DeduplicationContext = field(default_factory=DeduplicationContext)
    storm: StormDetection = field(default_factory=StormDetection)
    cluster: ClusterContext = field(default_factory=ClusterContext)
    business: BusinessContext = field(default_factory=BusinessContext)
    enrichment: EnrichmentResults = field(default_factory=EnrichmentResults)
    # Set when an earlier remediation failed (a recovery attempt); None otherwise.
    recovery: RecoveryContext | None = None
