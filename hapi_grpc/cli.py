"""The `hapi-grpc` command line.

Design notes: docs/internals.md (`cli.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from hapi_grpc import client_commands
from hapi_grpc.config import ConfigError, Settings

EXIT_USAGE = 2


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
            p.set_defaults(func=client_commands.analyze, timeout=330.0)
        else:
            p.add_argument("workflow_id")
            p.add_argument("parameters", help="JSON object file, or - for standard input")
            p.set_defaults(func=client_commands.validate, timeout=30.0)
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

    # Their own parsers read every argument after the command.
    for name, module, helptext in (
        ("eval", "evals.harness.cli", "score remediation decisions (eval --help)"),
        ("cases", "hapi_grpc.cases.review", "label captured evaluation cases (cases --help)"),
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
    from hapi_grpc.adapters.operator_files import read_policy
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
    from hapi_grpc.adapters.operator_files import read_premises
    from hapi_grpc.domain.premises import PackError, bundled_book
    from hapi_grpc.domain.premises.book import describe_workflow

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
    # The replay runner lives next to the package in a source checkout.
    name, module = args.harness
    root = Path(__file__).resolve().parents[1]
    if module.startswith("evals.") and not (root / "evals" / "harness").is_dir():
        print(f"hapi-grpc {name}: needs a source checkout (evals/ not found)", file=sys.stderr)
        return EXIT_USAGE
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    # By name: the harness is not part of the installed package (nor of its type check).
    import importlib

    return int(importlib.import_module(module).main(list(args.harness_args)))


if __name__ == "__main__":
    sys.exit(main())
