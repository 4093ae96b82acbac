"""The `hapi-grpc` command line.

hapi-grpc serve                       start the server (settings from HAPI_* env and flags)
hapi-grpc analyze INCIDENT.json       send an incident to a running server
hapi-grpc validate WORKFLOW_ID PARAMS.json
hapi-grpc datastorage serve --catalog FILE --port N
hapi-grpc catalog check FILE          validate a catalog file and exit
hapi-grpc eval [--repeat K] [--json PATH]   score decisions on evals/cases (source checkout)
hapi-grpc cases review DIR            list captured evaluation cases, label them (source checkout)
hapi-grpc calibration --metrics-url URL | --history-file FILE   success rate by confidence
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from hapi_grpc.config import ConfigError, Settings

EXIT_USAGE = 2
EXIT_RPC_ERROR = 1


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"hapi-grpc: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hapi-grpc", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(metavar="COMMAND")

    serve = sub.add_parser("serve", help="start the gRPC server")
    serve.add_argument(
        "--host", dest="grpc_host", help="bind address (HAPI_GRPC_HOST, default [::])"
    )
    serve.add_argument(
        "--port", dest="grpc_port", type=int, help="gRPC port (HAPI_GRPC_PORT, 50051)"
    )
    serve.add_argument(
        "--metrics-port", type=int, help="metrics port, -1 disables (HAPI_METRICS_PORT, 9090)"
    )
    serve.add_argument(
        "--catalog", dest="catalog_file", help="embedded catalog file (HAPI_CATALOG_FILE)"
    )
    serve.add_argument("--data-storage-url", help="Data Storage base URL (HAPI_DATA_STORAGE_URL)")
    serve.add_argument(
        "--catalog-source",
        choices=["auto", "embedded", "datastorage", "kubernetes"],
        help="HAPI_CATALOG_SOURCE",
    )
    serve.add_argument(
        "--llm-provider", choices=["builtin", "openai", "anthropic"], help="HAPI_LLM_PROVIDER"
    )
    serve.add_argument("--llm-base-url", help="HAPI_LLM_BASE_URL")
    serve.add_argument("--llm-model", help="HAPI_LLM_MODEL")
    serve.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="HAPI_LOG_LEVEL"
    )
    serve.add_argument("--log-format", choices=["json", "text"], help="HAPI_LOG_FORMAT")
    serve.add_argument("--tls-cert", dest="tls_cert_file", help="HAPI_TLS_CERT_FILE")
    serve.add_argument("--tls-key", dest="tls_key_file", help="HAPI_TLS_KEY_FILE")
    serve.add_argument(
        "--tls-client-ca", dest="tls_client_ca_file", help="HAPI_TLS_CLIENT_CA_FILE (mutual TLS)"
    )
    serve.add_argument(
        "--auth-mode", choices=["none", "static", "tokenreview"], help="HAPI_AUTH_MODE"
    )
    serve.add_argument("--auth-tokens-file", help="HAPI_AUTH_TOKENS_FILE")
    serve.add_argument(
        "--no-reflection",
        dest="reflection",
        action="store_const",
        const=False,
        help="HAPI_REFLECTION=false",
    )
    serve.add_argument(
        "--shutdown-grace",
        dest="shutdown_grace_seconds",
        type=float,
        help="HAPI_SHUTDOWN_GRACE_SECONDS",
    )
    serve.add_argument("--max-concurrent-rpcs", type=int, help="HAPI_MAX_CONCURRENT_RPCS")
    serve.set_defaults(func=_serve)

    for name, helptext in (
        ("analyze", "analyze an incident (JSON file)"),
        ("validate", "validate workflow parameters"),
    ):
        p = sub.add_parser(name, help=helptext)
        if name == "analyze":
            p.add_argument(
                "incident", help="AnalyzeIncidentRequest or Incident as JSON (proto JSON mapping)"
            )
            p.add_argument(
                "--stream", action="store_true", help="print progress events as they arrive"
            )
            p.set_defaults(func=_analyze, timeout=330.0)
        else:
            p.add_argument("workflow_id")
            p.add_argument("parameters", help="JSON object file, or - for standard input")
            p.set_defaults(func=_validate, timeout=30.0)
        p.add_argument(
            "--address", default="localhost:50051", help="server address (default localhost:50051)"
        )
        p.add_argument("--timeout", type=float, help="deadline in seconds")
        p.add_argument("--json", action="store_true", help="print the response as JSON")
        p.add_argument("--tls-ca", help="CA bundle to verify the server (enables TLS)")
        p.add_argument("--tls-cert", help="client certificate (mutual TLS)")
        p.add_argument("--tls-key", help="client key (mutual TLS)")
        p.add_argument("--token-file", help="file holding a bearer token")

    ds = sub.add_parser("datastorage", help="serve a catalog over the Data Storage REST contract")
    ds_sub = ds.add_subparsers(metavar="ACTION")
    ds_serve = ds_sub.add_parser("serve", help="start the REST server")
    ds_serve.add_argument("--catalog", help="catalog file (default: the bundled catalog)")
    ds_serve.add_argument("--host", default="127.0.0.1")
    ds_serve.add_argument("--port", type=int, default=8080)
    ds_serve.set_defaults(func=_datastorage_serve)

    cat = sub.add_parser("catalog", help="catalog file tools")
    cat_sub = cat.add_subparsers(metavar="ACTION")
    check = cat_sub.add_parser("check", help="validate a catalog file")
    check.add_argument("file")
    check.set_defaults(func=_catalog_check)

    pol = sub.add_parser("policy", help="operator policy file tools")
    pol_sub = pol.add_subparsers(metavar="ACTION")
    pol_check = pol_sub.add_parser(
        "check", help="validate a policy file (HAPI_POLICY_FILE) as the server loads it"
    )
    pol_check.add_argument("file")
    pol_check.set_defaults(func=_policy_check)

    prem = sub.add_parser("premises", help="premise packs and the operator's premises file")
    prem_sub = prem.add_subparsers(metavar="ACTION")
    prem_check = prem_sub.add_parser(
        "check",
        help="validate a premises file (HAPI_PREMISES_FILE) as the server loads it, and"
        " show how a catalog's workflows are judged",
    )
    prem_check.add_argument("file", nargs="?", help="premises file; omitted: the shipped packs")
    prem_check.add_argument("--catalog", help="catalog file whose workflows to show")
    prem_check.set_defaults(func=_premises_check)

    # Their own parsers (in evals/harness/) read every argument after the command.
    for name, module, helptext in (
        ("eval", "evals.harness.cli", "score remediation decisions (eval --help)"),
        ("cases", "evals.harness.review_cli", "label captured evaluation cases (cases --help)"),
    ):
        ev = sub.add_parser(name, help=helptext, add_help=False, prefix_chars="\x00")
        ev.add_argument("harness_args", nargs="*")
        ev.set_defaults(func=_harness, harness=(name, module))
    from hapi_grpc.calibration import add_parser as add_calibration

    add_calibration(sub)
    return parser


# --- serve ----------------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in vars(args).items() if k != "func" and v is not None}
    # Configuration mistakes end here with one line on stderr and status 2
    # (ConfigError is caught in main), before anything starts.
    settings = Settings.from_env(**overrides)
    settings.check_files()
    from hapi_grpc.observability.logging import configure_logging

    configure_logging(settings.log_level, settings.log_format)
    from hapi_grpc.adapters.catalog.loader import CatalogFileError
    from hapi_grpc.app import serve

    try:
        asyncio.run(serve(settings))
    except CatalogFileError as exc:
        print(f"hapi-grpc: HAPI_CATALOG_FILE: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"hapi-grpc: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def _datastorage_serve(args: argparse.Namespace) -> int:
    from hapi_grpc.adapters.catalog.loader import CatalogFileError
    from hapi_grpc.adapters.datastorage_server import run_datastorage_server
    from hapi_grpc.observability.logging import configure_logging

    configure_logging("INFO", "text")
    try:
        asyncio.run(run_datastorage_server(args.catalog, args.host, args.port))
    except CatalogFileError as exc:
        print(f"hapi-grpc: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def _catalog_check(args: argparse.Namespace) -> int:
    from hapi_grpc.adapters.catalog.loader import CatalogFileError, load_catalog_file

    try:
        workflows = load_catalog_file(args.file)
    except CatalogFileError as exc:
        print(f"hapi-grpc: {exc}", file=sys.stderr)
        return 1
    print(f"{args.file}: {len(workflows)} workflows OK")
    return 0


def _policy_check(args: argparse.Namespace) -> int:
    from hapi_grpc.adapters.policy_file import read_policy
    from hapi_grpc.domain.policy.rules import PolicyError

    try:
        policy = read_policy(args.file)
    except PolicyError as exc:  # one line, naming the rule
        print(f"hapi-grpc: {exc}", file=sys.stderr)
        return 1
    print(f"{args.file}: {len(policy.rules)} rules OK")
    return 0


def _premises_check(args: argparse.Namespace) -> int:
    from hapi_grpc.adapters.catalog.loader import CatalogFileError, load_catalog_file
    from hapi_grpc.adapters.premises_file import read_premises
    from hapi_grpc.domain.premises import PackError, bundled_book
    from hapi_grpc.domain.premises.report import describe_workflow

    try:
        book = read_premises(args.file) if args.file else bundled_book()
        workflows = load_catalog_file(args.catalog) if args.catalog else []
    except (PackError, CatalogFileError) as exc:  # one line, naming the entry
        print(f"hapi-grpc: {exc}", file=sys.stderr)
        return 1
    for workflow in workflows:
        print(describe_workflow(book, workflow))
    operator = book.operator
    print(
        f"{args.file or 'shipped packs'}: {len(book.action_types)} action types with packs,"
        f" {len(operator.packs)} operator packs, {len(operator.workflows)} workflow entries OK"
    )
    return 0


def _harness(args: argparse.Namespace) -> int:
    # The cases and the runner live next to the package in a source checkout.
    name, module = args.harness
    root = Path(__file__).resolve().parents[1]
    if not (root / "evals" / "harness").is_dir():
        print(f"hapi-grpc {name}: needs a source checkout (evals/ not found)", file=sys.stderr)
        return EXIT_USAGE
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    # By name: the harness is not part of the installed package (nor of its type check).
    import importlib

    return int(importlib.import_module(module).main(list(args.harness_args)))


# --- client commands --------------------------------------------------------------


def _credentials(args: argparse.Namespace) -> grpc.ChannelCredentials | None:
    if not args.tls_ca:
        return None
    from hapi_grpc.security.tls import channel_credentials

    return channel_credentials(args.tls_ca, args.tls_cert, args.tls_key)


def _client(args: argparse.Namespace) -> Any:
    from hapi_grpc.client import HapiClient

    token = Path(args.token_file).read_text(encoding="utf-8").strip() if args.token_file else None
    return HapiClient(
        args.address, credentials=_credentials(args), token=token, timeout=args.timeout
    )


def _analyze(args: argparse.Namespace) -> int:
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


def _validate(args: argparse.Namespace) -> int:
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


def _plain(value: Any) -> Any:
    """Struct numbers are doubles on the wire; show whole numbers as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _struct_json(struct: Any) -> str:
    return json.dumps(_plain(json_format.MessageToDict(struct)), sort_keys=True)


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


if __name__ == "__main__":
    sys.exit(main())
