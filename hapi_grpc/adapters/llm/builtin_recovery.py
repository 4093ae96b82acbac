"""The built-in analyst's handling of a recovery request.

Read from the prompt's recovery sections (`domain.recovery.prompt`), as a
language model would read them. The analyst does not select again a workflow
whose execution failed in a way a repeat would not fix (the classification
the prompt states, from `domain.recovery.failures`), whatever parameters it
would now give it: the failed approach is passed over, so the next catalog
match whose premise the evidence shows is taken; when none is left, one more
search looks for a workflow that declares itself read-only (a diagnostics
snapshot changes nothing, so it cannot repeat the failure); otherwise none.
A workflow whose own pod never ran may run again. The answer says in
`root_cause_assessment` what was tried before and how it failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hapi_grpc.domain.catalog import TOP_K_MAX
from hapi_grpc.domain.llm import LLMResponse
from hapi_grpc.domain.prompt import read_facts
from hapi_grpc.domain.recovery.prompt import FailedAttempt, read_recovery
from hapi_grpc.domain.toolsets.workflow_catalog.tools import SEARCH_TOOL

__all__ = ["RecoveryView", "read_only_fallback"]

_SHOWN = 3
# The second search asks the catalog for diagnostics: only a workflow that
# declares itself read-only is taken from its results.
_FALLBACK_SEARCH = {"query": "diagnostics", "similarity_threshold": 0.0, "limit": TOP_K_MAX}


class _Turn(Protocol):
    """What the fallback needs of the analyst's turn."""

    offered: set[str]

    def _objection(self, hit: dict[str, Any]) -> str | None: ...

    def _try(self, hit: dict[str, Any]) -> LLMResponse | None: ...

    def _call(self, tool: str, arguments: dict[str, Any]) -> LLMResponse: ...


def read_only_fallback(turn: _Turn, searches: Sequence[dict[str, Any]]) -> LLMResponse | None:
    """Every match of the signal was passed over in a recovery: search once more
    and take a read-only workflow (it changes nothing, so it cannot repeat the
    failure); None when there is none (the answer then selects nothing)."""
    if len(searches) < 2:
        return (
            turn._call(SEARCH_TOOL, dict(_FALLBACK_SEARCH)) if SEARCH_TOOL in turn.offered else None
        )
    hits = searches[1].get("workflows")
    for hit in hits if isinstance(hits, list) else []:
        if isinstance(hit, dict) and hit.get("read_only") is True and turn._objection(hit) is None:
            step = turn._try(hit)
            if step is not None:
                return step
    return None


@dataclass(frozen=True, slots=True)
class RecoveryView:
    """A recovery request as the analyst read it from the user message."""

    attempt_number: int
    max_attempts: int
    failed: tuple[FailedAttempt, ...]

    @classmethod
    def read(cls, text: str) -> RecoveryView | None:
        """None when the user message is no recovery request."""
        return cls.of(read_facts(text))

    @classmethod
    def of(cls, facts: dict[str, dict[str, str]]) -> RecoveryView | None:
        """From the user message as `prompt.read_facts` parsed it; None without recovery."""
        found = read_recovery(facts)
        if found is None:
            return None
        attempt, maximum, failed = found
        return cls(attempt, maximum, tuple(failed))

    def objection(self, workflow_id: str) -> str | None:
        """Why `workflow_id` is not selected again; None when it may be."""
        for position in range(len(self.failed), 0, -1):
            attempt = self.failed[position - 1]
            if attempt.workflow_id == workflow_id and not attempt.repeat_allowed:
                return (
                    f"{workflow_id} was executed before (execution {position}) and failed"
                    f" with {attempt.reason}; a repeat would meet the same failure"
                )
        return None

    def history(self) -> str:
        """What was tried before, for `root_cause_assessment`."""
        shown = list(enumerate(self.failed, 1))[-_SHOWN:]
        tried = "; ".join(
            f"execution {position} ran {a.workflow_id} and failed with {a.reason}"
            + (" (its own pod never ran)" if a.repeat_allowed else "")
            for position, a in shown
        )
        return f" Recovery attempt {self.attempt_number} of {self.max_attempts}: {tried}."
