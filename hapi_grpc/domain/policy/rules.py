"""An operator policy: named CEL rules, parsed and checked once, evaluated per decision.

Design notes: docs/internals.md (`domain/policy/rules.py`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hapi_grpc.domain.cel_cost import OUTSIDE, within_inputs
from hapi_grpc.domain.policy.cel import (
    Activation,
    CelError,
    Expression,
    activation,
    compile_expression,
)
from hapi_grpc.domain.policy.decision import VARIABLES, Decision

__all__ = ["Action", "Evaluation", "Finding", "Policy", "PolicyError", "Rule", "parse_policy"]

MAX_RULES = 200
MAX_LIMIT = 10_000
MAX_WINDOW_SECONDS = 7 * 86_400
_MAX_NAME = 63
_MAX_MESSAGE = 256
_MAX_KEY_CHARS = 512
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_RULE_KEYS = frozenset({"name", "action", "when", "message", "limit", "window", "key"})


class PolicyError(ValueError):
    """The policy is invalid; the one-line message names the rule."""


class Action(enum.StrEnum):
    REQUIRE_REVIEW = "require_review"
    FORBID = "forbid"
    RATE_LIMIT = "rate_limit"


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    action: Action
    when: Expression | None = None  # None: every decision
    message: str = ""
    limit: int = 0  # rate_limit only
    window_seconds: float = 0.0  # rate_limit only
    key: Expression | None = None  # rate_limit only; None: the target


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule that fired; `error` says why when its expression could not be evaluated."""

    rule: Rule
    error: str = ""
    key: str = ""  # rate_limit: the counted key


@dataclass(slots=True)
class Evaluation:
    forbidden: list[Finding] = field(default_factory=list)
    reviews: list[Finding] = field(default_factory=list)
    rate_limits: list[Finding] = field(default_factory=list)  # to count, if automated


@dataclass(frozen=True, slots=True)
class Unverified:
    """What the operator automates although no premise is declared for it
    (`allow_unverified`): by action type or by workflow id."""

    action_types: frozenset[str] = frozenset()
    workflows: frozenset[str] = frozenset()

    def allows(self, workflow_id: str, action_type: str) -> bool:
        return workflow_id in self.workflows or (
            bool(action_type) and action_type in self.action_types
        )


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    unverified: Unverified = Unverified()

    def allows_unverified(self, workflow_id: str, action_type: str) -> bool:
        """Whether `allow_unverified` names this workflow or its action type."""
        return self.unverified.allows(workflow_id, action_type)

    def evaluate(self, decision: Decision) -> Evaluation:
        """Which rules fire on `decision`."""
        found = Evaluation()
        if not self.rules:
            return found
        values = decision.variables()
        oversized = not within_inputs(values, OUTSIDE)  # past what the cost bound assumed
        variables = activation(values)
        for rule in self.rules:
            if oversized:
                found.reviews.append(Finding(rule, error=_OVERSIZED))
                continue
            try:
                if rule.when is not None and not rule.when.holds(variables):
                    continue
                key = _key(rule, variables, decision) if rule.action is Action.RATE_LIMIT else ""
            except CelError as exc:
                found.reviews.append(Finding(rule, error=str(exc)))
                continue
            if rule.action is Action.FORBID:
                found.forbidden.append(Finding(rule))
            elif rule.action is Action.REQUIRE_REVIEW:
                found.reviews.append(Finding(rule))
            else:
                found.rate_limits.append(Finding(rule, key=key))
        return found


_OVERSIZED = "not evaluated: the decision's values are larger than policy expressions may read"


def _key(rule: Rule, variables: Activation, decision: Decision) -> str:
    if rule.key is None:
        return decision.target_text
    value = rule.key.evaluate(variables)
    if not isinstance(value, str) or not value:
        raise CelError("key did not evaluate to a non-empty string")
    return str(value)[:_MAX_KEY_CHARS]


def parse_policy(document: Any) -> Policy:
    """The policy in a parsed YAML/JSON `document`; PolicyError names the first bad rule."""
    if document is None:
        return Policy()
    if not isinstance(document, Mapping):
        raise PolicyError("must be a mapping with a 'rules' list")
    unknown = sorted(str(k) for k in document if k not in ("rules", "allow_unverified"))
    if unknown:
        raise PolicyError(
            f"unknown top-level key {_shown(unknown[0])} (only 'rules' and 'allow_unverified')"
        )
    items = document.get("rules") or []
    if not isinstance(items, list):
        raise PolicyError("'rules' must be a list")
    if len(items) > MAX_RULES:
        raise PolicyError(f"at most {MAX_RULES} rules, got {len(items)}")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        rule = _parse_rule(index, item)
        if rule.name in seen:
            raise PolicyError(f"rule {rule.name!r} (rules[{index}]): the name is used twice")
        seen.add(rule.name)
        rules.append(rule)
    return Policy(tuple(rules), _unverified(document.get("allow_unverified")))


