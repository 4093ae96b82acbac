"""Decision-quality evaluation: cases under `cases/`, the runner under `harness/`."""
