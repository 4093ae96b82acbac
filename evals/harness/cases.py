"""The cases a run replays: `evals/cases/` by default, each checked against the
kinds the test API server serves. The case format itself is
`hapi_grpc.cases` (docs/evaluation.md).

Objects are created in the order the API server requires, whatever their
order in the file (documents of one step keep theirs):

1. Namespaces and CustomResourceDefinitions (then discovery is read again);
2. cluster-scoped objects: PriorityClass, StorageClass, PersistentVolume,
   Node, ... (what Pods and claims name);
3. configuration: ServiceAccount, ConfigMap, Secret, LimitRange (LimitRange
   admission defaults and bounds the Pods created after it);
4. the other namespaced objects, owners before what they own
   (Deployment -> ReplicaSet, CronJob -> Job, Certificate -> CertificateRequest);
5. Pods (priority admission resolves `priorityClassName`);
6. ResourceQuota: its usage describes the past, so it comes after the Pods it
   admitted, never refusing them retroactively;
7. Events, last: they name what the other steps created.

An object is never created before an owner the case defines. Every problem
raises `CaseError` naming the file: a kind the test API server does not
serve is found when the run starts, before any case runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hapi_grpc.cases.case import Case, CaseError, load_case

if TYPE_CHECKING:
    from evals.harness.kinds import KindIndex

CASES_DIR = Path(__file__).resolve().parents[1] / "cases"


def check_kinds(case: Case, served: KindIndex) -> None:
    """Every object's kind is one the harness can create, or `CaseError` names it."""
    from evals.harness.kinds import crd_kinds, is_crd

    own = [s for o in case.objects if is_crd(o) for s in crd_kinds(o)]
    for index, obj in enumerate(case.objects):
        kind, api_version = obj["kind"], obj.get("apiVersion")
        group_version = tuple(api_version.rpartition("/")[::2]) if api_version else None
        defined = any(
            s.rtype.kind == kind
            and (group_version is None or group_version == (s.rtype.group, s.rtype.version))
            for s in own
        )
        if defined or served.find(api_version, kind) or served.provided_for(api_version, kind):
            continue
        spelled = f"{api_version} {kind}" if api_version else kind
        raise CaseError(
            f"{case.path / 'cluster.yaml'}: document {index} ({obj['metadata']['name']}):"
            f" the test API server serves no kind {spelled}, and the case brings no"
            " CustomResourceDefinition for it"
        )


def load_cases(
    root: Path = CASES_DIR,
    *,
    names: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    include_holdout: bool = True,
    served: KindIndex | None = None,
) -> list[Case]:
    """Every case under `root` (sorted by name), filtered by name and tag.

    With `served` (the test API server's kinds) every object's kind is checked.
    """
    if not root.is_dir():
        raise CaseError(f"{root}: no such case directory")
    directories = sorted(d for d in root.iterdir() if d.is_dir() and (d / "case.yaml").exists())
    unknown = set(names) - {d.name for d in directories}
    if unknown:
        raise CaseError(f"{root}: no case named {', '.join(sorted(unknown))}")
    cases = [load_case(d) for d in directories if not names or d.name in names]
    if served is not None:
        for case in cases:
            check_kinds(case, served)
    if tags:
        cases = [c for c in cases if set(tags) & set(c.tags)]
    if not include_holdout:
        cases = [c for c in cases if not c.meta.holdout]
    return cases
