"""`Capture`: each finished investigation written as an evaluation case.

`Application` asks for a recorder per investigation (`recorder`), hands it to
the engine (which hands it to the toolsets it opens), and calls `finished`
with the result once the answer is ready; `outcome` follows a reported
outcome. Neither waits for anything: the workflows the searches returned are
fetched from the catalog (unless all were in the last 30 s) in a task of their
own (at most as many tasks as the writer's queue holds: past that a case is
dropped and counted like a full queue's, so a storm pins no more investigations
than the queue would), and everything else happens on the `CaseWriter` thread.

A case directory is `<remediation id>-<digest>`, the digest of the id within
its tenant (`Tenant.key`, and the recovery attempt): another tenant's id is
another directory, and an outcome reaches only its own tenant's case.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from datetime import UTC, datetime
from typing import Any

from hapi_grpc import __version__
from hapi_grpc.capture import case_files
from hapi_grpc.capture.decision_json import decision_json
from hapi_grpc.capture.recorder import CaseRecorder
from hapi_grpc.capture.request_json import request_json
from hapi_grpc.capture.segments import Catalog
from hapi_grpc.capture.writer import COUNTS, CaseWriter, Outcome
from hapi_grpc.cases import labels
from hapi_grpc.cases.provenance import Decision, plain
from hapi_grpc.domain import result as r
from hapi_grpc.domain.catalog import Workflow, WorkflowCatalog
from hapi_grpc.domain.deadline import detached_context
from hapi_grpc.domain.history import OutcomeReport
from hapi_grpc.domain.incident import Incident
from hapi_grpc.domain.tenancy import Caller, Tenant
from hapi_grpc.toolsets.registry import prompt_template_hash

__all__ = ["Capture", "case_name"]

log = logging.getLogger(__name__)

MAX_WORKFLOWS = 20  # whole workflows fetched for a case's catalog
WORKFLOW_SECONDS = 2.0  # the longest a case's catalog fetches (concurrent) may take
FETCHED_SECONDS = 30.0  # a workflow fetched for a case serves the next cases that long
_FETCHED_KEPT = 256
_CATALOGS_KEPT = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def case_name(tenant: Tenant, remediation_id: str, recovery_attempt: int = 0) -> str:
    """The directory of a remediation's case: readable, and unique per tenant."""
    key = tenant.key(remediation_id) + (f"#recovery-{recovery_attempt}" if recovery_attempt else "")
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{_UNSAFE.sub('_', remediation_id)[:80]}-{digest}"


