"""What the built-in analyst knows and the workflow parameters it derives.

`Facts` is its reading of the user message (`prompt.read_facts`): the
signal, the resource, the error text and the signal labels. From them it
fills a workflow's parameters (namespace, resource name, kind, a container
label, a doubled memory limit, a revision the text calls good) and, when
validation fails, applies the validator's hints (`fix_parameters`): a
suggested value, a bound, the default, the first allowed value, the example.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import re2

from hapi_grpc.domain.prompt import CLUSTER, ERROR_DETAILS, SIGNAL, read_facts
from hapi_grpc.domain.quantity import QuantityError, quantity_bytes

__all__ = ["Facts", "fix_parameters"]

_NAMESPACE_PARAMS = frozenset({"NAMESPACE", "TARGET_NAMESPACE", "RESOURCE_NAMESPACE"})
_NAME_PARAMS = frozenset({"TARGET_RESOURCE_NAME", "RESOURCE_NAME", "TARGET_NAME"})
_KIND_PARAMS = frozenset({"TARGET_RESOURCE_KIND", "RESOURCE_KIND", "TARGET_KIND"})
# A pod created by a Deployment: <deployment>-<replicaset hash>-<pod suffix>.
# Every pattern here reads caller or cluster text (the alert, names, validator
# messages quoting them): RE2, linear in the text whatever it holds.
_DEPLOYMENT_POD_RE = re2.compile(r"^(?P<name>[a-z0-9][-a-z0-9.]*?)-[a-z0-9]{5,10}-[a-z0-9]{5}$")
# Any Kubernetes quantity notation ('2G', '1.5Gi', '1048576Ki', '1500M', '2e9').
_MEMORY_LIMIT_RE = re2.compile(
    r"(?i)limit\D{0,24}?(?P<value>[0-9]{1,12}(?:\.[0-9]{1,9})?(?:[eE][0-9]{1,2}|[KMGTPE]i?|k|m)?)\b"
)
_BINARY_UNITS = ("Ki", "Mi", "Gi", "Ti", "Pi")
# Parameters whose value the evidence determines: never a schema default in their
# place, and never changed to fit a validator hint (that is for a human to decide).
_EVIDENCE_PARAMS = frozenset(
    {"MEMORY_LIMIT_NEW", "REVISION", "TARGET_REVISION", "ROLLBACK_REVISION"}
)
_GOOD_REVISION_RE = re2.compile(
    r"(?i)revision (?P<after>\d{1,9}) (?:was|is) (?:healthy|good|working|stable)"
    r"|(?:last good|known good|healthy|previous) revision (?P<before>\d{1,9})"
)
_SUGGESTED_RE = re2.compile(r"did you mean '(?P<value>[^']{1,200})'")
_EXAMPLE_RE = re2.compile(r"\(e\.g\. (?P<value>'[^']{0,200}'|-?\d+(?:\.\d+)?|true|false)\)")


@dataclass(frozen=True)
class Facts:
    """The incident as the analyst reads it from the user message."""

    signal_type: str
    severity: str
    component: str
    namespace: str
    kind: str
    name: str
    error_text: str
    labels: dict[str, str]

    @classmethod
    def read(cls, text: str) -> Facts:
        return cls.of(read_facts(text))

    @classmethod
    def of(cls, facts: dict[str, dict[str, str]]) -> Facts:
        """From the user message as `prompt.read_facts` parsed it."""
        signal = facts.get(SIGNAL, {})
        errors = facts.get(ERROR_DETAILS, {})
        kind, _, name = signal.get("Resource", "").rpartition("/")
        return cls(
            signal_type=signal.get("Signal Type", ""),
            severity=signal.get("Severity", "").lower(),
            component=signal.get("Component", ""),
            namespace=signal.get("Namespace", ""),
            kind=kind,
            name=name,
            error_text=" ".join(errors.get(k, "") for k in ("Error Message", "Description")),
            labels=_parse_labels(facts.get(CLUSTER, {}).get("Signal Labels", "")),
        )

    def fill(self, specs: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Parameters from the facts and defaults; None when a required one is unknown."""
        filled: dict[str, Any] = {}
        for spec in specs:
            name = str(spec.get("name", ""))
            value = self.value_for(name)
            if value is None and name not in _EVIDENCE_PARAMS:
                value = spec.get("default")
            if value is None:
                if spec.get("required"):
                    return None
                continue
            filled[name] = _typed(value, spec.get("type"))
        return filled

    def value_for(self, name: str) -> Any:
        """The value of parameter `name` these facts give, or None."""
        kind = self.kind.lower()
        if name in _NAMESPACE_PARAMS:
            return self.namespace or None
        if name in _NAME_PARAMS:
            return self.name or None
        if name in _KIND_PARAMS:
            return self.kind or None
        if name == "MEMORY_LIMIT_NEW":
            return _raised_memory_limit(self.error_text)
        if name in ("REVISION", "TARGET_REVISION", "ROLLBACK_REVISION"):
            return _good_revision(self.error_text)
        if kind and self.name and name == f"{kind.upper()}_NAME":
            return self.name
        if name == "DEPLOYMENT_NAME" and kind == "pod":
            match = _DEPLOYMENT_POD_RE.match(self.name)
            if match:
                return match.group("name")
        labelled = _from_labels(name, self.labels)
        if labelled is not None:
            return labelled
        return _from_text(name, self.error_text)


