"""An operator's premises file for tests whose subject is not the premises.

A workflow typed with a real action type is judged by that type's pack, which needs
the cluster read; tests of the catalog, the history or the transport read none. The
operator's file states, for each workflow named, a premise that always holds in
place of its pack (`replace: true`), the way an operator describes workflows whose
premise they vouch for (docs/premises.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

__all__ = ["premises_not_under_test"]


def premises_not_under_test(directory: Path, workflow_ids: Iterable[str]) -> str:
    """The path of a premises file in `directory` vouching for `workflow_ids`."""
    entries = [
        {
            "workflow_id": workflow_id,
            "replace": True,
            "preconditions": [
                {"name": "not_under_test", "expression": "true", "message": "not under test"}
            ],
        }
        for workflow_id in workflow_ids
    ]
    path = directory / "premises.yaml"
    path.write_text(yaml.safe_dump({"workflows": entries}), encoding="utf-8")
    return str(path)
