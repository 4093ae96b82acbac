"""Where callers have always found the engine; it lives in `domain/investigation/`."""

from hapi_grpc.domain.investigation.engine import EngineSettings, EventSink, InvestigationEngine

__all__ = ["EngineSettings", "EventSink", "InvestigationEngine"]
