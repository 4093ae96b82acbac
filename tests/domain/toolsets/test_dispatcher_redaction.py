"""Whatever a tool returns, its output leaves the dispatcher redacted."""

from __future__ import annotations

from hapi_grpc.domain.investigation.observer import NO_OBSERVER
from hapi_grpc.domain.llm import ToolCall
from hapi_grpc.domain.sensitive import REDACTED
from hapi_grpc.domain.toolsets.dispatcher import ToolDispatcher
from hapi_grpc.domain.toolsets.toolset import Toolset, ToolsetLimits
from tests.fakes.tool_doubles import PayloadTool

LEAKY = {
    "alert": "DatabaseDown",
    "annotation": "dsn postgres://app:s3cr3t-pass@db:5432/app",
    "env": "GIT_PASSWORD=hunter2-correct-horse",
    "schema": {"GIT_PASSWORD": {"type": "string"}},
}


async def test_tool_output_is_redacted_before_it_is_recorded_or_shown() -> None:
    toolset = Toolset(
        "leaky",
        [PayloadTool("leaky_read", "Returns data that carries credentials.", lambda: LEAKY)],
        ToolsetLimits(max_calls=3, call_timeout=5),
    )
    dispatcher = ToolDispatcher([toolset], NO_OBSERVER)
    first = await dispatcher.run(ToolCall(id="1", name="leaky_read", arguments="{}"))
    again = await dispatcher.run(ToolCall(id="2", name="leaky_read", arguments="{}"))
    for record in (first.record, again.record):
        assert "s3cr3t-pass" not in record.result
        assert "hunter2-correct-horse" not in record.result
        assert REDACTED in record.result
        # Structure survives: a secret-named key whose value is an object is kept.
        assert '"GIT_PASSWORD":{"type":"string"}' in record.result.replace(" ", "")
        assert "DatabaseDown" in record.result
