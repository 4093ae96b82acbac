"""`hapi-grpc analyze` and `hapi-grpc validate`: a running server called through
`hapi_grpc.client`, its answers printed for a person or as JSON."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

EXIT_USAGE = 2
EXIT_RPC_ERROR = 1


def _client(args: argparse.Namespace) -> Any:
    from hapi_grpc.client import HapiClient
    from hapi_grpc.security.tls import channel_credentials

    tls = channel_credentials(args.tls_ca, args.tls_cert, args.tls_key) if args.tls_ca else None
    token = Path(args.token_file).read_text(encoding="utf-8").strip() if args.token_file else None
    return HapiClient(args.address, credentials=tls, token=token, timeout=args.timeout)


def analyze(args: argparse.Namespace) -> int:
    from hapi_grpc.client import load_analyze_request

    try:
        request = load_analyze_request(args.incident)
    except (OSError, ValueError, json_format.ParseError) as exc:
        print(f"hapi-grpc: cannot read {args.incident}: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def run() -> int:
        async with _client(args) as client:
            if args.stream:
                async for event in client.analyze_stream(request):
                    _print_event(event, args.json)
                return 0
            response = await client.analyze(request)
            if args.json:
                print(_to_json(response))
            else:
                _print_result(response.result)
            return 0

    return _run_rpc(run)


def validate(args: argparse.Namespace) -> int:
    try:
        text = (
            sys.stdin.read() if args.parameters == "-" else Path(args.parameters).read_text("utf-8")
        )
        params = json.loads(text)
        if not isinstance(params, dict):
            raise ValueError("expected a JSON object")
    except (OSError, ValueError) as exc:
        print(f"hapi-grpc: cannot read parameters: {exc}", file=sys.stderr)
        return EXIT_USAGE

    async def run() -> int:
        async with _client(args) as client:
            response = await client.validate(args.workflow_id, params)
        if args.json:
            print(_to_json(response))
            return 0
        v = response.validation
        print(
            f"workflow {response.workflow_id} {response.workflow_version}: "
            f"{'VALID' if v.valid else 'INVALID'}"
        )
        for err in v.errors:
            print(f"  - {err.message}")
        if v.stripped_parameters:
            print(f"  stripped undeclared parameters: {', '.join(v.stripped_parameters)}")
        print("  parameters: " + _struct_json(v.sanitized_parameters))
        return 0 if v.valid else 3

    return _run_rpc(run)


def _run_rpc(run: Any) -> int:
    from hapi_grpc.client import field_violations
    from hapi_grpc.domain.errors import InvalidRequestError

    try:
        return int(asyncio.run(run()))
    except InvalidRequestError as exc:
        print("hapi-grpc: the request is invalid (not sent):", file=sys.stderr)
        for v in exc.violations:
            print(f"  {v.field}: {v.description}", file=sys.stderr)
        return EXIT_USAGE
    except grpc.aio.AioRpcError as exc:
        code = exc.code()
        if code == grpc.StatusCode.UNAVAILABLE and "connect" in (exc.details() or "").lower():
            print(f"hapi-grpc: cannot reach the server: {exc.details()}", file=sys.stderr)
        else:
            print(f"hapi-grpc: {code.name}: {exc.details()}", file=sys.stderr)
        for v in field_violations(exc):
            print(f"  {v.field}: {v.description}", file=sys.stderr)
        return EXIT_RPC_ERROR


def _struct_json(struct: Any) -> str:
    from hapi_grpc.cases.provenance import plain

    return json.dumps(plain(json_format.MessageToDict(struct)), sort_keys=True)


def _to_json(message: Any) -> str:
    return json_format.MessageToJson(message, indent=2)


def _print_event(event: Any, as_json: bool) -> None:
    if as_json:
        print(json_format.MessageToJson(event, indent=None))
        return
    kind = event.WhichOneof("event")
    if kind == "llm_turn":
        t = event.llm_turn
        tools = f" -> tools: {', '.join(t.tool_calls)}" if t.tool_calls else ""
        print(f"[turn {t.turn}]{tools}")
    elif kind == "tool_call":
        c = event.tool_call
        print(
            f"[tool] {c.name} {c.raw_arguments} -> {_enum(c, 'status')} "
            f"({c.duration_seconds * 1000:.1f} ms)"
        )
    elif kind == "validation_attempt":
        a = event.validation_attempt
        print(f"[validation #{a.attempt}] {a.workflow_id}: {'valid' if a.valid else 'invalid'}")
        for err in a.errors:
            print(f"    - {err.message}")
    elif kind == "result":
        _print_result(event.result)


def _enum(message: Any, field: str) -> str:
    desc = message.DESCRIPTOR.fields_by_name[field].enum_type
    return desc.values_by_number[getattr(message, field)].name


def _print_result(result: Any) -> None:
    print(f"remediation: {result.remediation_id}")
    print(f"summary:     {result.analysis_summary}")
    print(f"root cause:  {result.root_cause_assessment}")
    print(f"severity:    {_enum(result, 'rca_severity')}")
    if result.HasField("selected_workflow"):
        s = result.selected_workflow
        print(
            f"workflow:    {s.workflow_id} {s.version} (confidence {s.confidence:.2f}, "
            f"risk {_enum(s, 'estimated_risk')})"
        )
        print("parameters:  " + _struct_json(s.parameters))
    else:
        print("workflow:    none selected")
    for alt in result.alternative_workflows:
        print(f"alternative: {alt.workflow_id} ({alt.confidence:.2f})")
    for warning in result.warnings:
        print(f"warning:     {warning}")
    if result.needs_human_review:
        print(f"HUMAN REVIEW NEEDED: {_enum(result, 'human_review_reason')}")
    print(
        f"model:       {result.model} (language model used: {result.language_model_used}); "
        f"{result.llm_turns} turns, {len(result.tool_calls)} tool calls, "
        f"{result.duration_seconds:.2f}s"
    )