def _parse_labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in text.split(", "):
        key, sep, value = item.partition("=")
        if sep and key:
            labels[key.strip()] = value.strip()
    return labels


def _normalise(name: str) -> str:
    return re2.sub(r"[^a-z0-9]", "", name.lower())


def _from_labels(name: str, labels: dict[str, str]) -> str | None:
    """A signal label named like the parameter (`container` for CONTAINER_NAME)."""
    wanted = _normalise(name)
    for key, value in labels.items():
        have = _normalise(key)
        if value and have and wanted in (have, have + "name"):
            return value
    return None


def _from_text(name: str, text: str) -> str | None:
    """An identifier the error text names after the parameter.

    For PULL_SECRET_NAME, kubelet's 'Unable to retrieve some image pull
    secrets (regcred)' gives 'regcred'. Only `*_NAME` parameters qualify; the
    validator still checks whatever is found against the schema's pattern.
    """
    words = name.lower().split("_")
    if len(words) < 2 or words[-1] != "name" or not text:
        return None
    phrase = r"[ _-]?".join(re2.escape(w) for w in words[:-1])
    match = re2.search(  # compiled once per phrase (the module caches its patterns)
        rf"(?i)\b{phrase}s?\b\W{{0,3}}[\"'(]?(?P<value>[A-Za-z0-9][-A-Za-z0-9._]{{0,252}})",
        text[:4000],
    )
    return match.group("value") if match else None


def _good_revision(text: str) -> int | None:
    """A revision the error text calls good ('revision 6 was healthy'); never a guess."""
    match = _GOOD_REVISION_RE.search(text[:4000])
    if match is None:
        return None
    return int(match.group("after") or match.group("before"))


def _raised_memory_limit(text: str) -> str | None:
    """Double the memory limit stated in the text ('limit 1.5Gi' -> '3Gi', '2G' -> '3906250Ki').

    Read with the Kubernetes quantity parser; written in whole binary units
    (rounded up to the next Ki), the form workflow schemas ask for.
    """
    match = _MEMORY_LIMIT_RE.search(text[:4000])
    if match is None:
        return None
    try:
        doubled = quantity_bytes(match.group("value")) * 2
    except QuantityError:
        return None
    value = -(-doubled // 1024)  # Ki, rounded up
    if value <= 0:
        return None
    index = 0
    while index < len(_BINARY_UNITS) - 1 and value % 1024 == 0:
        value //= 1024
        index += 1
    return f"{value}{_BINARY_UNITS[index]}"


def _typed(value: Any, kind: Any) -> Any:
    """Facts are text; give numbers and booleans their schema type when they parse."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if kind == "integer" and re2.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    if kind in ("float", "number") and re2.fullmatch(r"-?\d{1,18}(\.\d{1,18})?", text):
        return float(text)
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    return value


def fix_parameters(
    proposed: dict[str, Any],
    errors: list[Any],
    specs: list[dict[str, Any]],
    determined: frozenset[str] = frozenset(),
) -> dict[str, Any] | None:
    """Apply the validator's hints; None when a required parameter cannot be fixed.

    A parameter in `determined` (its value came from the evidence) is never
    clamped, defaulted or replaced to fit: None, so that a human reviews it.
    Only a respelling the validator suggests ('did you mean') is taken.
    """
    by_name = {str(s.get("name")): s for s in specs}
    fixed = dict(proposed)
    for error in errors:
        if not isinstance(error, dict):
            continue
        name = str(error.get("parameter", ""))
        spec = by_name.get(name, {})
        message = str(error.get("message", ""))
        if name in determined:
            respelt = _SUGGESTED_RE.search(message)
            if respelt is None:
                return None
            fixed[name] = respelt.group("value")
            continue
        value = _suggestion(str(error.get("code", "")), message, spec)
        if value is not None:
            fixed[name] = value
        elif spec.get("required"):
            return None
        else:
            fixed.pop(name, None)  # an optional parameter is better left out
    return fixed


def _suggestion(code: str, message: str, spec: dict[str, Any]) -> Any:
    if code == "MISSING_DEPENDENCY":
        return None
    match = _SUGGESTED_RE.search(message)
    if match:
        return match.group("value")
    if code == "BELOW_MINIMUM" and spec.get("minimum") is not None:
        return spec["minimum"]
    if code == "ABOVE_MAXIMUM" and spec.get("maximum") is not None:
        return spec["maximum"]
    if spec.get("default") is not None:
        return spec["default"]
    enum = spec.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    # The validator's generic example is a last resort, for required values only.
    match = _EXAMPLE_RE.search(message) if spec.get("required") else None
    if match:
        try:
            return json.loads(match.group("value").replace("'", '"'))
        except ValueError:
            return None
    return None
