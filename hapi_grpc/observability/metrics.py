"""Every Prometheus metric the service exports, in one place.

Label values come from closed sets only (status words, enum names, method
names, provider names), never from ids or free text, so the number of series
stays bounded whatever the traffic. `hapi_grpc.observability.metrics_server`
serves them on HAPI_METRICS_PORT at /metrics.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_FAST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5)

registry: CollectorRegistry = REGISTRY

# --- Seed BR-HAPI-049: tool-call metrics, by their historical names ---------
TOOL_CALLS = Counter(
    "holmesgpt_playbook_tool_call_total",
    "Tool calls made by investigations, by tool and outcome.",
    ["tool", "status"],
)
TOOL_CALL_DURATION = Histogram(
    "holmesgpt_playbook_tool_call_duration_seconds",
    "Tool call latency.",
    ["tool"],
    buckets=_FAST_BUCKETS,
)
TOOL_CALL_ERRORS = Counter(
    "holmesgpt_playbook_tool_call_errors_total",
    "Tool calls that did not succeed (invalid arguments, unknown tool, errors, timeouts, limits).",
    ["tool"],
)
TOOL_CALL_RATE = Gauge(
    "holmesgpt_playbook_tool_call_rate",
    "Share of finished investigations (0-1) that called the catalog search tool.",
)
TOOL_CALL_CACHE_HIT_RATE = Gauge(
    "holmesgpt_playbook_tool_call_cache_hit_rate",
    "Share of catalog lookups (0-1) answered from the cache.",
)

# --- Tool calls by toolset -----------------------------------------------------
# toolset: the name of a registered toolset (`toolsets/registry.py`), or
# `<name>:<instance>` for one with instances (MCP: `mcp:<server>`, servers from the
# configuration file), or "none" for an unknown tool. tool: our own tool names,
# allow-listed MCP tool names, "other" for any other MCP tool, "unknown".
TOOLSET_ENABLED = Gauge(
    "hapi_toolset_enabled",
    "1 when the toolset is offered to investigations (configured and opened), else 0.",
    ["toolset"],
)
TOOLSET_CALLS = Counter(
    "hapi_toolset_calls_total",
    "Tool calls by toolset, tool and outcome.",
    ["toolset", "tool", "status"],
)
TOOLSET_CALL_ERRORS = Counter(
    "hapi_toolset_call_errors_total",
    "Tool calls that did not succeed, by toolset and tool.",
    ["toolset", "tool"],
)
TOOLSET_CALL_DURATION = Histogram(
    "hapi_toolset_call_duration_seconds",
    "Tool call latency by toolset and tool.",
    ["toolset", "tool"],
    buckets=_LATENCY_BUCKETS,
)

# --- Investigations ---------------------------------------------------------
INVESTIGATIONS = Counter(
    "hapi_investigations_total",
    "Finished investigations by outcome (selected, human_review, cancelled, error) and reason.",
    ["outcome", "review_reason"],
)
INVESTIGATION_DURATION = Histogram(
    "hapi_investigation_duration_seconds",
    "Wall-clock duration of investigations.",
    buckets=_LATENCY_BUCKETS,
)
INVESTIGATIONS_USING_CATALOG = Counter(
    "hapi_investigations_catalog_searched_total",
    "Finished investigations that called search_workflow_catalog at least once.",
)
ANALYSES_REUSED = Counter(
    "hapi_analyses_reused_total",
    "Analyze calls answered without an investigation of their own, by kind: joined (one in"
    " flight on this replica), awaited (another replica's), stored (a kept result).",
    ["kind"],
)

# --- LLM ------------------------------------------------------------------
LLM_REQUESTS = Counter(
    "hapi_llm_requests_total",
    "LLM completion requests by provider, model and status.",
    ["provider", "model", "status"],
)
LLM_LATENCY = Histogram(
    "hapi_llm_request_duration_seconds",
    "LLM completion latency (one HTTP request, retries counted separately).",
    ["provider", "model"],
    buckets=_LATENCY_BUCKETS,
)
LLM_TOKENS = Counter(
    "hapi_llm_tokens_total",
    "Tokens spent, by provider, model and kind (prompt, completion).",
    ["provider", "model", "kind"],
)

# --- Catalog from the cluster (HAPI_CATALOG_SOURCE=kubernetes) ----------------
# resource: remediationworkflows or actiontypes.
KUBE_CATALOG_CONNECTED = Gauge(
    "hapi_catalog_kubernetes_connected",
    "1 while the API server answers the list and watch of the resource; 0 while the"
    " catalog last read is served without it.",
    ["resource"],
)
KUBE_CATALOG_WORKFLOWS = Gauge(
    "hapi_catalog_kubernetes_workflows",
    "RemediationWorkflow resources read, by state: offered, inactive (not Active, or its"
    " action type is not), invalid (refused when read), duplicate (id in two namespaces).",
    ["state"],
)
KUBE_CATALOG_LISTS = Counter(
    "hapi_catalog_kubernetes_lists_total",
    "Full lists of a resource, by reason: start, expired (410 Gone), too_large (an event"
    " beyond the size bound).",
    ["resource", "reason"],
)

# --- Data Storage -----------------------------------------------------------
DATASTORAGE_REQUESTS = Counter(
    "hapi_datastorage_requests_total",
    "Data Storage HTTP requests by endpoint (search, schema, workflow, history, effectiveness)"
    " and status "
    "(HTTP status class like 2xx/4xx/5xx, or timeout, connection_error, contract_error).",
    ["endpoint", "status"],
)
DATASTORAGE_LATENCY = Histogram(
    "hapi_datastorage_request_duration_seconds",
    "Data Storage HTTP request latency.",
    ["endpoint"],
    buckets=_FAST_BUCKETS,
)
DATASTORAGE_RETRIES = Counter(
    "hapi_datastorage_retries_total",
    "Data Storage request retries by endpoint.",
    ["endpoint"],
)
CIRCUIT_BREAKER_STATE = Gauge(
    "hapi_datastorage_circuit_breaker_state",
    "Circuit breaker state: 0 closed, 1 half-open, 2 open.",
    ["breaker"],
)
CIRCUIT_BREAKER_TRANSITIONS = Counter(
    "hapi_datastorage_circuit_breaker_transitions_total",
    "Circuit breaker state changes, by new state.",
    ["breaker", "state"],
)

# --- Cache ------------------------------------------------------------------
CACHE_LOOKUPS = Counter(
    "hapi_cache_lookups_total",
    "Cache lookups by kind (search, schema, workflow) and result (hit, miss, error).",
    ["kind", "result"],
)

# --- Parameter validation -----------------------------------------------------
VALIDATION_ATTEMPTS = Counter(
    "hapi_validation_attempts_total",
    "Parameter validation attempts by source (tool, final_answer, rpc) and result.",
    ["source", "result"],
)

# --- Reported outcomes ----------------------------------------------------------
# workflow: a catalog workflow id, among the first OUTCOME_WORKFLOW_LABELS seen
# (then "other"); "none" when a human declined. result: succeeded, failed, declined.
REMEDIATION_OUTCOMES = Counter(
    "hapi_remediation_outcomes_total",
    "Remediation outcomes reported with ReportRemediationOutcome, by workflow and result.",
    ["workflow", "result"],
)
# confidence: the automated decision's confidence bucket (CONFIDENCE_BUCKETS);
# result: succeeded or failed. Success rate per bucket = calibration of the decider.
DECISION_CALIBRATION = Counter(
    "hapi_decision_calibration_total",
    "Executed outcomes of automated decisions, by the decision's confidence bucket and result.",
    ["confidence", "result"],
)

# --- Operator policy --------------------------------------------------------------
# rule: a rule's name in HAPI_POLICY_FILE (at most MAX_RULES of them); action:
# forbid, require_review or rate_limit.
POLICY_RULES_FIRED = Counter(
    "hapi_policy_rules_fired_total",
    "Decisions an operator policy rule changed (forbidden, sent to review, rate-limited),"
    " by rule and action.",
    ["rule", "action"],
)

# --- gRPC server --------------------------------------------------------------
GRPC_HANDLED = Counter(
    "hapi_grpc_server_handled_total",
    "RPCs completed by method and status code.",
    ["method", "code"],
)
GRPC_LATENCY = Histogram(
    "hapi_grpc_server_handling_seconds",
    "RPC handling latency by method.",
    ["method"],
    buckets=_LATENCY_BUCKETS,
)
GRPC_IN_FLIGHT = Gauge(
    "hapi_grpc_server_in_flight",
    "RPCs being handled now, by method.",
    ["method"],
)

# --- Capture of investigations as evaluation cases (HAPI_CAPTURE_DIR) -------
CAPTURED_CASES = Counter(
    "hapi_captured_cases_total",
    "Investigations captured as evaluation cases, by result: written, dropped (the"
    " writer's queue, or the captures waiting for the catalog, were full), too_large (over"
    " HAPI_CAPTURE_MAX_CASE_BYTES or HAPI_CAPTURE_MAX_BYTES), evicted"
    " (removed to keep HAPI_CAPTURE_MAX_BYTES), outcome (a reported outcome recorded),"
    " failed (a write that failed).",
    ["result"],
)

# Closed label sets the code uses; kept here so tests can check them.
KNOWN_GRPC_METHODS = frozenset(
    {
        "AnalyzeIncident",
        "AnalyzeIncidentStream",
        "ValidateWorkflowParameters",
        "ReportRemediationOutcome",
        "other",
    }
)


def grpc_method_label(full_method: str) -> str:
    """Short method name for a full gRPC method path; 'other' for anything unknown."""
    name = full_method.rsplit("/", 1)[-1]
    return name if name in KNOWN_GRPC_METHODS else "other"


def _tool_call_rate() -> float:
    total = _sum(INVESTIGATIONS)
    return _sum(INVESTIGATIONS_USING_CATALOG) / total if total else 0.0


def _cache_hit_rate() -> float:
    hits = _sum(CACHE_LOOKUPS, result="hit")
    lookups = hits + _sum(CACHE_LOOKUPS, result="miss")
    return hits / lookups if lookups else 0.0


# The rates are computed from their counters when collected (a scrape, a
# test's read), not on every investigation or lookup: walking every counter
# series cost more than the event it counted.
TOOL_CALL_RATE.set_function(_tool_call_rate)
TOOL_CALL_CACHE_HIT_RATE.set_function(_cache_hit_rate)


def _sum(metric: Counter, **match: str) -> float:
    total = 0.0
    for family in metric.collect():
        for sample in family.samples:
            if not sample.name.endswith("_total"):
                continue
            if all(sample.labels.get(k) == v for k, v in match.items()):
                total += sample.value
    return total
