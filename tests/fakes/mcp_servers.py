"""MCP tool servers written with the official SDK, run as real processes.

`python tests/fakes/mcp_servers.py stdio` serves over stdin/stdout;
`python tests/fakes/mcp_servers.py http PORT [TOKEN]` serves streamable HTTP on
127.0.0.1:PORT at /mcp, demanding `Authorization: Bearer TOKEN` when given
and recording every Authorization/X-Tenant header it saw (tool `seen_headers`).

One server, every behaviour a client must survive, picked by tool:
`get_runbook` (normal), `scale` (a schema with bounds and an enum),
`delete_everything` (what an operator denies), `hang` (never answers in
time), `crash` (the process exits mid-call), `huge` (a megabyte of text),
`fail` (a tool-level error), `whoami` (the process id: a restart shows),
`grep_logs` (an argument of `format: regex`).
This file imports only the SDK, so the client can spawn it by path.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Annotated, Any, Literal

from pydantic import Field

SEEN_HEADERS: list[dict[str, str]] = []


def build() -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("ops-tools")

    @server.tool()
    def get_runbook(name: str) -> str:
        """Return the runbook for an alert name."""
        return f"Runbook for {name}: check the memory limit, then the recent deploys."

    @server.tool()
    def scale(
        deployment: str,
        replicas: Annotated[int, Field(ge=1, le=10)],
        mode: Literal["fast", "safe"] = "safe",
    ) -> str:
        """Pretend to scale a deployment."""
        return f"would scale {deployment} to {replicas} ({mode})"

    @server.tool()
    def delete_everything() -> str:
        """A tool no operator wants a model to call."""
        return "deleted"

    @server.tool()
    async def hang(seconds: float = 3600.0) -> str:
        """Sleep for `seconds` before answering."""
        await asyncio.sleep(seconds)
        return "woke up"

    @server.tool()
    def crash() -> str:
        """Exit the server process in the middle of the call."""
        sys.stdout.flush()
        os._exit(3)

    @server.tool()
    def huge(size: int = 1_000_000) -> str:
        """Return `size` characters."""
        return "x" * size

    @server.tool()
    def nested(levels: int = 3000) -> str:
        """Return a JSON text nesting `levels` objects."""
        return '{"a":' * levels + "1" + "}" * levels

    @server.tool()
    def fail() -> str:
        """Raise inside the tool."""
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("the backing system said no")

    @server.tool()
    def grep_logs(pattern: Annotated[str, Field(json_schema_extra={"format": "regex"})]) -> str:
        """Pretend to search the logs with a regular expression."""
        return f"no line matches {pattern[:40]}"

    @server.tool()
    def whoami() -> str:
        """The server's process id and MARK environment variable."""
        return f"pid={os.getpid()} mark={os.environ.get('MARK', '')}"

    @server.tool()
    def seen_headers() -> list[dict[str, str]]:
        """Authorization and X-Tenant headers of the HTTP requests so far."""
        return SEEN_HEADERS

    return server


def http_app(server: Any, token: str | None) -> Any:
    app = server.streamable_http_app(stateless_http=False)

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            SEEN_HEADERS.append(
                {k: v for k, v in headers.items() if k in ("authorization", "x-tenant")}
            )
            if token is not None and headers.get("authorization") != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


def stdio_config(**keys: Any) -> dict[str, Any]:
    """An `mcpServers` entry that spawns this file as a stdio server."""
    return {"command": sys.executable, "args": [os.path.abspath(__file__), "stdio"], **keys}


def start_http_server(port: int, token: str | None = None) -> Any:
    """This file as a streamable-HTTP server on 127.0.0.1:`port`, ready when returned."""
    import socket
    import subprocess
    import time

    args = [sys.executable, os.path.abspath(__file__), "http", str(port)]
    process = subprocess.Popen(args + ([token] if token else []), stderr=subprocess.DEVNULL)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if process.poll() is not None:
            raise RuntimeError(f"MCP HTTP server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("MCP HTTP server did not listen in time")


def main(argv: list[str]) -> None:
    server = build()
    if argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    port = int(argv[2])
    token = argv[3] if len(argv) > 3 else None
    uvicorn.run(http_app(server, token), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(sys.argv)