class Capture:
    """Writes cases through `writer`; `catalog` gives the workflows searched whole."""

    def __init__(
        self, writer: CaseWriter, catalog: WorkflowCatalog, provider: str, model: str
    ) -> None:
        self.writer = writer
        self._catalog = catalog
        self._provider = provider
        self._model = model
        # Computed here, at startup: it renders the prompt with every toolset (imported).
        self._prompt_hash = prompt_template_hash()
        self._pending: set[asyncio.Task[None]] = set()
        self._fetched: dict[str, tuple[float, Workflow]] = {}  # id -> (when, workflow)
        self._fetching: dict[str, asyncio.Future[Workflow]] = {}
        # Catalog files rendered (writer thread only): a storm searches the same workflows.
        self._catalogs: dict[tuple[tuple[str, str], ...], tuple[list[Workflow], Catalog]] = {}

    def recorder(self) -> CaseRecorder:
        return CaseRecorder()

    def finished(
        self, incident: Incident, caller: Caller, result: r.AnalysisResult, recorder: CaseRecorder
    ) -> None:
        """Capture the investigation; returns at once."""
        ids = list(recorder.workflow_ids)[:MAX_WORKFLOWS]
        kept = self._kept(ids)
        if kept is not None:  # every workflow fetched lately: nothing to wait for
            self._offer(incident, caller, result, recorder, kept)
            return
        if len(self._pending) >= self.writer.queue_size:
            COUNTS["dropped"].inc()
            return
        task = asyncio.create_task(
            self._finish(incident, caller, result, recorder, ids), context=detached_context()
        )
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def outcome(self, report: OutcomeReport) -> None:
        """The reported outcome joins its tenant's case, when there is one."""
        name = case_name(report.tenant, report.remediation_id, max(report.attempt - 1, 0))
        self.writer.offer(Outcome(name, _outcome_json(report), time.time()))

    async def close(self) -> None:
        """Finish what was captured (briefly: the server is shutting down)."""
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=WORKFLOW_SECONDS)
        for task in list(self._pending):
            task.cancel()
        await asyncio.to_thread(self.writer.close, 3.0)

    async def _finish(
        self,
        incident: Incident,
        caller: Caller,
        result: r.AnalysisResult,
        recorder: CaseRecorder,
        ids: list[str],
    ) -> None:
        self._offer(incident, caller, result, recorder, await self._workflows(ids))

    def _offer(
        self,
        incident: Incident,
        caller: Caller,
        result: r.AnalysisResult,
        recorder: CaseRecorder,
        workflows: list[Workflow],
    ) -> None:
        attempt = incident.recovery.attempt_number if incident.recovery else 0
        tenant = caller.tenant(incident.signal.namespace)
        name = case_name(tenant, incident.remediation_id, attempt)
        at = time.time()

        def render() -> tuple[bytes, Catalog | None]:
            return self._render(name, incident, result, recorder, workflows, at)

        self.writer.offer((name, render))

    def _kept(self, ids: list[str]) -> list[Workflow] | None:
        """The workflows of `ids` as fetched in the last `FETCHED_SECONDS`; None when
        one is not (a storm's investigations search the same few workflows)."""
        now = time.monotonic()
        found = []
        for workflow_id in ids:
            entry = self._fetched.get(workflow_id)
            if entry is None or now - entry[0] > FETCHED_SECONDS:
                return None
            found.append(entry[1])
        return found

    async def _workflows(self, ids: list[str]) -> list[Workflow]:
        """The workflows fetched within one `WORKFLOW_SECONDS`, in `ids` order; the
        case is written without those that failed or were late."""
        if not ids:
            return []
        tasks = [self._fetch(i) for i in ids]
        done: set[asyncio.Future[Workflow]] = set()
        try:
            done, _ = await asyncio.wait(tasks, timeout=WORKFLOW_SECONDS)
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()  # late: not waited for
        found = []
        for task in tasks:
            exc = task.exception() if task in done and not task.cancelled() else TimeoutError()
            if exc is None:
                found.append(task.result())
                if len(self._fetched) >= _FETCHED_KEPT:
                    self._fetched.clear()
                self._fetched[task.result().workflow_id] = (time.monotonic(), task.result())
            else:
                log.info("workflow not captured", extra={"error": type(exc).__name__})
        return found

    def _fetch(self, workflow_id: str) -> asyncio.Future[Workflow]:
        """The fetch of a workflow, shared by the cases waiting for it: a storm's cases
        wait for the same few, and then hold the same objects (`_same`)."""
        found = self._fetching.get(workflow_id)
        if found is None:
            found = asyncio.ensure_future(self._catalog.get_workflow(workflow_id))
            self._fetching[workflow_id] = found
            found.add_done_callback(lambda done: self._fetched_one(workflow_id, done))
        return found

    def _fetched_one(self, workflow_id: str, done: asyncio.Future[Workflow]) -> None:
        if self._fetching.get(workflow_id) is done:
            del self._fetching[workflow_id]

    def _catalog_record(self, workflows: list[Workflow]) -> Catalog:
        """The workflows as the catalog file's `workflows`, as a segment's catalog
        record; rendered once."""
        key = tuple((w.workflow_id, w.version) for w in workflows)
        found = self._catalogs.get(key)
        if found is None or not _same(found[0], workflows):
            dumped = [w.model_dump(mode="json", exclude_defaults=True) for w in workflows]
            text = _json(case_files.redacted(dumped))
            ref = hashlib.sha256(text.encode()).hexdigest()[:16]
            record = f'{{"catalog_ref":"{ref}","catalog":{text}}}\n'.encode()
            found = (workflows, Catalog(ref, record))
            if len(self._catalogs) >= _CATALOGS_KEPT:
                self._catalogs.clear()
            self._catalogs[key] = found
        return found[1]

    def _render(
        self,
        name: str,
        incident: Incident,
        result: r.AnalysisResult,
        recorder: CaseRecorder,
        workflows: list[Workflow],
        at: float,
    ) -> tuple[bytes, Catalog | None]:
        """The case's record (its content as data, redacted: `unpack` writes its files)
        and the record of the workflows it was offered."""
        metrics, unnamed = case_files.metrics_om(recorder, at)
        signal = incident.signal
        description = (
            f"{signal.signal_type} on {signal.namespace}/{signal.resource_kind}/"
            f"{signal.resource_name}"
        )
        if unnamed:
            description += f" ({unnamed} computed series not captured)"
        # Redacted together (one pass over their texts when nothing is to be redacted),
        # and written in the text their redaction gave.
        (decision, decided), (_, request), (description, _) = case_files.redacted_json(
            decision_json(result), request_json(incident), description
        )
        case = {
            "description": description,
            "expected": labels.derived_expected(
                _chosen(result, decision), None, datetime.fromtimestamp(at, UTC)
            ),
            "objects": case_files.cluster_objects(recorder),
            "logs": case_files.log_files(recorder),
            "node_stats": {
                node: case_files.redacted(summary) for node, summary in recorder.node_stats.items()
            },
            "metrics": metrics,
            "alerts": case_files.alerts(recorder),
            "history": case_files.history(recorder, at),
        }
        captured = f'{_json(self._provenance(incident, at))[:-1]},"decision":{decided}}}'
        line = (
            f'{{"name":{_json(name)},"at":{_json(at)},"case":{{"captured":{captured},'
            f'"request":{request},{_json(case)[1:]}}}'
        )
        if not workflows:
            return (line + "\n").encode(), None
        # Replayed with the workflows this investigation was offered (one record a segment).
        catalog = self._catalog_record(workflows)
        return f'{line[:-1]},"catalog_ref":"{catalog.ref}"}}\n'.encode(), catalog

    def _provenance(self, incident: Incident, at: float) -> dict[str, Any]:
        """The `captured` block (`Provenance`, as written: the service's own output is
        not parsed back) but its decision."""
        stamp = datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")
        captured = {
            "at": stamp,
            "remediation_id": incident.remediation_id,
            "service_version": __version__,
            "provider": self._provider,
            "model": self._model,
            "prompt_hash": self._prompt_hash,
        }
        return {k: v for k, v in captured.items() if v}


