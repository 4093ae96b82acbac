"""Composition root: builds everything from settings and runs the server.

Design notes: docs/internals.md (`app.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import grpc

from hapi_grpc.application.idempotency import IdempotencyCoordinator
from hapi_grpc.application.outcomes import OutcomeService
from hapi_grpc.application.service import Application
from hapi_grpc.capture import build_capture
from hapi_grpc.config import ConfigError, Settings, env_name
from hapi_grpc.domain import sensitive
from hapi_grpc.domain.catalog import WorkflowCatalog
from hapi_grpc.domain.history import RemediationHistory
from hapi_grpc.domain.investigation.engine import EngineSettings, InvestigationEngine
from hapi_grpc.domain.llm import LLMProvider
from hapi_grpc.domain.result import AnalysisEvent
from hapi_grpc.domain.toolsets.toolset import ToolsetSource
from hapi_grpc.observability import tracing
from hapi_grpc.observability.investigation import MetricsObserver
from hapi_grpc.observability.metrics import POLICY_RULES_FIRED
from hapi_grpc.observability.metrics_server import start_metrics_server
from hapi_grpc.security.authorization import CallerPolicy
from hapi_grpc.toolsets.registry import open_toolsets
from hapi_grpc.transport.server import CLOSE_SECONDS, HapiServer, close_within
from hapi_grpc.transport.stream_messages import StreamMessages

if TYPE_CHECKING:
    from hapi_grpc.adapters.llm.http_provider import HttpOptions
    from hapi_grpc.domain.policy.enforce import DecisionPolicy
    from hapi_grpc.domain.premises import PremiseBook

log = logging.getLogger(__name__)


def build_catalog(settings: Settings) -> WorkflowCatalog:
    """The catalog of HAPI_CATALOG_SOURCE: Data Storage over HTTP, the cluster's
    RemediationWorkflow resources, or the embedded catalog file.

    A malformed catalog file raises here, before the server binds its port;
    `kubernetes` without credentials raises ConfigError.
    """
    source = settings.resolved_catalog_source
    if source == "kubernetes":
        return build_kubernetes_catalog(settings)
    if source == "datastorage":
        from hapi_grpc.adapters.cache import CatalogCache
        from hapi_grpc.adapters.catalog.datastorage import DataStorageCatalog

        return DataStorageCatalog(
            settings.data_storage_client("datastorage"),
            cache=CatalogCache(
                settings.cache_url,
                ttl=settings.cache_ttl_seconds,
                max_bytes=settings.cache_max_bytes,
            ),
        )
    from hapi_grpc.adapters.catalog.embedded import EmbeddedCatalog

    return EmbeddedCatalog.from_file(settings.catalog_file)


def build_kubernetes_catalog(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> WorkflowCatalog:
    """The catalog read from the cluster, with the credentials the Kubernetes
    toolset uses (in-cluster service account, else KUBECONFIG); it connects
    when the server starts (`KubernetesCatalog.start`)."""
    from hapi_grpc.adapters.catalog.kubernetes import KubernetesCatalog, connecting
    from hapi_grpc.adapters.kubernetes.credentials import credentials_present

    env = dict(os.environ if environ is None else environ)
    if not credentials_present(env):
        raise ConfigError(
            "HAPI_CATALOG_SOURCE=kubernetes needs in-cluster or KUBECONFIG credentials"
        )

    return KubernetesCatalog(connecting(env), settings.catalog_namespace)


def build_llm(settings: Settings) -> LLMProvider:
    """The configured language model; the built-in analyst when none is."""
    if settings.llm_provider == "builtin":
        from hapi_grpc.analyst import BuiltinAnalyst

        return BuiltinAnalyst()
    api_key = settings.resolved_llm_api_key()
    if api_key:
        sensitive.register_secret(api_key)  # logs, errors and events alike
    assert settings.llm_model is not None  # checked by Settings
    options: HttpOptions = {
        "request_timeout": settings.llm_timeout_seconds,
        "max_retries": settings.llm_max_retries,
        "max_concurrent_requests": settings.llm_max_concurrent_requests,
        "min_attempt_seconds": settings.llm_min_attempt_seconds,
    }
    if settings.llm_provider == "openai":
        from hapi_grpc.adapters.llm.openai_compat import OpenAICompatibleProvider

        assert settings.llm_base_url is not None
        return OpenAICompatibleProvider(
            settings.llm_base_url,
            settings.llm_model,
            api_key,
            extra_headers=settings.llm_extra_headers,
            extra_query=settings.llm_extra_query,
            temperature=settings.llm_temperature,
            max_tokens=settings.llm_max_tokens,
            auth_style=settings.llm_auth_style,
            **options,
        )
    from hapi_grpc.adapters.llm.anthropic import AnthropicProvider

    return AnthropicProvider(
        settings.llm_base_url or "https://api.anthropic.com",
        settings.llm_model,
        api_key,
        extra_headers=settings.llm_extra_headers,
        temperature=settings.llm_temperature,
        max_tokens=settings.llm_max_tokens,
        **options,
    )


def build_idempotency(settings: Settings) -> IdempotencyCoordinator[AnalysisEvent]:
    """Retries of an analysis share one investigation and its kept result, in the
    Redis of HAPI_CACHE_URL (every replica) or in memory (this one)."""
    from hapi_grpc.adapters.result_store import build_result_store

    store = (
        build_result_store(settings.cache_url, max_bytes=settings.result_max_bytes)
        if settings.result_ttl_seconds > 0
        else None
    )
    return IdempotencyCoordinator(store, result_ttl=settings.result_ttl_seconds)


def build_history(settings: Settings) -> RemediationHistory:
    """Remediation history: the decisions returned and outcomes reported, kept in
    the Redis of HAPI_CACHE_URL (every replica) or in memory (this one); read
    from Data Storage's history endpoint when HAPI_HISTORY_DATA_STORAGE is on."""
    from hapi_grpc.adapters.history.backends import Limits
    from hapi_grpc.adapters.history.embedded import build_embedded_history

    limits = Limits(
        ttl=settings.history_ttl_seconds,
        max_per_target=settings.history_max_per_target,
        max_total=settings.history_max_entries,
        max_bytes=settings.history_max_bytes,
        max_decision_bytes=settings.history_max_decision_bytes,
    )
    local = build_embedded_history(settings.cache_url, limits)
    if not (settings.data_storage_url and settings.history_data_storage):
        return local
    from hapi_grpc.adapters.history.datastorage import DataStorageHistory

    return DataStorageHistory(
        settings.data_storage_client("datastorage-history"),
        local,
        cache_ttl=settings.history_cache_seconds,
    )


