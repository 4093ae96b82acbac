"""One sentence or more per service setting, keyed by `ServiceSettings` field name
(a toolset's settings are described in its settings model, `Field(description=...)`).

The configuration reference (docs/configuration.md) is rendered from these
texts and the fields' defaults by `hapi_grpc.config_reference`; a test fails when
a field has no text here or the committed reference is stale.
"""

DESCRIPTIONS: dict[str, str] = {
    "grpc_host": "Bind address of the gRPC server (`--host`).",
    "grpc_port": "gRPC port (`--port`).",
    "max_concurrent_rpcs": (
        "Concurrent `hapi.v1` calls before `RESOURCE_EXHAUSTED` (health is never capped). "
        "Sized by memory: an investigation waits on the model (3–5 ms of CPU each) and holds "
        "~63 kB; 1,000 at once peak at 147–149 MB RSS (85 MB idle), so 2,000 stay well under "
        "half of the 512 Mi container limit."
    ),
    "shutdown_grace_seconds": (
        "On SIGTERM, time in-flight calls get to finish (`--shutdown-grace`)."
    ),
    "shutdown_delay_seconds": (
        "On SIGTERM, time between health `NOT_SERVING` and refusing new calls."
    ),
    "max_receive_message_bytes": "Largest accepted request message.",
    "keepalive_time_seconds": "Server keepalive ping interval.",
    "keepalive_timeout_seconds": "Keepalive ping timeout.",
    "max_connection_age_seconds": "Age after which connections are recycled; 0 = never.",
    "max_connection_age_grace_seconds": (
        "Grace after the age limit; keep it above the longest investigation."
    ),
    "reflection": "Serve gRPC server reflection (`--no-reflection`).",
    "metrics_host": "Bind address of `/metrics`.",
    "metrics_port": "Port of `/metrics`; 0 picks a free port, -1 disables (`--metrics-port`).",
    "log_level": "DEBUG, INFO, WARNING or ERROR (`--log-level`).",
    "log_format": "`json` (one object per line) or `text` for local development (`--log-format`).",
    "tracing_enabled": "Export OpenTelemetry spans over OTLP (needs the `tracing` extra).",
    "otlp_endpoint": "OTLP endpoint for spans.",
    "catalog_source": (
        "Where workflows come from: `embedded` (the catalog file), `datastorage` (Data "
        "Storage's search), `kubernetes` (RemediationWorkflow and ActionType resources, "
        "list + watch, with the Kubernetes toolset's credentials; docs/datastorage.md). "
        "`auto`: `datastorage` when `HAPI_DATA_STORAGE_URL` is set, else `embedded` "
        "(`--catalog-source`)."
    ),
    "catalog_namespace": (
        "`kubernetes` catalog: the namespace of the RemediationWorkflow and ActionType "
        "resources; empty reads every namespace (and needs a ClusterRole)."
    ),
    "catalog_file": (
        "Embedded catalog file (YAML or JSON); default: the bundled catalog (`--catalog`)."
    ),
    "data_storage_url": (
        "Data Storage over HTTP: the catalog (with `HAPI_CATALOG_SOURCE` `auto` or "
        "`datastorage`) and the remediation history (`--data-storage-url`)."
    ),
    "data_storage_timeout_seconds": (
        "Per-request timeout (always clipped to the caller's deadline)."
    ),
    "data_storage_max_retries": (
        "Retries on timeouts, connection errors, 5xx and 429 (Retry-After honoured up to 30 "
        "s, within the budget)."
    ),
    "data_storage_max_connections": (
        "Connection pool to Data Storage; waiting for a connection counts against the request"
        " timeout. A lookup takes milliseconds, so 100 serve thousands a second."
    ),
    "cache_url": (
        "`redis://host:port/db` (or `rediss://`) shares the catalog cache between replicas; "
        "default in-memory (`memory://`)."
    ),
    "cache_ttl_seconds": "TTL of cached searches and schemas.",
    "cache_max_bytes": (
        "Bytes of Data Storage answers cached in this process (without Redis); the least"
        " recently used go first. At least 1 MiB."
    ),
    "result_ttl_seconds": (
        "How long a finished analysis is returned again to retries (same `remediation_id` and"
        " incident); 0 keeps none."
    ),
    "result_max_bytes": (
        "Bytes of finished analyses kept in this process without `HAPI_CACHE_URL` (their"
        " compressed messages and what keeping them costs); the oldest go first. At least 1 MiB."
    ),
    "history_ttl_seconds": (
        "How long remediation history (decisions returned, outcomes reported) is kept;"
        " default 90 days, the history's summary window (docs/outcomes.md)."
    ),
    "history_max_per_target": (
        "Outcomes kept per target resource, per reporting caller and per kind (failures apart"
        " from successes and declines); the earliest recorded go first."
    ),
    "history_max_entries": (
        "Outcomes kept in all, and decisions in all; over it, the tenant (namespace and"
        " caller) holding the most bytes loses its earliest recorded outcome, failures last;"
        " the oldest decision goes first."
    ),
    "history_max_bytes": (
        "Bytes of outcomes kept in all (their JSON and what keeping it costs), evicted as"
        " above; at least 1 MiB."
    ),
    "history_max_decision_bytes": (
        "Bytes of decisions kept in all, the oldest going first; at least 1 MiB."
    ),
    "history_data_storage": (
        "With `HAPI_DATA_STORAGE_URL` set, read history from Data Storage's"
        " `/api/v1/remediation-history/context`; outcomes are still recorded here."
    ),
    "history_cache_seconds": (
        "How long a Data Storage history answer is reused (seconds, at most 60; 0: never)."
    ),
    "policy_file": (
        "Operator policy ([docs/policy.md](policy.md)): YAML of named CEL rules over each "
        "decision that require review, forbid workflows, or rate-limit automated decisions "
        "per target (counted in `HAPI_CACHE_URL`, shared by every replica through Redis). "
        "Checked at start (exit status 2, one line naming the rule); reloaded when the file "
        "changes, a broken change keeps the last good policy. Example: "
        "`deploy/optional/policy.example.yaml`."
    ),
    "policy_check_seconds": "How often, at most, the policy file is looked at for changes.",
    "premises_file": (
        "Operator premises ([docs/premises.md](premises.md)): YAML of premise packs per "
        "action type (added to, extending or replacing the shipped ones) and per workflow "
        "(a type to judge it as, parameter-role mappings, conditions of its own), in CEL. "
        "Checked at start (exit status 2, one line naming the entry); "
        "`hapi-grpc premises check` checks a file first."
    ),
    "breaker_failure_ratio": "Circuit breaker opens at this failure share ...",
    "breaker_window_seconds": "... over this sliding window ...",
    "breaker_min_calls": "... once at least this many calls were made in it.",
    "breaker_recovery_seconds": "Open time before a half-open probe is let through.",
    "llm_provider": (
        "`builtin`, `openai` (any OpenAI-compatible server) or `anthropic` (`--llm-provider`)."
    ),
    "llm_base_url": (
        "e.g. `https://api.openai.com/v1`, `http://vllm:8000/v1`, `http://ollama:11434/v1` "
        "(`--llm-base-url`)."
    ),
    "llm_model": "Model name (`--llm-model`).",
    "llm_api_key": "API key (prefer the file variant).",
    "llm_api_key_file": "File holding the API key (a mounted Secret).",
    "llm_auth_style": "`bearer` (Authorization header) or `api-key` (Azure OpenAI).",
    "llm_extra_headers": "JSON object of extra HTTP headers.",
    "llm_extra_query": (
        'JSON object of extra query parameters, e.g. `{"api-version": "2024-10-21"}`.'
    ),
    "llm_timeout_seconds": "Per-request timeout (clipped to the caller's deadline).",
    "llm_max_retries": (
        "Retries on timeouts, 5xx and 429 (Retry-After honoured up to 60 s, within the "
        "budget). A timed-out request is retried only while the budget still holds a full "
        "`HAPI_LLM_TIMEOUT_SECONDS`; a context-overflow answer is never retried."
    ),
    "llm_max_concurrent_requests": (
        "Model requests in flight at most, and the size of the connection pool. Set it to "
        "your provider's concurrency limit: further calls wait for a slot inside their "
        "deadline, then answer `RESOURCE_EXHAUSTED` with `RetryInfo`."
    ),
    "llm_temperature": "Sampling temperature.",
    "llm_max_tokens": "Completion token cap per turn.",
    "llm_context_tokens": (
        "The model's context window in tokens. When set, each request is kept under it less "
        "`HAPI_LLM_MAX_TOKENS`: tool results are cut to a quarter of that, and the oldest "
        "tool results (then the oldest rejected answers) are replaced by a note to the model."
        " The estimate is one token per 3 bytes of text (cautious for JSON and prose), "
        "tightened when the provider reports more. Unset, a provider's overflow answer trims "
        "and resends at most twice; an investigation that still does not fit ends with "
        "`CONTEXT_WINDOW_EXCEEDED`."
    ),
    "llm_min_attempt_seconds": (
        "No model request starts with less time than this left in the budget."
    ),
    "max_tool_calls": "Tool calls per investigation; further calls are refused with 'answer now'.",
    "max_llm_turns": (
        'Model turns per investigation. The last one sends `tool_choice: "none"` (Anthropic: '
        '`{"type": "none"}`) so the model must answer.'
    ),
    "max_format_repairs": (
        "Final answers that do not parse as the JSON contract are sent back this many times, "
        "then `LLM_OUTPUT_UNPARSEABLE`; they never spend the 3 parameter-validation attempts."
    ),
    "tool_timeout_seconds": "Timeout of one tool call.",
    "answer_margin_seconds": "Time kept before the deadline to return the (partial) result.",
    "default_budget_seconds": "Investigation budget when the caller sets no deadline.",
    "max_budget_seconds": (
        "The most any investigation gets, whatever deadline the caller sets (a longer "
        "deadline still returns the partial result at this bound)."
    ),
    "min_confidence": "Selections below it get `needs_human_review` (LOW_CONFIDENCE).",
    "tls_cert_file": "Server certificate (PEM); enables TLS (`--tls-cert`).",
    "tls_key_file": "Server key (PEM) (`--tls-key`).",
    "tls_client_ca_file": (
        "CA bundle for client certificates; enables mutual TLS (`--tls-client-ca`)."
    ),
    "auth_mode": (
        "`none`, `static` (token file) or `tokenreview` (Kubernetes service-account tokens)."
    ),
    "auth_tokens_file": "Static bearer tokens, one per line (reloaded on change).",
    "tokenreview_api_url": (
        "Kubernetes API server for TokenReview (`https://` only: the request carries a token)."
    ),
    "tokenreview_ca_file": "CA of the Kubernetes API server.",
    "tokenreview_token_file": "Service-account token used to call TokenReview.",
    "tokenreview_audiences": "Comma-separated audiences to require.",
    "auth_allowed_callers": (
        "`tokenreview` (required): comma-separated users allowed to call, e.g. "
        "`system:serviceaccount:remediation:remediation-controller`; others get "
        "`PERMISSION_DENIED`."
    ),
    "auth_static_namespaces": (
        "`static` (required): namespaces (shell patterns, `*` for all) token holders may "
        "investigate."
    ),
    "authz_verb": (
        "Verb of that SubjectAccessReview (`tokenreview`): a caller may investigate a "
        "namespace where it is allowed this verb on `HAPI_AUTHZ_RESOURCE`."
    ),
    "authz_resource": (
        "Resource of that SubjectAccessReview: `resource[/subresource][.group]`, e.g. "
        "`deployments.apps`."
    ),
    "auth_static_report_namespaces": (
        "`static`: namespaces (shell patterns, `*` for all) where token holders may report"
        " outcomes; none by default."
    ),
    "authz_report_verb": (
        "Verb of the SubjectAccessReview that authorizes `ReportRemediationOutcome`"
        " (`tokenreview`) in the target's namespace; writing history is a permission of its"
        " own."
    ),
    "authz_report_resource": (
        "Resource of that SubjectAccessReview (`resource[.group]`); the default names no real"
        " resource, so only an explicit grant allows it (deploy/auth-rbac.yaml)."
    ),
    "authz_cache_seconds": "How long a SubjectAccessReview answer is reused (0: never).",
    "authz_timeout_seconds": "Timeout of one SubjectAccessReview, within the caller's deadline.",
    "tool_output_exposure": (
        "What tools read that goes back to callers: `full`, `summary` (tool results replaced "
        "by their size) or `none` (no tool-call records, no model text)."
    ),
}
