"""The capture's settings (`HAPI_CAPTURE_*`), a group of the service's settings."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CaptureSettings"]


class CaptureSettings(BaseModel):
    """Finished investigations written as evaluation cases (docs/evaluation.md#capture):
    what the tools read, redacted, off the response path."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, validate_by_name=True)

    capture_dir: str | None = Field(
        None,
        description=(
            "Directory each finished investigation is written to as an evaluation case "
            "(one directory per remediation id of a tenant); unset: nothing is captured."
        ),
    )
    capture_max_case_bytes: int = Field(
        4 * 1024 * 1024,
        ge=4096,
        description="Largest case written; a larger one is skipped and counted (`too_large`).",
    )
    capture_max_bytes: int = Field(
        1024 * 1024 * 1024,
        ge=65536,
        description=(
            "Bytes of all cases in the directory; the oldest cases are removed to make room "
            "for a new one (counted `evicted`); a case larger than this is skipped "
            "(`too_large`)."
        ),
    )
    capture_queue_size: int = Field(
        64,
        ge=1,
        le=10_000,
        description=(
            "Finished investigations waiting for the writer, and (as many again) for their "
            "workflows from the catalog; past either a case is dropped and counted "
            "(`dropped`), never waited for."
        ),
    )
