"""Structured logs: JSON shape, context through async tasks, redaction everywhere."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from hapi_grpc.domain import sensitive
from hapi_grpc.observability import logging as hlog

_API_KEY = "sk-proj-Zx81QmVv0cLkTq3bY7wN"
_REGISTERED = "opaque-registered-secret-7f3e"


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    out = io.StringIO()
    hlog.configure_logging("DEBUG", "json", stream=out)
    yield out
    root.handlers[:] = handlers
    root.setLevel(level)


def _records(out: io.StringIO) -> list[dict]:
    records = [json.loads(line) for line in out.getvalue().splitlines() if line]
    return [r for r in records if r["logger"].startswith("hapi.")]


def test_json_record_has_required_fields_and_rfc3339_utc_timestamp(stream: io.StringIO) -> None:
    logging.getLogger("hapi.test").info("tool %s finished", "search", extra={"duration_ms": 12})

    (record,) = _records(stream)
    assert record["level"] == "INFO"
    assert record["logger"] == "hapi.test"
    assert record["message"] == "tool search finished"
    assert record["duration_ms"] == 12
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["timestamp"])
    assert "remediation_id" not in record


def test_one_object_per_line_even_with_newlines_in_message(stream: io.StringIO) -> None:
    logging.getLogger("hapi.test").warning("line one\nline two")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["message"] == "line one\nline two"


def test_configure_is_idempotent(stream: io.StringIO) -> None:
    hlog.configure_logging("INFO", "json", stream=stream)
    hlog.configure_logging("INFO", "json", stream=stream)
    logging.getLogger("hapi.test").info("once")
    assert len(_records(stream)) == 1


def test_level_filters_and_unknown_level_is_rejected(stream: io.StringIO) -> None:
    hlog.configure_logging("warning", "json", stream=stream)
    logging.getLogger("hapi.test").info("hidden")
    logging.getLogger("hapi.test").warning("shown")
    assert [r["message"] for r in _records(stream)] == ["shown"]
    with pytest.raises(ValueError):
        hlog.configure_logging("LOUD")
    with pytest.raises(ValueError):
        hlog.configure_logging("INFO", "xml")  # type: ignore[arg-type]


async def test_context_fields_follow_async_tasks_without_leaking(stream: io.StringIO) -> None:
    log = logging.getLogger("hapi.test")

    async def investigation(rid: str) -> None:
        with hlog.log_context(remediation_id=rid, incident_id=f"inc-{rid}"):
            await asyncio.sleep(0)
            # A task started inside the investigation inherits its context.
            await asyncio.create_task(_child(log, rid))
            log.info("done %s", rid)

    await asyncio.gather(*(investigation(f"rem-{i}") for i in range(5)))
    log.info("outside")
    records = _records(stream)
    for record in records:
        if record["message"] == "outside":
            assert "remediation_id" not in record and "incident_id" not in record
        else:
            rid = record["message"].split()[-1]
            assert record["remediation_id"] == rid
            assert record["incident_id"] == f"inc-{rid}"
    assert len(records) == 11


async def _child(log: logging.Logger, rid: str) -> None:
    await asyncio.sleep(0)
    log.info("child of %s", rid)


def test_trace_id_binding_and_reset(stream: io.StringIO) -> None:
    token = hlog.bind_log_context(trace_id="ab" * 16)
    logging.getLogger("hapi.test").info("with trace")
    hlog.reset_log_context(token)
    logging.getLogger("hapi.test").info("without trace")
    first, second = _records(stream)
    assert first["trace_id"] == "ab" * 16
    assert "trace_id" not in second


def test_secrets_redacted_from_message_args_extra_and_exception(stream: io.StringIO) -> None:
    sensitive.register_secret(_REGISTERED + "\n")  # as read from a mounted file
    log = logging.getLogger("hapi.test")
    log.info("key is %s", _REGISTERED)
    log.info("calling with Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig")
    log.info(
        "config", extra={"headers": {"x": f"Bearer {_REGISTERED}"}, "url": f"k?api_key={_API_KEY}"}
    )
    log.info("provider key %s", _API_KEY)
    log.info("cache at redis://:hunter2hunter2@redis:6379/0")
    try:
        raise RuntimeError(f"upstream rejected {_REGISTERED} and {_API_KEY}")
    except RuntimeError:
        log.exception("call failed")

    text = stream.getvalue()
    for secret in (_REGISTERED, _API_KEY, "eyJhbGciOiJIUzI1NiJ9", "hunter2hunter2"):
        assert secret not in text
    records = _records(stream)
    assert records[0]["message"] == "key is [REDACTED]"
    assert "Bearer [REDACTED]" in records[1]["message"]
    assert records[2]["url"] == "k?api_key=[REDACTED]"
    assert records[4]["message"] == "cache at redis://[REDACTED]@redis:6379/0"
    assert "RuntimeError: upstream rejected [REDACTED] and [REDACTED]" in records[5]["exception"]


def test_text_format_is_readable_and_redacted(stream: io.StringIO) -> None:
    out = io.StringIO()
    hlog.configure_logging("INFO", "text", stream=out)
    with hlog.log_context(remediation_id="rem-1"):
        logging.getLogger("hapi.text").info("using %s", _API_KEY, extra={"tool": "search"})
    assert stream.getvalue() == ""  # the JSON handler was replaced, not kept
    line = out.getvalue().strip()
    assert not line.startswith("{")
    assert "INFO" in line and "hapi.text" in line and "[remediation_id=rem-1]" in line
    assert 'tool="search"' in line
    assert _API_KEY not in line and "[REDACTED]" in line


def test_redact_mapping_hides_secret_named_values_at_any_depth() -> None:
    params = {
        "NAMESPACE": "payments",
        "DB_PASSWORD": "pw",
        "api_token": "t",
        "ClientSecret": "s",
        "SSH_KEY": "k",
        "AWS_CREDENTIALS": "c",
        "NESTED": {"inner_token": "x", "REPLICAS": 3, "list": [f"Bearer {_REGISTERED}"]},
    }
    redacted = sensitive.redact_mapping(params)
    assert redacted == {
        "NAMESPACE": "payments",
        "DB_PASSWORD": "[REDACTED]",
        "api_token": "[REDACTED]",
        "ClientSecret": "[REDACTED]",
        "SSH_KEY": "[REDACTED]",
        "AWS_CREDENTIALS": "[REDACTED]",
        "NESTED": {"inner_token": "[REDACTED]", "REPLICAS": 3, "list": ["Bearer [REDACTED]"]},
    }
    assert params["DB_PASSWORD"] == "pw"  # the input is not changed


def test_redaction_leaves_ordinary_text_alone() -> None:
    text = "OOMKilled pod api-7d9 in namespace sk-team; 3 tokens; skip-this; bearer of news"
    assert sensitive.redact(text) == text