def _unverified(section: Any) -> Unverified:
    """`allow_unverified: {action_types: [...], workflows: [...]}`."""
    if section is None:
        return Unverified()
    where = "allow_unverified"
    if not isinstance(section, Mapping) or set(section) - {"action_types", "workflows"}:
        raise PolicyError(f"{where}: must be a mapping of 'action_types' and/or 'workflows'")
    found: dict[str, frozenset[str]] = {}
    for key in ("action_types", "workflows"):
        names = section.get(key) or []
        if not isinstance(names, list) or len(names) > MAX_RULES:
            raise PolicyError(f"{where}.{key}: must be a list of at most {MAX_RULES} names")
        for name in names:
            if not isinstance(name, str) or not 1 <= len(name) <= 255 or name == "*":
                raise PolicyError(f"{where}.{key}: {_shown(name)} is not a name")
        found[key] = frozenset(names)
    return Unverified(found["action_types"], found["workflows"])


def _parse_rule(index: int, item: Any) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(item, Mapping):
        raise PolicyError(f"{where}: must be a mapping with name, action and when")
    name = item.get("name")
    if not _valid_name(name):
        raise PolicyError(
            f"{where}: name must be 1-{_MAX_NAME} letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    where = f"rule {name!r} ({where})"
    unknown = sorted(str(k) for k in item if k not in _RULE_KEYS)
    if unknown:
        raise PolicyError(f"{where}: unknown key {_shown(unknown[0])}")
    try:
        action = Action(str(item.get("action")))
    except ValueError:
        raise PolicyError(
            f"{where}: unknown action {_shown(item.get('action'))}"
            f" (one of {', '.join(a.value for a in Action)})"
        ) from None
    message = item.get("message", "")
    if not isinstance(message, str) or len(message) > _MAX_MESSAGE:
        raise PolicyError(f"{where}: message must be text of at most {_MAX_MESSAGE} characters")
    when = _expression(where, "when", item.get("when"))
    if action is not Action.RATE_LIMIT:
        extra = [k for k in ("limit", "window", "key") if k in item]
        if extra:
            raise PolicyError(f"{where}: {extra[0]} applies to action rate_limit only")
        return Rule(str(name), action, when, " ".join(message.split()))
    limit = item.get("limit")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise PolicyError(f"{where}: limit must be an integer from 1 to {MAX_LIMIT}")
    window = _window(where, item.get("window"))
    key = _expression(where, "key", item.get("key"), "STRING")
    return Rule(str(name), action, when, " ".join(message.split()), limit, window, key)


def _shown(value: Any, limit: int = 40) -> str:
    """A bounded rendering of a value from the file: text or a number quoted and
    cut, a list or mapping only named (never rendered whole)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return repr(str(value)[:limit])
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _valid_name(name: Any) -> bool:
    if not isinstance(name, str) or not 1 <= len(name) <= _MAX_NAME:
        return False
    if not (name[0].isascii() and name[0].isalnum()):
        return False
    return all(c.isascii() and (c.isalnum() or c in "._-") for c in name)


def _expression(
    where: str, field_name: str, source: Any, result: str = "BOOL"
) -> Expression | None:
    if source is None:
        return None
    if isinstance(source, bool):
        source = "true" if source else "false"
    if not isinstance(source, str):
        raise PolicyError(f"{where}: {field_name}: must be a CEL expression (text)")
    try:
        return compile_expression(source, VARIABLES, result=result)
    except CelError as exc:
        raise PolicyError(f"{where}: {field_name}: {exc}") from None


def _window(where: str, value: Any) -> float:
    """Seconds from 3600, '90s', '10m', '1h' or '1d'."""
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and value.strip():
        text = value.strip().lower()
        unit = _UNITS.get(text[-1])
        number = text[:-1] if unit else text
        if number.isdigit():
            seconds = float(int(number) * (unit or 1))
    if seconds is None or not 1 <= seconds <= MAX_WINDOW_SECONDS:
        raise PolicyError(
            f"{where}: window must be a duration from 1s to 7d (3600, '90s', '10m', '1h', '1d')"
        )
    return seconds
