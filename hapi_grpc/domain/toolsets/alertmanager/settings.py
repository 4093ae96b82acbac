"""Settings of the `alertmanager` toolset (`HAPI_ALERTMANAGER_*`); it is reached with
the `prometheus` toolset's token file, CA bundle and headers."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from hapi_grpc.domain.toolsets.settings import check_url

__all__ = ["AlertmanagerSettings"]


class AlertmanagerSettings(BaseModel):
    """The alerts firing now, from Alertmanager; reached with the `prometheus`
    toolset's token file, CA bundle and headers."""

    alertmanager_url: str | None = Field(
        None, description="Alertmanager (API v2); enables the `alertmanager` toolset."
    )
    alertmanager_max_calls: int = Field(
        3, ge=0, le=100, description="Alertmanager tool calls per investigation."
    )
    alertmanager_timeout_seconds: float = Field(5.0, gt=0, le=300, description="Per call.")

    @field_validator("alertmanager_url")
    @classmethod
    def _alertmanager_url(cls, value: str | None) -> str | None:
        return check_url(value, ("http", "https"))
