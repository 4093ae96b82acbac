"""The files of a captured case, rendered from what an investigation read.

Everything written passes the service's own redaction (`domain.sensitive`):
every string through `redact` (registered secrets, credential shapes), every
literal under a secret-looking key, or beside a `name` naming a secret, hidden
(`hides_value`; the `name` and `key` that name things are kept, so objects stay
valid for the API server). On top of that, for Kubernetes objects:

- a Secret keeps its keys, never their data (each value empty);
- `managedFields`, the server-set identity (`uid`, `resourceVersion`, ...)
  and the `last-applied-configuration` annotation (a copy of the whole object,
  a Secret's data included) are dropped; `status` is kept;
- a ConfigMap is present only when a tool read it, its values redacted;
- an Event is written in the core API's form only (events.k8s.io serves the same).

Run on the capture's writer thread, never on the event loop (the texts it
redacted lately are kept there, for that thread only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from hapi_grpc.capture.recorder import CaseRecorder
from hapi_grpc.cases.labels import dump_yaml
from hapi_grpc.domain.sensitive import (
    needs_redaction,
    redact,
    redact_mapping,
    redaction_generation,
)

__all__ = [
    "alerts",
    "alerts_yaml",
    "cluster_objects",
    "cluster_yaml",
    "history",
    "history_yaml",
    "json_text",
    "log_files",
    "metrics_om",
    "redacted",
    "redacted_json",
]

_SERVER_SET = frozenset(
    {"managedFields", "uid", "resourceVersion", "selfLink", "generation", "creationTimestamp"}
)
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_MAX_DEPTH = 64  # deeper than any object the API server keeps


def redacted(value: Any) -> Any:
    """A copy of a JSON value with the redaction above (types kept, strings redacted),
    or `value` itself when that copy would equal it (`redacted_json`)."""
    return redacted_json(value)[0][0]


def redacted_json(*values: Any) -> list[tuple[Any, str]]:
    """Each of `values` redacted (`redacted`), with its JSON text. When their texts
    prove the copies would equal them (`needs_redaction`: nothing in them to redact
    or hide, in one pass over the texts rather than a call per key; fewer brackets
    than the depth bound), the values themselves and their texts."""
    try:
        texts = [json_text(value) for value in values]
    except (TypeError, ValueError):  # not plain JSON: walked
        texts = []
    if (
        texts
        and all(text.count("{") + text.count("[") <= _MAX_DEPTH for text in texts)
        and not needs_redaction("\n".join(texts))
    ):
        return list(zip(values, texts, strict=True))
    kept = [
        redact_mapping(value, max_depth=_MAX_DEPTH, keep_shape=True, text=_redact_kept)
        for value in values
    ]
    return [(value, json_text(value)) for value in kept]


def json_text(value: Any) -> str:
    """`value` as compact JSON, as the segments hold it."""
    return _ENCODER.encode(value)


# One encoder for every text of every case (`json.dumps` with options builds one a call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


# What `redact` gave the short texts of the cases written lately: a storm's cases
# repeat most of their texts (warnings, reasons, labels, catalog descriptions).
# Valid while the registered secrets stay the same (`redaction_generation`).
_KEPT_TEXTS = 8192
_KEPT_CHARS = 1024
_kept: dict[str, str] = {}
_kept_generation = [-1]


def _redact_kept(text: str) -> str:
    if len(text) > _KEPT_CHARS:
        return redact(text)
    generation = redaction_generation()
    if generation != _kept_generation[0] or len(_kept) >= _KEPT_TEXTS:
        _kept.clear()
        _kept_generation[0] = generation
    found = _kept.get(text)
    if found is None:
        found = _kept[text] = redact(text)
    return found


def _object(api_version: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _SERVER_SET}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != _LAST_APPLIED}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    if meta.get("ownerReferences"):
        meta["ownerReferences"] = [
            {k: v for k, v in ref.items() if k != "uid"} for ref in meta["ownerReferences"]
        ]
    out = {"apiVersion": obj.get("apiVersion") or api_version, "kind": kind, "metadata": meta}
    out |= {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    if kind == "Secret":
        keys = [*(obj.get("data") or {}), *(obj.get("stringData") or {})]
        out.pop("stringData", None)
        out["data"] = dict.fromkeys(keys, "")
    for subject in ("involvedObject", "regarding"):
        ref = out.get(subject)
        if isinstance(ref, dict):
            out[subject] = {k: v for k, v in ref.items() if k not in ("uid", "resourceVersion")}
    return redacted(out)


def cluster_yaml(recorder: CaseRecorder) -> str:
    """Every object read, once (the last answer for it), as YAML documents."""
    return dump_yaml(cluster_objects(recorder), documents=True)


def cluster_objects(recorder: CaseRecorder) -> list[dict[str, Any]]:
    """Every object read, once (the last answer for it), redacted."""
    found: dict[tuple[str, str, str, str], tuple[dict[str, Any], str, str]] = {}
    for rtype, obj in recorder.objects:
        if rtype.group == "events.k8s.io":
            continue  # the same Events the core API serves: written once, in its form
        kind = str(obj.get("kind") or rtype.kind)
        meta = obj.get("metadata") or {}
        key = (rtype.api_version, kind, str(meta.get("namespace") or ""), str(meta.get("name")))
        found[key] = obj, rtype.api_version, kind
    return [_object(api_version, kind, obj) for obj, api_version, kind in found.values()]


def log_files(recorder: CaseRecorder) -> dict[str, str]:
    """`logs/<namespace>/<pod>/<container>[.previous].log`: the lines read, redacted."""
    files: dict[str, str] = {}
    for log in recorder.logs:
        suffix = ".previous.log" if log.previous else ".log"
        path = f"logs/{log.namespace}/{log.pod}/{log.container}{suffix}"
        text = "\n".join(_redact_kept(line) for line in log.text.splitlines())
        files[path] = text + "\n" if text else ""
    return files


def _label_value(value: str) -> str:
    return _redact_kept(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)).removesuffix(".0")


def metrics_om(recorder: CaseRecorder, now: float) -> tuple[str, int]:
    """OpenMetrics text of the named series the queries answered (timestamps in
    seconds relative to `now`), and how many series without a metric name
    (expressions' results, which no raw sample reproduces) were left out."""
    families: dict[str, dict[tuple[tuple[str, str], ...], dict[float, float]]] = {}
    unnamed = 0
    for result in recorder.series:
        for series in result.series:
            name = series.labels.get("__name__")
            if not name:
                unnamed += 1
                continue
            labels = tuple(sorted((k, v) for k, v in series.labels.items() if k != "__name__"))
            samples = families.setdefault(name, {}).setdefault(labels, {})
            samples.update(series.samples)
    lines = []
    for name, by_labels in sorted(families.items()):
        lines.append(f"# TYPE {name} gauge")
        for labels, samples in sorted(by_labels.items()):
            shown = ",".join(f'{k}="{_label_value(v)}"' for k, v in labels)
            head = f"{name}{{{shown}}}" if shown else name
            for stamp, value in sorted(samples.items()):
                lines.append(f"{head} {_number(value)} {round(stamp - now, 3):g}")
    if lines:
        lines.append("# EOF")
    return ("\n".join(lines) + "\n" if lines else ""), unnamed


def alerts_yaml(recorder: CaseRecorder) -> str:
    """`alerts` as YAML ("" when none)."""
    found = alerts(recorder)
    return dump_yaml(found) if found else ""


def alerts(recorder: CaseRecorder) -> list[dict[str, Any]]:
    """The alerts Alertmanager answered, once each, with their labels and annotations."""
    seen: dict[str, dict[str, Any]] = {}
    for alert in recorder.alerts:
        labels = alert.get("labels") or {}
        key = str(alert.get("fingerprint") or json.dumps(labels, sort_keys=True))
        seen[key] = {"labels": labels, "annotations": alert.get("annotations") or {}}
    return redacted(list(seen.values())) if seen else []


_RESULTS = {"Success": "succeeded", "Failed": "failed", "Escalated": "declined"}


def _report(target: str, entry: Any, now: float) -> dict[str, Any]:
    namespace, _, rest = target.partition("/")
    kind, _, name = rest.partition("/")
    report: dict[str, Any] = {
        "remediationId": _safe_id(entry.remediation_uid),
        "attempt": max(int(entry.attempt), 0),
        "target": {"namespace": namespace, "kind": kind, "name": name},
    }
    result = _RESULTS[str(entry.outcome)]
    if result != "declined" and entry.workflow_id:
        report["executed"] = {
            "workflowId": entry.workflow_id,
            "version": entry.workflow_version,
            "parameters": dict(entry.parameters),
        }
    elif result != "declined" and entry.action_type:
        # Data Storage names what ran by its action type only: kept as such, the
        # replay reports a workflow of that type from its own catalog.
        report["actionType"] = entry.action_type
    elif result != "declined":
        result = "declined"  # nothing known of what ran: recorded as declined
    if result == "failed":
        report["failed"] = {"reason": entry.failure_reason or "Unknown"}
    elif result == "declined":
        report["declined"] = {"reason": entry.assessment_reason or ""}
    else:
        report["succeeded"] = {}
    if entry.signal_resolved is not None:
        report["signalCleared"] = entry.signal_resolved
    if entry.pre_spec_hash:
        report["preRemediationSpecHash"] = entry.pre_spec_hash
    if entry.post_spec_hash:
        report["postRemediationSpecHash"] = entry.post_spec_hash
    report["minutesAgo"] = max(round((now - entry.completed_at) / 60.0, 1), 0.0)
    return report


def _safe_id(text: str) -> str:
    kept = "".join(c if c.isalnum() or c in "._-" else "-" for c in text)[:200]
    return kept if kept[:1].isalnum() else f"h{kept}"


def history_yaml(recorder: CaseRecorder, now: float) -> str:
    """`history` as YAML ("" when none)."""
    found = history(recorder, now)
    return dump_yaml(found) if found else ""


def history(recorder: CaseRecorder, now: float) -> list[dict[str, Any]]:
    """The target histories read, as the outcome reports a replay sends first."""
    reports: dict[str, dict[str, Any]] = {}
    for context in recorder.history:
        entries: Iterable[Any] = (*context.tier2, *context.tier1)
        for entry in entries:
            report = _report(context.target_resource, entry, now)
            reports[f"{report['remediationId']}#{report['attempt']}"] = report
    return redacted(list(reports.values())) if reports else []
