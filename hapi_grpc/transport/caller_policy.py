"""Per-caller policy of the investigation RPCs: namespace authorization and
how much of what the tools read goes back.

The innermost interceptor: it sees requests that already passed the shutdown
gate, the concurrency cap and validation (`interceptors.py`), and the
authenticated caller that `security.auth.AuthInterceptor` set. An
investigation of a namespace the caller may not read ends with
PERMISSION_DENIED naming the namespace; when the permission cannot be checked
(API server unreachable) the call fails closed with UNAVAILABLE. An
authorized investigation's Kubernetes tools read only that namespace (and
cluster-scoped objects), whatever the model asks for.

ReportRemediationOutcome writes history that gates later decisions, so it
needs a permission of its own in the namespace of the remediated target
(`HAPI_AUTHZ_REPORT_VERB` on `HAPI_AUTHZ_REPORT_RESOURCE`, or
`HAPI_AUTH_STATIC_REPORT_NAMESPACES`), stricter by default than reading: a
caller allowed to investigate a namespace cannot write its history unless it
is also granted that. The check runs before the report is looked at, so a
refusal says nothing of the remediation id.
ValidateWorkflowParameters is not checked per namespace: it reads nothing of
the cluster, only the workflow catalog's schema, and its parameters are the
caller's own proposal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from hapi.v1.outcome_pb2 import ReportRemediationOutcomeRequest
from hapi_grpc.config import Settings
from hapi_grpc.domain.deadline import Budget, budget_scope
from hapi_grpc.security.auth import current_identity, unavailable
from hapi_grpc.security.authorization import (
    AuthorizationUnavailable,
    NamespaceAuthorizer,
    ResourceCheck,
    StaticNamespaceAuthorizer,
    SubjectAccessReviewAuthorizer,
)
from hapi_grpc.security.exposure import Exposure, limit_frame, limit_result
from hapi_grpc.security.handler_wrapping import HandlerWrappingInterceptor, Refusal, end_call
from hapi_grpc.toolsets.kubernetes.scope import confine_to_namespace

_SERVICE = "/hapi.v1.IncidentAnalysisService/"
INVESTIGATIONS = (_SERVICE + "AnalyzeIncident", _SERVICE + "AnalyzeIncidentStream")
OUTCOME_REPORT = _SERVICE + "ReportRemediationOutcome"


def namespace_of(request: Any) -> str:
    """The namespace a request is authorized on: the incident's, or the
    remediated target's for an outcome report."""
    if isinstance(request, ReportRemediationOutcomeRequest):
        return str(request.target.namespace)
    return str(request.incident.signal.namespace)


def denial(namespace: str) -> str:
    if not namespace:
        return "the caller may not investigate cluster-scoped incidents (no namespace)"
    return f"the caller may not investigate namespace {namespace!r}"


def report_denial(namespace: str, needs: str) -> str:
    where = f"namespace {namespace!r}" if namespace else "cluster-scoped targets (no namespace)"
    return f"the caller may not report remediation outcomes for {where} (needs {needs})"


class CallerPolicyInterceptor(HandlerWrappingInterceptor):
    """Authorizes each investigation's namespace (when `authorizer` is set) and
    limits what its responses carry to `exposure`."""

    def __init__(
        self,
        authorizer: NamespaceAuthorizer | None,
        exposure: Exposure,
        reporter: NamespaceAuthorizer | None = None,
        report_needs: str = "",
    ) -> None:
        """`reporter` authorizes outcome reports (`report_needs` says what it
        asks for); without it, reports are authorized like investigations."""
        super().__init__()
        self._authorizer = authorizer
        self._exposure = exposure
        self._reporter = reporter
        self._report_needs = report_needs

    def _applies(self, method: str) -> bool:
        return method in INVESTIGATIONS or method == OUTCOME_REPORT

    async def close(self) -> None:
        for authorizer in (self._authorizer, self._reporter):
            close = getattr(authorizer, "close", None)
            if close is not None:
                await close()

    async def authorize(
        self, request: Any, context: grpc.aio.ServicerContext
    ) -> grpc.Status | None:
        """None when the caller may investigate the incident's namespace, or
        report outcomes in the target's namespace; else the refusal."""
        namespace = namespace_of(request)
        authorizer, denied = self._authorizer, denial(namespace)
        if self._reporter is not None and isinstance(request, ReportRemediationOutcomeRequest):
            authorizer = self._reporter
            denied = report_denial(namespace, self._report_needs)
        if authorizer is None:
            return None
        refusal = Refusal(grpc.StatusCode.PERMISSION_DENIED, denied)
        identity = current_identity()
        if identity is None:  # authorization without authentication: refuse
            return refusal
        try:
            with budget_scope(Budget.from_timeout(context.time_remaining())):
                allowed = await authorizer.allowed(identity, namespace)
        except AuthorizationUnavailable as exc:
            return unavailable(context, f"{exc}; retry later")
        if not allowed:
            return refusal
        # The investigation (started from this context) reads only this namespace.
        confine_to_namespace(namespace)
        return None

    def _wrap(self, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        authorize, exposure = self.authorize, self._exposure
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                refusal = await authorize(request, context)
                if refusal is not None:
                    end_call(context, refusal)
                    return None
                response = await unary(request, context)
                if exposure != "full" and hasattr(response, "result"):
                    limit_result(response.result, exposure)
                return response

            return grpc.unary_unary_rpc_method_handler(
                unary_unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        assert handler.unary_stream is not None
        stream = handler.unary_stream

        async def unary_stream(
            request: Any, context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            refusal = await authorize(request, context)
            if refusal is not None:
                end_call(context, refusal)
                return
            async for frame in stream(request, context):
                if exposure != "full":
                    frame = limit_frame(frame, exposure)
                    if frame is None:
                        continue
                yield frame

        return grpc.unary_stream_rpc_method_handler(
            unary_stream,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def caller_policy(settings: Settings) -> list[grpc.aio.ServerInterceptor]:
    """The interceptor for the settings: namespace authorization with
    authentication on, the exposure of tool output; none when neither applies."""
    authorizer: NamespaceAuthorizer | None = None
    reporter: NamespaceAuthorizer | None = None
    needs = ""
    if settings.auth_mode == "static":
        authorizer = StaticNamespaceAuthorizer(settings.auth_static_namespaces)
        reporter = StaticNamespaceAuthorizer(settings.auth_static_report_namespaces)
        needs = "the namespace in HAPI_AUTH_STATIC_REPORT_NAMESPACES"
    elif settings.auth_mode == "tokenreview":

        def reviews(verb: str, resource: str) -> SubjectAccessReviewAuthorizer:
            return SubjectAccessReviewAuthorizer(
                settings.tokenreview_api_url,
                settings.tokenreview_ca_file,
                settings.tokenreview_token_file,
                ResourceCheck.parse(verb, resource),
                cache_ttl=settings.authz_cache_seconds,
                timeout=settings.authz_timeout_seconds,
            )

        authorizer = reviews(settings.authz_verb, settings.authz_resource)
        reporter = reviews(settings.authz_report_verb, settings.authz_report_resource)
        needs = f"{settings.authz_report_verb} on {settings.authz_report_resource}"
    if authorizer is None and settings.tool_output_exposure == "full":
        return []
    return [CallerPolicyInterceptor(authorizer, settings.tool_output_exposure, reporter, needs)]
