"""`hapi-grpc cases review DIR`: list captured cases, and label them.

    hapi-grpc cases review DIR                          the captured cases, their
                                                        decision, outcome and label
    hapi-grpc cases review DIR --accept NAME [--workflow ID] [--param K=V]...
    hapi-grpc cases review DIR --reject NAME
    hapi-grpc cases review DIR --expect-review NAME REASON
                               [--by WHO] [--note TEXT]
    hapi-grpc cases unpack DIR                          only write the records the
                                                        server closed as case directories

`--accept` says the captured decision was right (`--workflow`: this workflow
was, not the captured one; `--param`: the constraint on that parameter, as
`K=V` or `K={quantity_gte: 1Gi}`); `--reject`, that its workflow was wrong;
`--expect-review`, that only review was right, for REASON (a HumanReviewReason
such as `precondition_not_met`, or `any`). Actions may be repeated for several
cases. Every one is checked before any file is written; a label already in
place is not written again. Exit 2 names what is wrong. Each command first
unpacks the records a server closed (`capture.unpack`) into case directories.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hapi_grpc.cases import labels
from hapi_grpc.cases.case import Case, CaseError, load_case
from hapi_grpc.cases.expected import Expected
from hapi_grpc.cases.provenance import decision_of, outcome_of

EXIT_USAGE = 2
EXIT_FAILED = 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hapi-grpc cases", description="captured evaluation cases"
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    review = sub.add_parser("review", help="list captured cases, mark their right answer")
    review.add_argument("dir", type=Path, help="the directory of captured cases")
    review.add_argument("--accept", action="append", default=[], metavar="NAME")
    review.add_argument("--reject", action="append", default=[], metavar="NAME")
    review.add_argument(
        "--expect-review", action="append", default=[], nargs=2, metavar=("NAME", "REASON")
    )
    review.add_argument("--workflow", help="with one --accept: the workflow that was right")
    review.add_argument(
        "--param", action="append", default=[], metavar="K=V", help="with one --accept"
    )
    review.add_argument("--by", default="", help="who labels (kept in expected.yaml)")
    review.add_argument("--note", default="", help="why (kept in expected.yaml)")
    unpack = sub.add_parser("unpack", help="write the captured records as case directories")
    unpack.add_argument("dir", type=Path, help="the directory of captured cases")
    return parser


def unpacked(root: Path) -> None:
    """The closed segments of a capture directory written as cases first (`unpack`)."""
    from hapi_grpc.capture.unpack import unpack

    done = unpack(root)
    if done.cases or done.outcomes or done.too_large or done.evicted or done.failed:
        skipped = f", {done.too_large} too large" if done.too_large else ""
        evicted = f", {done.evicted} oldest removed" if done.evicted else ""
        failed = f", {done.failed} unreadable" if done.failed else ""
        print(
            f"{root}: unpacked {done.cases} cases, {done.outcomes} outcomes"
            f"{skipped}{evicted}{failed}",
            file=sys.stderr,
        )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not args.dir.is_dir():
        print(f"hapi-grpc cases {args.action}: {args.dir}: no such directory", file=sys.stderr)
        return EXIT_USAGE
    unpacked(args.dir)
    if args.action == "unpack":
        return 0
    if not (args.accept or args.reject or args.expect_review):
        if args.workflow or args.param:
            print(
                "hapi-grpc cases review: --workflow and --param go with --accept", file=sys.stderr
            )
            return EXIT_USAGE
        return _list(args.dir)
    try:
        planned = _plan(args)
    except (labels.LabelError, CaseError) as exc:
        print(f"hapi-grpc cases review: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for case, verb, body in planned:
        written = labels.write_expected(case.path, body)
        state = "expected.yaml written" if written else "already so, unchanged"
        print(f"{case.name}: {verb} ({state})")
    return 0


def _case(root: Path, name: str) -> Case:
    if name != Path(name).name or name in (".", "..") or not (root / name).is_dir():
        raise labels.LabelError(f"{root}: no case named {name!r}")
    return load_case(root / name)


def _plan(args: argparse.Namespace) -> list[tuple[Case, str, dict[str, Any]]]:
    """Every label checked and made into its expected.yaml body; nothing written."""
    names = [*args.accept, *args.reject, *(n for n, _ in args.expect_review)]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise labels.LabelError(f"{', '.join(twice)}: labelled more than once")
    if (args.workflow or args.param) and len(args.accept) != 1:
        raise labels.LabelError("--workflow and --param go with exactly one --accept")
    constraints = dict(labels.parse_param(p) for p in args.param)
    at = datetime.now(UTC)
    who = {"at": at, "by": args.by, "note": args.note}
    planned = []
    for name in args.accept:
        case = _case(args.dir, name)
        body = labels.accept(case, workflow=args.workflow, constraints=constraints, **who)
        planned.append((case, "accepted", body))
    for name in args.reject:
        case = _case(args.dir, name)
        planned.append((case, "rejected", labels.reject(case, **who)))
    for name, reason in args.expect_review:
        case = _case(args.dir, name)
        planned.append((case, "review expected", labels.expect_review(case, reason, **who)))
    for case, _, body in planned:  # each must make a valid file before any is written
        try:
            Expected.model_validate(body)
        except ValueError as exc:
            raise labels.LabelError(f"{case.name}: {exc}") from None
    return planned


def label_text(expected: Expected) -> str:
    """What a case's expected.yaml says is right, and who said it."""
    if expected.unreviewed:
        return "unreviewed"
    parts = []
    if expected.workflows:
        parts.append("accepts " + ", ".join(expected.workflows))
    if expected.review is not None:
        reasons = ", ".join(expected.review.reasons)
        parts.append(f"review ({reasons})" if reasons else "review")
    if expected.rejected_workflows:
        parts.append("rejects " + ", ".join(expected.rejected_workflows))
    label = expected.label
    source = (label.source + (f" by {label.by}" if label.by else "")) if label else "written"
    return f"{source}: {'; '.join(parts)}"


def _list(root: Path) -> int:
    rows = [("case", "captured", "model", "decision", "outcome", "label")]
    broken, hand_written = [], 0
    for directory in sorted(d for d in root.iterdir() if (d / "case.yaml").is_file()):
        try:
            case = load_case(directory)
        except CaseError as exc:
            broken.append(str(exc))
            continue
        captured = case.meta.captured
        if captured is None:
            hand_written += 1
            continue
        outcome = outcome_of(captured)
        rows.append(
            (
                case.name,
                captured.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
                f"{captured.provider or '?'}:{captured.model or '?'}",
                decision_of(captured).text(),
                outcome.text() if outcome else "-",
                label_text(case.expected),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]))
    unreviewed = sum(row[-1] == "unreviewed" for row in rows[1:])
    print(f"\n{len(rows) - 1} captured cases, {unreviewed} unreviewed", end="")
    print(f"; {hand_written} written by hand not listed" if hand_written else "")
    for problem in broken:
        print(f"cannot read: {problem}", file=sys.stderr)
    return EXIT_FAILED if broken else 0