def _chosen(result: r.AnalysisResult, decision: dict[str, Any]) -> Decision:
    """The decision `expected.yaml` is derived from, out of the (redacted) decision."""
    selected = decision.get("selectedWorkflow") or {}
    if result.needs_human_review or not selected.get("workflowId"):
        reason = result.human_review_reason
        return Decision(None, review_reason=reason.value.lower() if reason else "")
    return Decision(selected["workflowId"], plain(selected.get("parameters") or {}))


def _same(kept: list[Workflow], workflows: list[Workflow]) -> bool:
    """The same workflows: the same objects (a catalog in memory), or equal ones."""
    if len(kept) == len(workflows) and all(a is b for a, b in zip(kept, workflows, strict=True)):
        return True
    return kept == workflows


_json = case_files.json_text


def _outcome_json(report: OutcomeReport) -> dict[str, Any]:
    """The report as the ReportRemediationOutcomeRequest it came in (proto JSON)."""
    target = report.target
    body: dict[str, Any] = {
        "remediationId": report.remediation_id,
        "attempt": report.attempt,
        "target": {
            k: v
            for k, v in {
                "namespace": target.namespace,
                "kind": target.kind,
                "name": target.name,
                "apiGroup": target.api_group,
            }.items()
            if v
        },
    }
    if report.executed is not None:
        body["executed"] = {
            "workflowId": report.executed.workflow_id,
            "version": report.executed.version,
            "parameters": dict(report.executed.parameters),
        }
    if report.failure is not None:
        body["failed"] = {"reason": report.failure.reason, "message": report.failure.message}
    elif report.declined_reason or report.executed is None:
        body["declined"] = {"reason": report.declined_reason}
    else:
        body["succeeded"] = {}
    if report.signal_cleared is not None:
        body["signalCleared"] = report.signal_cleared
    return case_files.redacted(body)
