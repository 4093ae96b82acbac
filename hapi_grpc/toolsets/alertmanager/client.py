"""Read-only Alertmanager client: the alerts firing now for a namespace or label set.

Design notes: docs/internals.md (`toolsets/alertmanager/client.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hapi_grpc.adapters.http.transport import Transport
from hapi_grpc.domain.sensitive import clip, redact
from hapi_grpc.toolsets.prometheus import PrometheusSettings
from hapi_grpc.toolsets.prometheus.source import (
    MetricsSource,
    MetricsUnavailableError,
    QueryRefusedError,
    json_body,
)

__all__ = ["AlertmanagerClient", "AlertmanagerLimits", "matcher"]

_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_ANNOTATIONS = ("summary", "description", "message", "runbook_url")
_SKIPPED_LABELS = frozenset({"alertname", "severity"})


def matcher(name: str, value: str) -> str:
    """An equality matcher `name="value"` with the value quoted safely."""
    if not _LABEL_NAME.match(name):
        raise QueryRefusedError(f"{clip(name, 60)!r} is not a label name")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{name}="{escaped}"'


@dataclass(frozen=True)
class AlertmanagerLimits:
    max_alerts: int = 20
    max_alert_names: int = 20
    max_labels: int = 15
    max_text: int = 300

    def __post_init__(self) -> None:
        if min(self.max_alerts, self.max_alert_names, self.max_labels, self.max_text) < 1:
            raise ValueError("Alertmanager limits must be >= 1")


class AlertmanagerClient:
    """Active-alert lookups against one Alertmanager (API v2)."""

    def __init__(self, source: MetricsSource, limits: AlertmanagerLimits | None = None) -> None:
        self.limits = limits or AlertmanagerLimits()
        self._source = source

    @classmethod
    def of(
        cls,
        url: str,
        credentials: PrometheusSettings,
        timeout: float,
        *,
        transport: Transport | None = None,
    ) -> AlertmanagerClient:
        """The client of `url`, reached with the `prometheus` toolset's credentials and
        headers (ValueError naming a malformed setting)."""
        try:
            return cls(
                MetricsSource("Alertmanager", url, credentials, timeout, transport=transport)
            )
        except ValueError as exc:
            raise ValueError(f"HAPI_PROMETHEUS_*: {exc}") from None

    async def close(self) -> None:
        await self._source.close()

    async def active_alerts(
        self,
        labels: Mapping[str, str] | None = None,
        *,
        namespace: str | None = None,
        timeout: float | None = None,
        on_alerts: Callable[[list[dict[str, Any]]], None] | None = None,
        readable: Callable[[str], bool] = lambda namespace: True,
    ) -> dict[str, Any]:
        """Summary of the active, unsilenced, uninhibited alerts matching every label
        given; `on_alerts` sees the alerts as Alertmanager answered them. An alert whose
        `namespace` label is not `readable` is left out (one without that label is
        about the cluster and kept)."""
        wanted = dict(labels or {})
        if namespace is not None:
            wanted["namespace"] = namespace
        params = [("active", "true"), ("silenced", "false"), ("inhibited", "false")]
        params += [("filter", matcher(k, v)) for k, v in sorted(wanted.items())]
        resp = await self._source.get(
            "/api/v2/alerts", params, timeout=self._source.http.timeout(timeout)
        )
        text = resp.snippet()
        if resp.status == 400:
            raise QueryRefusedError(f"Alertmanager refused the filter: {text}")
        if not resp.ok:
            detail = f": {text}" if text else ""
            raise MetricsUnavailableError(f"Alertmanager answered HTTP {resp.status}{detail}")
        body = json_body(resp)
        if not isinstance(body, list) or not all(
            isinstance(a, dict) and isinstance(a.get("labels"), dict) for a in body
        ):
            raise MetricsUnavailableError("Alertmanager answered, but not with a list of alerts")
        if on_alerts is not None:
            on_alerts(body)
        kept = [
            a
            for a in body
            if not a["labels"].get("namespace") or readable(str(a["labels"]["namespace"]))
        ]
        summary = self._summarize(kept, wanted)
        if len(kept) < len(body):
            summary["note"] = "alerts of namespaces this investigation may not read are left out"
        return summary

    def _summarize(self, alerts: list[dict[str, Any]], wanted: Mapping[str, str]) -> dict[str, Any]:
        lim = self.limits
        ordered = sorted(
            alerts,
            key=lambda a: (str(a.get("startsAt", "")), str(a.get("fingerprint", ""))),
            reverse=True,
        )
        names = Counter(str(a["labels"].get("alertname", "")) for a in alerts)
        by_name = dict(sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[: lim.max_alert_names])
        shown = [self._alert(a) for a in ordered[: lim.max_alerts]]
        out: dict[str, Any] = {
            "matchers": dict(sorted(wanted.items())),
            "total": len(alerts),
            "by_alertname": by_name,
            "alerts": shown,
        }
        if len(alerts) > len(shown):
            out["alerts_not_shown"] = len(alerts) - len(shown)
        return out

    def _alert(self, alert: Mapping[str, Any]) -> dict[str, Any]:
        lim = self.limits
        labels = {str(k): str(v) for k, v in alert["labels"].items()}
        status = alert.get("status") if isinstance(alert.get("status"), dict) else {}
        out: dict[str, Any] = {
            "alertname": clip(labels.get("alertname", ""), lim.max_text),
            "severity": clip(labels.get("severity", ""), 40),
            "state": str((status or {}).get("state", "")),
            "starts_at": clip(str(alert.get("startsAt", "")), 40),
            "labels": {
                k: clip(redact(v), lim.max_text)
                for k, v in sorted(labels.items())
                if k not in _SKIPPED_LABELS
            },
        }
        if len(out["labels"]) > lim.max_labels:
            out["labels"] = dict(list(out["labels"].items())[: lim.max_labels])
        annotations = alert.get("annotations")
        if isinstance(annotations, dict):
            for key in _ANNOTATIONS:
                if isinstance(annotations.get(key), str):
                    text = " ".join(annotations[key].split())
                    out[key] = clip(redact(text), lim.max_text)
        return out
