"""The Prometheus scrape endpoint: `/metrics` and `/healthz` on their own port.

A separate aiohttp server keeps scrapes off the gRPC port (no TLS or auth in
the way of Prometheus, and a NetworkPolicy can open the two ports to
different clients).
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client.exposition import choose_encoder

from hapi_grpc.observability import metrics


async def _metrics(request: web.Request) -> web.Response:
    # Prometheus asks for OpenMetrics when it can; plain text otherwise.
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return web.Response(body=encode(metrics.registry), headers={"Content-Type": content_type})


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


async def start_metrics_server(host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `/metrics` and `/healthz` on host:port; port 0 picks a free port.

    Returns the runner (stop it with `await runner.cleanup()`) and the bound port.
    """
    app = web.Application()
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/healthz", _healthz)
    # No access log: a scrape every few seconds would drown the service's own logs.
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0][1]
    except BaseException:
        await runner.cleanup()
        raise
    return runner, int(bound)
