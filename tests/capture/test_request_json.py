"""A captured case's `request.json` is the request that came in: `request_json` of
the incident the service read from it, read back as the message."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from hapi.v1 import service_pb2
from hapi_grpc.capture.request_json import request_json
from hapi_grpc.transport.converters import incident_from_proto

SIGNAL = {
    "signalType": "OOMKilled",
    "severity": "SEVERITY_HIGH",
    "component": "deployment",
    "alertName": "KubePodOOMKilled",
    "namespace": "payments",
    "resourceKind": "Deployment",
    "resourceName": "api",
}
EVERYTHING = {
    "remediationId": "rr-1",
    "incidentId": "inc-1",
    "signal": SIGNAL,
    "errorDetails": {
        "errorMessage": "killed",
        "description": "the container was killed",
        "firingTime": "2026-01-02T03:04:05Z",
        "receivedTime": "2026-01-02T03:04:06Z",
    },
    "deduplication": {
        "isDuplicate": True,
        "firstSeen": "2026-01-01T00:00:00Z",
        "lastSeen": "2026-01-02T00:00:00Z",
        "occurrenceCount": 4,
        "previousRemediationRef": "rr-0",
    },
    "storm": {
        "isStorm": True,
        "stormType": "rate",
        "stormWindow": "5m",
        "stormAlertCount": 12,
        "affectedResources": ["payments/Pod/api-1", "payments/Pod/api-2"],
    },
    "cluster": {
        "clusterName": "prod-eu",
        "signalSource": "prometheus",
        "signalLabels": {"team": "payments", "tier": "web"},
    },
    "business": {
        "environment": "production",
        "priority": "P1",
        "businessCategory": "revenue",
        "riskTolerance": "RISK_LEVEL_LOW",
    },
    "enrichmentResults": {
        "customLabels": {"constraint": ["cost-constrained", "no-restart"]},
        "detectedLabels": {"gitOpsManaged": "true"},
    },
    "recovery": {
        "attemptNumber": 2,
        "maxAttempts": 3,
        "previousExecutions": [
            {
                "workflow": {
                    "workflowId": "oomkill-increase-memory-v1",
                    "version": "1.0.0",
                    "parameters": {"NAMESPACE": "payments", "MEMORY_LIMIT_NEW": "1Gi"},
                },
                "rationale": "fits",
                "originalAnalysis": {
                    "summary": "memory limit too low",
                    "signalType": "OOMKilled",
                    "severity": "SEVERITY_HIGH",
                    "contributingFactors": ["traffic"],
                },
                "failure": {
                    "failedStepIndex": 1,
                    "failedStepName": "patch",
                    "reason": "Forbidden",
                    "message": "denied",
                    "exitCode": 1,
                    "failedAt": "2026-01-02T03:10:00Z",
                    "executionTime": "12.5s",
                },
                "executionRef": "wf-run-7",
                "engineSummary": "step 2 failed",
            }
        ],
    },
}
BARE = {"remediationId": "rr-2", "signal": {"signalType": "CrashLoopBackOff", "namespace": "a",
        "resourceKind": "Pod", "resourceName": "p"}}  # fmt: skip


@pytest.mark.parametrize("incident", [EVERYTHING, BARE], ids=["every field", "the least"])
def test_the_request_is_written_as_it_came_in(incident: dict[str, Any]) -> None:
    """Equal as messages: a duration may be written `12.5s` where `json_format` writes
    `12.500s`, both the same Duration."""
    message = json_format.ParseDict({"incident": incident}, service_pb2.AnalyzeIncidentRequest())
    written = request_json(incident_from_proto(message.incident))
    assert json_format.ParseDict(written, service_pb2.AnalyzeIncidentRequest()) == message
