"""The investigation core: from incident to checked result.

- `engine.py`: `InvestigationEngine`, `EngineSettings`, `EventSink` (public).
- `loop.py`: the bounded conversation with the model.
- `final_check.py`: the final answer checked against searches and the validator.
- `outcome.py`: result assembly, partial results, review reasons.
- `observer.py`: the port through which metrics and tracing watch it.

Import from the modules (`hapi_grpc.domain.investigation.engine`); this
package imports nothing so that `toolsets` can use the observer port.
"""
