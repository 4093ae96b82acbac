"""An evaluation case: the files of its directory, validated into a `Case`.

A case directory holds:

- `case.yaml`: description, tags, `holdout`, optional `catalog` (a catalog file
  in this directory, bundled format; default: the bundled catalog),
  `datastorage_fault` (an outage injected into the Data Storage server) and,
  for a case captured from a real investigation, `captured` (its provenance,
  decision and reported outcome: `hapi_grpc.cases.provenance`).
- `request.json`: the AnalyzeIncidentRequest, proto JSON mapping (as `examples/`).
- `expected.yaml`: the outcome that is scored (see `Expected`); a captured
  case's is derived from what is known (`hapi_grpc.cases.labels`) until an
  operator labels it (`hapi-grpc cases review`).
- `cluster.yaml` (optional): Kubernetes objects, one YAML document each, with
  their `status`; `ownerReferences` and `involvedObject` may omit `uid` and
  `apiVersion` (filled in when loaded). Any kind the test API server serves
  may appear (found through its discovery: cluster-scoped or namespaced, core
  or grouped); without `apiVersion` a kind gets its preferred version. A
  custom resource needs its CustomResourceDefinition in the same file (the
  cert-manager kinds excepted: the harness installs those). `status` is
  written through the status subresource where the kind has one, as the
  controllers that do not run in the test cluster would have; ResourceQuota
  needs `status.hard` and `status.used` (no controller computes them).
  Secret `data` is base64, as in the API; the tools never show it.
- `logs/<namespace>/<pod>/<container>.log` and `<container>.previous.log`
  (optional): the text the test kubelet serves for that container.
- `node_stats/<node>.json` (optional): the kubelet stats summary (`/stats/summary`)
  the test kubelet answers for that Node through the API server's node proxy (what
  fills its disk: images, container logs, writable layers, node-local volumes).
- `metrics.om` (optional): OpenMetrics text; each sample's timestamp is
  seconds relative to the start of the run (`-600` = ten minutes before).
- `alerts.yaml` (optional): alerts posted to Alertmanager
  (`[{labels: {...}, annotations: {...}}]`).
- `history.yaml` (optional): the target's past remediations, each a
  ReportRemediationOutcomeRequest (proto JSON mapping) with `minutesAgo`
  instead of `completedAt`; reported to the server before each run (with a
  remediation id of that run's own), so its history tool and history check
  read them. A report that ran something but names no workflow (`executed`)
  gives its `actionType` instead (Data Storage's history names only that): the
  replay reports a workflow of that type from the case's catalog. A case with
  history gets a server of its own.

How a replay loads them into a test API server: `evals/harness/cases.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from hapi_grpc.cases.expected import (
    Expected,
    Strict,
)
from hapi_grpc.cases.provenance import Provenance


class CaseError(ValueError):
    """A case file is missing or malformed; the message names the file."""


DataStorageEndpoint = Literal["search", "schema", "workflow"]


class DataStorageFault(Strict):
    """Data Storage answers `status` to every request to these endpoints.

    Failing only `schema` and `workflow` is an outage in the middle of an
    investigation: the search worked, validation cannot reach the catalog
    (and, unlike a request count, does not depend on what a cache kept).
    """

    endpoints: tuple[DataStorageEndpoint, ...] = ("search", "schema", "workflow")
    status: int = Field(503, ge=500, le=599)


class CaseMeta(Strict):
    description: str = Field(min_length=1)
    tags: tuple[str, ...] = ()
    holdout: bool = False
    catalog: str | None = None
    datastorage_fault: DataStorageFault | None = None
    captured: Provenance | None = None


class LogFile(Strict):
    namespace: str
    pod: str
    container: str
    previous: bool
    text: str


class Case(Strict):
    name: str
    path: Path
    meta: CaseMeta
    request: dict[str, Any]
    expected: Expected
    objects: tuple[dict[str, Any], ...] = ()
    logs: tuple[LogFile, ...] = ()
    metrics: str | None = None
    alerts: tuple[dict[str, Any], ...] = ()
    history: tuple[dict[str, Any], ...] = ()  # outcome reports, `minutesAgo` each
    node_stats: dict[str, dict[str, Any]] = Field(default_factory=dict)  # node -> summary

    @property
    def catalog_file(self) -> Path | None:
        return self.path / self.meta.catalog if self.meta.catalog else None

    @property
    def tags(self) -> tuple[str, ...]:
        return self.meta.tags


def _read_yaml(path: Path, *, many: bool = False) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
        if many:
            return [doc for doc in yaml.safe_load_all(text) if doc is not None]
        return yaml.safe_load(text)
    except OSError as exc:
        raise CaseError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CaseError(f"{path}: not valid YAML: {exc}") from None


def _model(model: type[BaseModel], data: Any, path: Path) -> Any:
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise CaseError(f"{path}: {problems}") from None


def _objects(path: Path) -> tuple[dict[str, Any], ...]:
    docs = _read_yaml(path, many=True)
    for index, doc in enumerate(docs):
        meta = doc.get("metadata") if isinstance(doc, dict) else None
        if not isinstance(meta, dict) or not doc.get("kind") or not meta.get("name"):
            raise CaseError(f"{path}: document {index} needs kind and metadata.name")
        kind, api_version = doc["kind"], doc.get("apiVersion")
        if not isinstance(kind, str) or not kind.isalnum() or not kind[0].isupper():
            raise CaseError(f"{path}: document {index}: kind {kind!r} is not a Kubernetes kind")
        if api_version is not None and (
            not isinstance(api_version, str)
            or not api_version.rpartition("/")[2].startswith("v")
            or api_version.count("/") > 1
        ):
            raise CaseError(
                f"{path}: document {index} ({kind}): apiVersion {api_version!r} is not"
                " `version` or `group/version`"
            )
    return tuple(docs)


def _logs(directory: Path) -> tuple[LogFile, ...]:
    found = []
    for file in sorted(directory.rglob("*.log")):
        parts = file.relative_to(directory).parts
        if len(parts) != 3:
            raise CaseError(f"{file}: logs go in logs/<namespace>/<pod>/<container>.log")
        container, previous = file.name.removesuffix(".log"), False
        if container.endswith(".previous"):
            container, previous = container.removesuffix(".previous"), True
        text = file.read_text(encoding="utf-8")
        found.append(
            LogFile(
                namespace=parts[0], pod=parts[1], container=container, previous=previous, text=text
            )
        )
    return tuple(found)


def _node_stats(directory: Path) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for file in sorted(directory.glob("*.json")):
        try:
            summary = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise CaseError(f"{file}: not a JSON stats summary: {exc}") from None
        if not isinstance(summary, dict) or not isinstance(summary.get("node"), dict):
            raise CaseError(f"{file}: a kubelet stats summary with a `node` object")
        found[file.stem] = summary
    return found


def load_case(directory: Path) -> Case:
    """One case; `CaseError` names the file at fault."""
    meta = _model(CaseMeta, _read_yaml(directory / "case.yaml"), directory / "case.yaml")
    expected = _model(
        Expected, _read_yaml(directory / "expected.yaml"), directory / "expected.yaml"
    )
    request_path = directory / "request.json"
    try:
        request = json.loads(request_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CaseError(f"{request_path}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise CaseError(f"{request_path}: not valid JSON: {exc}") from None
    if not isinstance(request, dict) or "incident" not in request:
        raise CaseError(f"{request_path}: an AnalyzeIncidentRequest with an `incident`")
    _check_request(request, request_path)
    if meta.catalog:
        _check_catalog(directory / meta.catalog)
    alerts = _read_yaml(directory / "alerts.yaml") if (directory / "alerts.yaml").exists() else []
    if not isinstance(alerts, list) or not all(
        isinstance(a, dict) and isinstance(a.get("labels"), dict) for a in alerts
    ):
        raise CaseError(f"{directory / 'alerts.yaml'}: a list of alerts with `labels`")
    metrics_path = directory / "metrics.om"
    case = Case(
        name=directory.name,
        path=directory,
        meta=meta,
        request=request,
        expected=expected,
        objects=_objects(directory / "cluster.yaml")
        if (directory / "cluster.yaml").exists()
        else (),
        logs=_logs(directory / "logs") if (directory / "logs").is_dir() else (),
        metrics=metrics_path.read_text(encoding="utf-8") if metrics_path.exists() else None,
        alerts=tuple(alerts),
        history=_history(directory / "history.yaml"),
        node_stats=_node_stats(directory / "node_stats")
        if (directory / "node_stats").is_dir()
        else {},
    )
    return case


def _check_request(request: dict[str, Any], path: Path) -> None:
    from google.protobuf import json_format

    from hapi.v1 import service_pb2

    try:
        json_format.ParseDict(request, service_pb2.AnalyzeIncidentRequest())
    except json_format.ParseError as exc:
        raise CaseError(f"{path}: not an AnalyzeIncidentRequest: {exc}") from None


def _history(path: Path) -> tuple[dict[str, Any], ...]:
    """The outcome reports of `history.yaml`, each checked as a request."""
    if not path.exists():
        return ()
    from google.protobuf import json_format

    from hapi.v1 import outcome_pb2

    reports = _read_yaml(path)
    if not isinstance(reports, list):
        raise CaseError(f"{path}: a list of outcome reports")
    for index, report in enumerate(reports):
        ago = report.get("minutesAgo") if isinstance(report, dict) else None
        if isinstance(ago, bool) or not isinstance(ago, int | float) or ago < 0:
            raise CaseError(f"{path}: report {index} needs `minutesAgo` (a number >= 0)")
        body = {k: v for k, v in report.items() if k not in ("minutesAgo", "actionType")}
        action_type = report.get("actionType")
        if "actionType" in report and (
            not isinstance(action_type, str) or not action_type or "executed" in report
        ):
            raise CaseError(
                f"{path}: report {index}: `actionType` (a non-empty string) is for a report"
                " without `executed`"
            )
        try:
            json_format.ParseDict(body, outcome_pb2.ReportRemediationOutcomeRequest())
        except json_format.ParseError as exc:
            raise CaseError(f"{path}: report {index}: {exc}") from None
    return tuple(reports)


def _check_catalog(path: Path) -> None:
    from hapi_grpc.adapters.catalog.loader import CatalogFileError, load_catalog_file

    try:
        load_catalog_file(path)
    except CatalogFileError as exc:
        raise CaseError(str(exc)) from None
