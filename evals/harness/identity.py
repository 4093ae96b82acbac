"""What a run ran with: the model, the prompt template and the catalog.

The report records them (`configuration`) so that `compare` can say what two
runs differ in: a comparison meant to judge one change (a model) says little
when the prompt or the catalog changed too. The prompt is the template's
hash (`hapi_grpc.toolsets.registry`: the server evaluated runs this code);
the catalog is the hash of what Data Storage served, per case.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from evals.harness.scoring import RunScore


def catalog_hash(workflows: Sequence[Any]) -> str:
    """`sha256:<hex>` of the workflows (`Workflow` models) as canonical JSON,
    in id and version order: the same catalog hashes the same from any file."""
    from hapi_grpc.domain.spec_hash import spec_hash

    ordered = sorted(workflows, key=lambda w: (w.workflow_id, w.version))
    return spec_hash({"workflows": [w.model_dump(mode="json") for w in ordered]})


def _combined(hashes: Sequence[str]) -> str:
    """One catalog hash for the run: the catalog's, or a hash of the several."""
    distinct = sorted({h for h in hashes if h})
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    return "sha256:" + hashlib.sha256("\n".join(distinct).encode()).hexdigest()


def configuration(environ: Mapping[str, str], runs: Sequence[RunScore]) -> dict[str, Any]:
    """The report's `configuration`: provider, model, prompt and catalog hashes."""
    from hapi_grpc import __version__
    from hapi_grpc.toolsets.registry import prompt_template_hash

    provider = environ.get("HAPI_LLM_PROVIDER", "") or "builtin"
    model = "builtin" if provider == "builtin" else environ.get("HAPI_LLM_MODEL", "") or "?"
    return {
        "provider": provider,
        "model": model,
        "prompt_hash": prompt_template_hash(),
        "catalog_hash": _combined([r.catalog_hash for r in runs]),
        "catalogs": len({r.catalog_hash for r in runs if r.catalog_hash}),
        "service_version": __version__,
    }


def _model(conf: Mapping[str, Any]) -> str:
    return f"{conf.get('provider', '?')}:{conf.get('model', '?')}"


def describe(conf: Mapping[str, Any] | None) -> str:
    """One line: model, short prompt and catalog hashes."""
    if not conf:
        return "configuration not recorded (a report from before it was kept)"
    catalogs = conf.get("catalogs", 1)
    several = f" ({catalogs} catalogs)" if catalogs and catalogs > 1 else ""
    return (
        f"model {_model(conf)}, prompt {_short(conf.get('prompt_hash'))}, "
        f"catalog {_short(conf.get('catalog_hash'))}{several}"
    )


def _short(value: Any) -> str:
    text = str(value or "")
    return text.removeprefix("sha256:")[:12] or "?"


def differences(
    a: Mapping[str, Any] | None,
    b: Mapping[str, Any] | None,
    case_catalogs: Mapping[str, tuple[str, str]] | None = None,
) -> list[str]:
    """The subjects (model, prompt, catalog) the two runs differ in.

    `case_catalogs` maps each case both ran to its two catalog hashes: the
    catalogs are compared case by case (two runs of different case subsets
    served the same catalogs when every common case did).
    """
    if not a or not b:
        return []
    found = []
    if _model(a) != _model(b):
        found.append("model")
    if a.get("prompt_hash") != b.get("prompt_hash"):
        found.append("prompt")
    pairs = [pair for pair in (case_catalogs or {}).values() if all(pair)]
    if pairs:
        catalogs_differ = any(x != y for x, y in pairs)
    else:
        catalogs_differ = a.get("catalog_hash") != b.get("catalog_hash")
    if catalogs_differ:
        found.append("catalog")
    return found
