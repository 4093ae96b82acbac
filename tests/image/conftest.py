"""The image tests need the image `make image` builds (minutes the first time,
root and buildah), so the plain `pytest` run leaves them out; they run when
named: `make test-image` (which builds the image first; CI runs it) or
`pytest tests/image`."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _named(config: pytest.Config) -> bool:
    base = Path(config.invocation_params.dir)
    for arg in config.args:
        path = (base / arg.split("::")[0]).resolve()
        if path == HERE or HERE in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name == "conftest.py" or _named(config):
        return None
    return True


# The size test puts its measurement here; the run's summary reports it.
MEASURED: dict[str, str] = {}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for name, value in MEASURED.items():
        terminalreporter.write_line(f"{name}: {value}")
