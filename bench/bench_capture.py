"""What capturing investigations (`HAPI_CAPTURE_DIR`) adds to an investigation's CPU.

Run: python bench/bench_capture.py [--n 1000] [--rounds 5] [--max-share 0.05]

The alert storm of `bench/_storm.py` against `hapi-grpc serve` as shipped, with
and without a capture directory, alternating (`cpu_share.added_share`). With
capture on, every investigation is written (the writer's queue holds the whole
storm, so none is dropped and the figure is the cost of writing each one), and
the server's CPU is read only once every case of the storm is in a closed
segment (`capture.segments`: the writer closes its segment at most
`SEGMENT_SECONDS` after its first record): the work the writer does after the
last answer is counted. Unpacking into case directories is the CLI's work
(`hapi-grpc cases unpack`), not the server's. Exits 1 when the added share is
above `--max-share` (5%) or a case was not written. Five storms each way by
default: the server's CPU per investigation moves by 100-250 µs between storms
of the same settings, more than what capturing adds, and a median of three
still moves by tens of µs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_share import added_share

from hapi_grpc.capture.segments import closed_segments

SETTLE_SECONDS = 120.0


def _records(segment: Path, counted: dict[Path, int]) -> int:
    """The cases in a closed segment (its lines but the header), counted once."""
    if segment not in counted:
        with segment.open("rb") as lines:
            counted[segment] = sum(1 for line in lines if line.startswith(b'{"name"'))
    return counted[segment]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turn-seconds", type=float, default=2.0)
    parser.add_argument("--max-share", type=float, default=0.05)
    args = parser.parse_args()
    missing: list[int] = []
    with tempfile.TemporaryDirectory(prefix="hapi-capture-bench-") as tmp:
        root = Path(tmp)

        counted: dict[Path, int] = {}
        expected = [0]

        def settle(started: float) -> None:
            """Until every case of this storm is in a closed segment."""
            expected[0] += args.n
            deadline = time.monotonic() + SETTLE_SECONDS
            written = 0
            while time.monotonic() < deadline:
                written = sum(_records(s, counted) for s in closed_segments(root))
                if written >= expected[0]:
                    return
                time.sleep(0.1)
            missing.append(expected[0] - written)

        share = added_share(
            {"HAPI_CAPTURE_DIR": str(root), "HAPI_CAPTURE_QUEUE_SIZE": str(args.n)},
            label="capture",
            n=args.n,
            turn_seconds=args.turn_seconds,
            rounds=args.rounds,
            settle=settle,
        )
        cases = sum(_records(s, counted) for s in closed_segments(root))
    print(f"load average {os.getloadavg()[0]:.2f}; cases in the segments: {cases}")
    print(share.line(args.max_share))
    if missing:
        print(f"NOT all cases written: {missing} missing after {SETTLE_SECONDS:.0f} s")
        return 1
    return 0 if share.met(args.max_share) else 1


if __name__ == "__main__":
    sys.exit(main())
