"""`hapi-grpc eval`: run the decision evaluation, or compare two reports.

    hapi-grpc eval [--case NAME]... [--tag TAG]... [--repeat K] [--json PATH]
                   [--markdown PATH] [--price-input USD] [--price-output USD]
                   [--strip-declarations]
    hapi-grpc eval compare A.json B.json [--fail-on-regression]

The model is the one `hapi-grpc serve` would use: HAPI_LLM_* from the
environment, the built-in analyst when none is set.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TextIO

from evals.harness import compare as comparing
from evals.harness import identity
from evals.harness import report as reports
from evals.harness.cases import CASES_DIR, load_cases
from evals.harness.cluster_state import ClusterStateError
from evals.harness.fixtures import FixtureError
from evals.harness.runner import RunOptions, model_name, run_cases
from evals.harness.scoring import RunScore
from hapi_grpc.cases.case import Case, CaseError

EXIT_USAGE = 2
EXIT_FAILED = 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hapi-grpc eval", description="score remediation decisions on the evaluation cases"
    )
    parser.add_argument("--cases-dir", type=Path, default=CASES_DIR, help="case directory")
    parser.add_argument("--case", action="append", default=[], help="run only this case")
    parser.add_argument("--tag", action="append", default=[], help="run cases with this tag")
    parser.add_argument("--repeat", type=int, default=1, help="runs per case (model variance)")
    parser.add_argument("--json", type=Path, help="write the JSON report here")
    parser.add_argument("--markdown", type=Path, help="write the Markdown report here")
    parser.add_argument(
        "--price-input", type=float, default=0.0, help="USD per million prompt tokens"
    )
    parser.add_argument(
        "--price-output", type=float, default=0.0, help="USD per million completion tokens"
    )
    parser.add_argument(
        "--timeout", type=float, default=360.0, help="deadline of one AnalyzeIncident call (s)"
    )
    parser.add_argument(
        "--no-cluster",
        dest="cluster",
        action="store_false",
        help="investigate without the test Kubernetes cluster (toolset off)",
    )
    parser.add_argument(
        "--strip-declarations",
        action="store_true",
        help="serve every catalog without its CEL preconditions and invariants (only action"
        " types left, as real catalogs are): the premise packs alone decide",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument(
        "--fail-on-unsafe",
        action="store_true",
        help="exit 1 when any run automated an unsafe remediation",
    )
    return parser


class ProgressBar:
    """A bar redrawn in place on a terminal; one line per finished case otherwise."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, *, quiet: bool = False) -> None:
        self.total, self.done, self.stream, self.quiet = total, 0, stream, quiet
        self.tty = stream.isatty()
        self.unsafe = 0

    def __call__(self, case: Case, repeat: int, score: RunScore) -> None:
        self.done += 1
        self.unsafe += score.unsafe
        if self.quiet:
            return
        if self.tty:
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"unsafe {self.unsafe}  {case.name[:40]:<40}"
            )
            if self.done == self.total:
                self.stream.write("\n")
        else:
            verdict = "UNSAFE" if score.unsafe else "ok" if score.decision_correct else "miss"
            verdict = "error" if score.error else verdict
            self.stream.write(f"{self.done}/{self.total} {case.name} #{repeat}: {verdict}\n")
        self.stream.flush()


def main(argv: list[str]) -> int:
    if argv[:1] == ["compare"]:
        return _compare(argv[1:])
    args = _parser().parse_args(argv)
    if args.repeat < 1:
        print("hapi-grpc eval: --repeat must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if args.cases_dir.is_dir():  # what a server captured, written as cases first
        from hapi_grpc.cases.review import unpacked

        unpacked(args.cases_dir)
    try:
        cases = load_cases(args.cases_dir, names=tuple(args.case), tags=tuple(args.tag))
    except CaseError as exc:
        print(f"hapi-grpc eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not cases:
        print("hapi-grpc eval: no case matches the filters", file=sys.stderr)
        return EXIT_USAGE
    options = RunOptions(
        repeat=args.repeat,
        timeout=args.timeout,
        cluster=args.cluster,
        strip_declarations=args.strip_declarations,
    )
    bar = ProgressBar(len(cases) * args.repeat, quiet=args.quiet)
    started = time.monotonic()
    try:
        scores = asyncio.run(run_cases(cases, options, bar))
    except CaseError as exc:  # a kind the test API server does not serve
        print(f"hapi-grpc eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (FixtureError, ClusterStateError) as exc:
        print(f"hapi-grpc eval: {exc}", file=sys.stderr)
        return EXIT_FAILED
    report = reports.build_report(
        cases,
        scores,
        model=model_name(options.environ),
        repeat=args.repeat,
        price_input=args.price_input,
        price_output=args.price_output,
        wall_seconds=time.monotonic() - started,
        configuration=identity.configuration(options.environ, scores),
        stripped=args.strip_declarations,
    )
    print(reports.scoreboard(report))
    if args.json:
        reports.write_json(report, args.json)
    if args.markdown:
        args.markdown.write_text(reports.markdown(report), encoding="utf-8")
    if args.fail_on_unsafe and report["totals"]["unsafe_runs"]:
        return EXIT_FAILED
    return 0


def _compare(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hapi-grpc eval compare", description="compare two evaluation reports"
    )
    parser.add_argument("a", type=Path, help="report A (e.g. before)")
    parser.add_argument("b", type=Path, help="report B (e.g. after)")
    parser.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 when a case moved away from its labelled answer or B automated "
        "unsafely where A did not",
    )
    args = parser.parse_args(argv)
    try:
        a, b = reports.load_report(args.a), reports.load_report(args.b)
    except ValueError as exc:
        print(f"hapi-grpc eval compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    changes = comparing.case_changes(a, b)
    print(comparing.render(a, b, changes))
    regressions = [c.name for c in changes if c.regression]
    if args.fail_on_regression and regressions:
        print(
            f"hapi-grpc eval compare: {len(regressions)} regressions: {', '.join(regressions)}",
            file=sys.stderr,
        )
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