def build_policy(settings: Settings) -> DecisionPolicy | None:
    """The operator's policy of HAPI_POLICY_FILE, counting rate limits where results
    are kept (HAPI_CACHE_URL); None without a file. A policy that does not load is a
    ConfigError naming the rule."""
    if not settings.policy_file:
        return None
    from hapi_grpc.adapters.operator_files import PolicyFile
    from hapi_grpc.adapters.remediation_counter import build_remediation_counter
    from hapi_grpc.domain.policy.enforce import DecisionPolicy
    from hapi_grpc.domain.policy.rules import PolicyError

    try:
        source = PolicyFile.load(settings.policy_file, check_interval=settings.policy_check_seconds)
    except PolicyError as exc:
        raise ConfigError(f"{env_name('policy_file')}: {exc}") from None
    log.info("policy loaded", extra={"rules": len(source.policy.rules)})
    return DecisionPolicy(
        source,
        build_remediation_counter(settings.cache_url),
        on_fired=lambda rule, action: POLICY_RULES_FIRED.labels(rule, action).inc(),
    )


def build_callers(settings: Settings) -> CallerPolicy:
    """Who may investigate and report where (with authentication on), and the
    exposure of tool output every caller gets."""
    if settings.auth_mode == "static":
        from hapi_grpc.security.authorization import StaticNamespaceAuthorizer

        return CallerPolicy(
            settings.tool_output_exposure,
            StaticNamespaceAuthorizer(settings.auth_static_namespaces),
            StaticNamespaceAuthorizer(settings.auth_static_report_namespaces),
            "the namespace in HAPI_AUTH_STATIC_REPORT_NAMESPACES",
        )
    if settings.auth_mode == "tokenreview":
        from hapi_grpc.security.authorization import ResourceCheck, SubjectAccessReviewAuthorizer

        def reviews(verb: str, resource: str) -> SubjectAccessReviewAuthorizer:
            return SubjectAccessReviewAuthorizer(
                settings.tokenreview_api_url,
                settings.tokenreview_ca_file,
                settings.tokenreview_token_file,
                ResourceCheck.parse(verb, resource),
                cache_ttl=settings.authz_cache_seconds,
                timeout=settings.authz_timeout_seconds,
            )

        return CallerPolicy(
            settings.tool_output_exposure,
            reviews(settings.authz_verb, settings.authz_resource),
            reviews(settings.authz_report_verb, settings.authz_report_resource),
            f"{settings.authz_report_verb} on {settings.authz_report_resource}",
        )
    return CallerPolicy(settings.tool_output_exposure)


def build_premises(settings: Settings) -> PremiseBook:
    """The shipped premise packs, overlaid by HAPI_PREMISES_FILE when set; a pack or
    file that does not load is a ConfigError naming the entry."""
    from hapi_grpc.domain.premises import PackError, bundled_book

    try:
        if not settings.premises_file:
            return bundled_book()
        from hapi_grpc.adapters.operator_files import read_premises

        book = read_premises(settings.premises_file)
    except PackError as exc:
        name = env_name("premises_file") if settings.premises_file else "premise packs"
        raise ConfigError(f"{name}: {exc}") from None
    log.info("premises loaded", extra={"action_types": len(book.action_types)})
    return book


