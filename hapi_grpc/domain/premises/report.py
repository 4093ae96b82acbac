"""How one catalog workflow is judged, in one line (`hapi-grpc premises check --catalog`)."""

from __future__ import annotations

from hapi_grpc.domain.catalog import Workflow
from hapi_grpc.domain.premises.book import PremiseBook

__all__ = ["describe_workflow"]


def describe_workflow(book: PremiseBook, workflow: Workflow) -> str:
    """`<id>: <type> -> pack <type> (roles ...) + N own conditions`, or why it is unverified."""
    specs = workflow.parameters
    premises = book.premises(
        workflow.workflow_id,
        workflow,
        parameters=[s.name for s in specs],
        declared_roles={s.name: s.role for s in specs if s.role},
        detected_labels=workflow.labels.detected_labels,
    )
    kind = repr(premises.action_type) if premises.action_type else "no action type"
    own = len(premises.own_preconditions) + len(premises.own_invariants)
    if premises.read_only:
        judged = "read-only"
    elif premises.unverified:
        known = "unknown action type" if premises.action_type else "no action type"
        judged = f"UNVERIFIED ({known}: no premise pack, nothing declared): review"
    elif premises.pack is None:
        judged = f"no pack; {own} own condition(s)"
    else:
        count = len(premises.pack_preconditions) + len(premises.pack_invariants)
        judged = f"pack {premises.pack} ({count} conditions; roles {premises.binding.describe()})"
        if own:
            judged += f" + {own} own condition(s)"
    return f"{workflow.workflow_id}: {kind}: {judged}"
