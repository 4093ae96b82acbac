"""Applying the operator's policy to a finished decision.

Design notes: docs/internals.md (`domain/policy/enforce.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hapi_grpc.domain.catalog import SearchHit
from hapi_grpc.domain.deadline import request_timeout
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.policy.decision import Decision
from hapi_grpc.domain.result import AlternativeWorkflow, AnalysisResult, HumanReviewReason

if TYPE_CHECKING:  # the rules carry compiled CEL; importing them loads the library
    from hapi_grpc.domain.policy.rules import Finding, Policy

__all__ = ["POLICY_REVIEW_REASON", "DecisionPolicy", "Limit", "RemediationCounter"]

logger = logging.getLogger(__name__)

POLICY_REVIEW_REASON = HumanReviewReason.POLICY_REQUIRES_REVIEW
_COUNT_TIMEOUT = 1.0  # seconds for all rate-limit counting of one decision


class PolicySource(Protocol):
    """Where the current policy comes from (a file, reloaded when it changes)."""

    async def current(self) -> Policy: ...


@dataclass(frozen=True, slots=True)
class Limit:
    """One rate limit a decision is counted under: at most `limit` per `window` seconds."""

    rule: str
    key: str
    limit: int
    window: float


class RemediationCounter(Protocol):
    """Counts automated decisions per (rule, key) in sliding windows.

    `admit` counts one decision under every limit given, or under none, in one
    atomic step: None when it was counted, else the index of the first limit
    that already holds `limit` decisions of the last `window` seconds. May
    raise on backend failure.
    """

    async def admit(self, limits: Sequence[Limit]) -> int | None: ...

    async def close(self) -> None: ...


class DecisionPolicy:
    """The operator's policy over decisions; safe to share between investigations."""

    def __init__(
        self,
        source: PolicySource,
        counter: RemediationCounter,
        *,
        count_timeout: float = _COUNT_TIMEOUT,
        on_fired: Callable[[str, str], None] | None = None,
    ) -> None:
        """`on_fired(rule, action)` is told of every rule that changed a decision
        (the server counts them in a metric)."""
        self._source = source
        self._counter = counter
        self._count_timeout = count_timeout
        self._on_fired = on_fired

    async def close(self) -> None:
        await self._counter.close()

    async def allows_unverified(self, workflow_id: str, action_type: str) -> bool:
        """Whether the policy automates this workflow although nothing states its
        premise (`allow_unverified` names it or its action type)."""
        return (await self._source.current()).allows_unverified(workflow_id, action_type)

    async def apply(
        self, incident: Incident, result: AnalysisResult, hit: SearchHit | None = None
    ) -> None:
        """Apply the policy to `result` in place (docs/internals.md)."""
        if result.selected_workflow is None:
            return
        policy = await self._source.current()
        if not policy.rules:
            return
        try:
            found = policy.evaluate(Decision.of(incident, result, hit))
        except Exception:  # a defect, not a rule: the decision is not automated unchecked
            logger.exception("policy evaluation failed remediation_id=%s", result.remediation_id)
            _flag(result, "The operator policy could not be applied to this decision: review.")
            return
        if found.forbidden:
            self._fired(found.forbidden[0], result)
            _forbid(result, found.forbidden[0])
            return
        if found.reviews:
            for finding in found.reviews:
                self._fired(finding, result)
                text = f"could not be evaluated on this decision: {finding.error}"
                _review(result, finding, text if finding.error else "requires review")
            return
        if found.rate_limits and not result.needs_human_review:
            await self._count(result, found.rate_limits)

    async def _count(self, result: AnalysisResult, findings: list[Finding]) -> None:
        limits = [Limit(f.rule.name, f.key, f.rule.limit, f.rule.window_seconds) for f in findings]
        try:
            async with asyncio.timeout(request_timeout(self._count_timeout)):
                refused = await self._counter.admit(limits)
        except Exception as exc:  # timeout, no time left, backend error: not checked
            logger.warning(
                "policy rate limit not checked rule=%s error=%s",
                findings[0].rule.name,
                type(exc).__name__,
            )
            _review(
                result, findings[0], "could not count automated decisions (counter unavailable)"
            )
            return
        if refused is not None:
            finding = findings[refused]
            self._fired(finding, result)
            _review(result, finding, _limit_text(finding))

    def _fired(self, finding: Finding, result: AnalysisResult) -> None:
        logger.info(
            "policy rule fired rule=%s action=%s remediation_id=%s",
            finding.rule.name,
            finding.rule.action.value,
            result.remediation_id,
        )
        if self._on_fired is not None:
            self._on_fired(finding.rule.name, finding.rule.action.value)


def _forbid(result: AnalysisResult, finding: Finding) -> None:
    selected = result.selected_workflow
    assert selected is not None
    result.selected_workflow = None
    candidate = AlternativeWorkflow(
        selected.workflow_id,
        selected.confidence,
        f"not selected: forbidden by policy rule {finding.rule.name!r}",
    )
    result.alternative_workflows = [
        candidate,
        *(a for a in result.alternative_workflows if a.workflow_id != selected.workflow_id),
    ]
    _review(result, finding, f"forbids workflow {selected.workflow_id!r}; it was not selected")


def _review(result: AnalysisResult, finding: Finding, what: str) -> None:
    message = f" ({finding.rule.message})" if finding.rule.message else ""
    _flag(result, f"Policy rule {finding.rule.name!r} {what}{message}.")


def _flag(result: AnalysisResult, warning: str) -> None:
    result.warnings.append(warning)
    if not result.needs_human_review:
        result.needs_human_review = True
        result.human_review_reason = POLICY_REVIEW_REASON


def _limit_text(finding: Finding) -> str:
    rule = finding.rule
    return (
        f"allows at most {rule.limit} automated decision(s) per {_duration(rule.window_seconds)}"
        f" for {finding.key!r}, and that many were already made: review"
    )


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