def build_security(
    settings: Settings,
) -> tuple[list[grpc.aio.ServerInterceptor], grpc.ServerCredentials | None]:
    """Auth interceptor and TLS credentials from settings (both optional)."""
    interceptors: list[grpc.aio.ServerInterceptor] = []
    if settings.auth_mode != "none":
        from hapi_grpc.security.auth import (
            Authenticator,
            AuthInterceptor,
            StaticTokenAuthenticator,
        )
        from hapi_grpc.security.token_review import TokenReviewAuthenticator

        authenticator: Authenticator
        allowed: list[str] | None = None
        if settings.auth_mode == "static":
            assert settings.auth_tokens_file is not None
            authenticator = StaticTokenAuthenticator.from_file(settings.auth_tokens_file)
        else:
            authenticator = TokenReviewAuthenticator(
                settings.tokenreview_api_url,
                settings.tokenreview_ca_file,
                settings.tokenreview_token_file,
                audiences=settings.tokenreview_audiences or None,
            )
            allowed = settings.auth_allowed_callers
        interceptors.append(AuthInterceptor(authenticator, allowed_callers=allowed))
    credentials = None
    if settings.tls_cert_file and settings.tls_key_file:
        from hapi_grpc.security.tls import server_credentials

        credentials = server_credentials(
            settings.tls_cert_file, settings.tls_key_file, settings.tls_client_ca_file
        )
    return interceptors, credentials


def build_server(
    settings: Settings,
    *,
    catalog: WorkflowCatalog | None = None,
    llm: LLMProvider | None = None,
    engine_config: EngineSettings | None = None,
    extra_interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    idempotency: IdempotencyCoordinator[AnalysisEvent] | None = None,
    toolsets: Sequence[ToolsetSource] = (),
    policy: DecisionPolicy | None = None,
    history: RemediationHistory | None = None,
    premises: PremiseBook | None = None,
) -> HapiServer:
    """A ready-to-start server over everything built from `settings`; tests pass
    their own catalog, LLM, engine bounds or idempotency coordinator."""
    policy = policy if policy is not None else build_policy(settings)
    catalog = catalog if catalog is not None else build_catalog(settings)
    llm = llm if llm is not None else build_llm(settings)
    history = history if history is not None else build_history(settings)
    premises = premises if premises is not None else build_premises(settings)
    engine = InvestigationEngine(
        catalog,
        llm,
        engine_config or settings.engine_settings(),
        observer=MetricsObserver(),
        toolsets=toolsets,
        policy=policy,
        history=history,
        premises=premises,
    )
    application = Application(
        engine,
        catalog,
        OutcomeService(history, catalog),
        StreamMessages(),
        idempotency if idempotency is not None else build_idempotency(settings),
        capture=build_capture(settings, catalog, settings.llm_provider, llm.model or llm.name),
    )
    interceptors, credentials = build_security(settings)
    # First, so even auth failures are traced and the caller's trace id is in
    # every log line; without tracing enabled it only reads `traceparent`.
    interceptors.insert(0, tracing.TracingInterceptor())
    return HapiServer(
        settings,
        application,
        callers=build_callers(settings),
        interceptors=[*interceptors, *extra_interceptors],
        server_credentials=credentials,
        # A catalog read from the cluster: ready once it was read (then served
        # even while the API server is away).
        ready=getattr(catalog, "wait_synced", None),
    )


async def serve(settings: Settings) -> None:
    """Run the server until SIGTERM/SIGINT, then shut down gracefully."""
    tracing.setup_tracing(settings.tracing_enabled, otlp_endpoint=settings.otlp_endpoint)
    policy = build_policy(settings)  # before anything opens: a bad policy stops here
    premises = build_premises(settings)  # so do broken premise packs
    history = build_history(settings)  # one instance: outcomes recorded, history tool, gate
    toolsets = await open_toolsets(settings, history)
    catalog = build_catalog(settings)
    starter = getattr(catalog, "start", None)
    if starter is not None:  # the cluster's catalog: unusable credentials stop here
        try:
            await starter()
        except ValueError as exc:
            await toolsets.close()
            raise ConfigError(" ".join(str(exc).split())) from None
    server = build_server(
        settings,
        catalog=catalog,
        toolsets=toolsets.sources,
        policy=policy,
        history=history,
        premises=premises,
    )
    metrics_runner = None
    if settings.metrics_port >= 0:
        metrics_runner, metrics_port = await start_metrics_server(
            settings.metrics_host, settings.metrics_port
        )
        log.info("metrics endpoint listening", extra={"port": metrics_port})
    await server.start()

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()
        await close_within(
            CLOSE_SECONDS,
            toolsets.close,
            *([metrics_runner.cleanup] if metrics_runner is not None else []),
        )
        tracing.shutdown_tracing()
