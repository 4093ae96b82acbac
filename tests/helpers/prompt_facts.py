"""Reading the investigation prompt's fact lines back, as a model would.

The service writes the incident's facts as `- Name: value` lines under section
headers (`domain.prompt`, `domain.recovery.prompt`). Tests check what those lines
say, and the reckless model (`tests.fakes.reckless_model`), which like any model
sees only the prompt, takes the reported resource from them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.prompt import SIGNAL
from hapi_grpc.domain.recovery.prompt import FAILED_EXECUTION, RECOVERY, REPEAT_ALLOWED

__all__ = ["FailedAttempt", "PromptFacts", "read_facts", "read_recovery"]

_FACT_RE = re.compile(r"^- ([A-Za-z ]{1,40}): (.*)$")
_MAX_LINES = 500


def read_facts(text: str) -> dict[str, dict[str, str]]:
    """Section title -> field name -> value (titles lose their parenthetical note)."""
    facts: dict[str, dict[str, str]] = {}
    section: dict[str, str] | None = None
    for line in text.splitlines()[:_MAX_LINES]:
        if line.startswith("## "):
            title = line[3:].split(" (", 1)[0].strip()
            section = facts.setdefault(title, {})
            continue
        match = _FACT_RE.match(line)
        if match and section is not None:
            section[match.group(1)] = match.group(2)
    return facts


@dataclass(frozen=True)
class PromptFacts:
    """The reported signal and resource as the prompt states them."""

    signal_type: str
    severity: str
    namespace: str
    kind: str
    name: str

    @classmethod
    def read(cls, text: str) -> PromptFacts:
        signal = read_facts(text).get(SIGNAL, {})
        kind, _, name = signal.get("Resource", "").rpartition("/")
        return cls(
            signal_type=signal.get("Signal Type", ""),
            severity=signal.get("Severity", "").lower(),
            namespace=signal.get("Namespace", ""),
            kind=kind,
            name=name,
        )


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """A failed execution as read back from the prompt."""

    workflow_id: str
    parameters: dict[str, Any] | None  # None when they could not be read back
    reason: str
    repeat_allowed: bool


def _number(text: str | None) -> int:
    try:
        return int(text or "0")
    except ValueError:
        return 0


def read_recovery(
    facts: dict[str, dict[str, str]],
) -> tuple[int, int, list[FailedAttempt]] | None:
    """(attempt number, max attempts, failed executions); None without a recovery section."""
    header = facts.get(RECOVERY)
    if header is None:
        return None
    attempts: list[FailedAttempt] = []
    for title, section in facts.items():
        if not title.startswith(FAILED_EXECUTION) or "Workflow" not in section:
            continue
        try:
            parameters = json.loads(section.get("Parameters", "{}"))
        except ValueError:
            parameters = None
        attempts.append(
            FailedAttempt(
                section["Workflow"],
                parameters if isinstance(parameters, dict) else None,
                section.get("Failure Reason", ""),
                section.get("Repeat", "") == REPEAT_ALLOWED,
            )
        )
    return _number(header.get("Attempt Number")), _number(header.get("Max Attempts")), attempts
