"""Capture: finished investigations written as evaluation cases (`HAPI_CAPTURE_DIR`).

`build_capture` makes the `Capture` of a deployment (None when no directory is
set); `recorder` records what one investigation's ports answered, `case_files`
renders and redacts the case's files, `writer` writes them off the response path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hapi_grpc.capture.capture import Capture
    from hapi_grpc.capture.settings import CaptureSettings
    from hapi_grpc.domain.catalog import WorkflowCatalog

__all__ = ["build_capture"]


def build_capture(
    settings: CaptureSettings, catalog: WorkflowCatalog, provider: str, model: str
) -> Capture | None:
    """The capture of `settings.capture_dir`; None when it is not set. ConfigError
    when the directory cannot be written."""
    if not settings.capture_dir:
        return None
    from hapi_grpc.capture.capture import Capture
    from hapi_grpc.capture.writer import CaseWriter
    from hapi_grpc.config import ConfigError

    try:
        writer = CaseWriter(
            Path(settings.capture_dir),
            max_case_bytes=settings.capture_max_case_bytes,
            max_bytes=settings.capture_max_bytes,
            queue_size=settings.capture_queue_size,
        )
    except OSError as exc:
        raise ConfigError(
            f"HAPI_CAPTURE_DIR: cannot write {settings.capture_dir}: {exc.strerror or exc}"
        ) from None
    return Capture(writer, catalog, provider, model)
