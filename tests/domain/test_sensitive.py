"""The one vocabulary of secrets and caps used wherever text leaves the process."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hapi_grpc.domain import sensitive
from hapi_grpc.domain.credential_shapes import SHAPES, substitute
from hapi_grpc.domain.sensitive import (
    REDACTED,
    clip,
    hides_value,
    is_secret_name,
    redact,
    redact_mapping,
    register_secret,
    replace_secrets,
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("GIT_PASSWORD=hunter2-correct-horse", "hunter2-correct-horse"),
        ('{"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG"}', "wJalrXUtnFEMI/K7MDENG"),
        ("api_key: abcdef123456", "abcdef123456"),
        ("Authorization: Bearer eyabc.def-ghi_jkl", "eyabc.def-ghi_jkl"),
        ("use sk-proj-0123456789abcdef now", "sk-proj-0123456789abcdef"),
        ("key id AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
        ("token ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
        ("redis://:s3cretpass@cache:6379/0", "s3cretpass"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            "MIIEow",
        ),
        ("jwt eyJhbGciOiJI.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "SflKxwRJSMeKKF2QT4"),
    ],
)
def test_credential_shapes_are_hidden(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out


def test_harmless_text_is_untouched() -> None:
    text = "Container api was OOMKilled at limit 512Mi; the key metric rose for 5m."
    assert redact(text) == text


def test_registered_and_passed_secrets_are_hidden() -> None:
    register_secret("  registered-value-42\n")
    assert redact("x registered-value-42 y") == f"x {REDACTED} y"
    assert redact("one-off-value here", secrets=["one-off-value"]) == f"{REDACTED} here"


def test_redact_mapping_by_name_and_by_shape_at_depth() -> None:
    value = {
        "DB_PASSWORD": "p",
        "NAMESPACE": "payments",
        "nested": [{"token": "t"}, "Bearer abcdefghijkl"],
    }
    assert redact_mapping(value) == {
        "DB_PASSWORD": REDACTED,
        "NAMESPACE": "payments",
        "nested": [{"token": REDACTED}, f"Bearer {REDACTED}"],
    }
    deep: object = "leaf"
    for _ in range(20):
        deep = {"a": deep}
    flat = redact_mapping(deep)
    for _ in range(8):
        flat = flat["a"]
    assert flat == REDACTED


@pytest.mark.parametrize("name", ["GIT_PASSWORD", "api_key", "X-Auth", "SESSION_ID", "dsn"])
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["NAMESPACE", "MEMORY_LIMIT_NEW", "REPLICA_COUNT"])
def test_plain_names(name: str) -> None:
    assert not is_secret_name(name)


def test_clip_says_how_much_was_cut() -> None:
    assert clip("short", 10) == "short"
    clipped = clip("x" * 1_048_576, 200)
    assert len(clipped) < 260
    assert clipped.endswith(f"[{1_048_576 - 200} more characters cut]")


def _every_shape(text: str) -> str:
    """What `redact` must return: every shape tried, no pre-check skipping any."""
    data = sensitive._redact_registered(text).encode()  # what other tests registered
    for shape in SHAPES:
        data = substitute(shape, data)
    return data.decode()


# Pieces that make credential shapes likely, including the four non-ASCII
# characters a case-insensitive pattern reads as ASCII letters (Kelvin sign,
# dotted and dotless i, long s), so the pre-checks' folding is exercised.
_PIECES = st.sampled_from(
    [
        "password",
        "PASSWORD",
        "pa\u017f\u017fword",
        "API_\u212aEY",
        "credent\u0130al",
        "CREDENT\u0131AL",
        "token",
        "secret",
        "connection_string",
        "=",
        ": ",
        '"',
        " ",
        "Bearer ",
        "Basic ",
        "dXNlcjpwYXNzd29yZA==",
        "sk-",
        "AKIA",
        "ghp_",
        "xoxb-",
        "eyJ",
        "abcdefgh12345678",
        "https://",
        "u:p@",
        "-----BEGIN RSA PRIVATE KEY-----",
        "\u2026",
        "\n",
        "{",
        "}",
    ]
)


@given(st.one_of(st.text(max_size=700), st.lists(_PIECES, max_size=120).map("".join)))
@settings(max_examples=600, deadline=None)
def test_pre_checks_never_change_what_is_hidden(text: str) -> None:
    """The word pre-checks (short and long text, ASCII or not) only skip shapes
    that would not have matched: the result is that of trying every shape."""
    assert redact(text) == _every_shape(text)


@pytest.mark.parametrize(
    "text",
    [
        "x GIT_PASSWORD=abc",
        "-----BEGIN PRIVATE KEY-----\nabc",
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "https://u:p@h/",
        "ASIAABCDEFGHIJKLMNOP",
        "gho_aaaaaaaaaaaaaaaaaaaaaaaa",
        "xoxb-1234567890-abc",
        "eyJhbGciOiJI.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4",
    ],
)
def test_every_shape_is_tried_in_short_and_long_text(text: str) -> None:
    assert redact(text) != text
    padded = "x" * 300 + " " + text  # past the length where one automaton pass decides
    assert redact(padded) != padded


def test_lone_surrogates_do_not_break_redaction() -> None:
    # JSON escapes can carry them; RE2 reads UTF-8, which cannot.
    assert redact("x\ud800 GIT_PASSWORD=abc") == f"x\ufffd GIT_PASSWORD={REDACTED}"


# --- The registry of known values is bounded ---------------------------------------


def test_an_owner_re_registering_drops_its_old_value() -> None:
    register_secret("rotated-token-one-1111", owner="test: token file")
    assert redact("rotated-token-one-1111") == REDACTED
    register_secret("rotated-token-two-2222", owner="test: token file")
    assert redact("rotated-token-two-2222") == REDACTED
    assert redact("rotated-token-one-1111") == "rotated-token-one-1111"  # forgotten


def test_replacing_an_owners_values_drops_revoked_ones() -> None:
    replace_secrets("test: tokens file", ["static-aaa-1", "static-bbb-2"])
    assert redact("static-aaa-1 static-bbb-2") == f"{REDACTED} {REDACTED}"
    replace_secrets("test: tokens file", ["static-bbb-2"])  # aaa revoked
    assert redact("static-aaa-1 static-bbb-2") == f"static-aaa-1 {REDACTED}"
    replace_secrets("test: tokens file", [])
    assert redact("static-bbb-2") == "static-bbb-2"


def test_values_without_owner_are_kept_for_the_most_recent_only() -> None:
    register_secret("kept-for-good-0000", owner="test: current")
    register_secret("oldest-anonymous-value")
    for i in range(sensitive._MAX_REGISTERED):
        register_secret(f"anonymous-value-{i:04d}")
    assert len(sensitive._anonymous) <= sensitive._MAX_REGISTERED
    assert redact("oldest-anonymous-value") == "oldest-anonymous-value"  # dropped
    last = f"anonymous-value-{sensitive._MAX_REGISTERED - 1:04d}"
    assert redact(last) == REDACTED
    assert redact("kept-for-good-0000") == REDACTED  # an owner's value is never pushed out


def test_one_rule_hides_named_values_in_any_mapping() -> None:
    entry = {"name": "DB_PASSWORD", "value": "pg-secret-value"}
    assert hides_value(entry, "value") and not hides_value(entry, "name")
    assert not hides_value({"name": "LOG_LEVEL", "value": "debug"}, "value")
    assert hides_value({"key": "api-token", "default": "abc"}, "default")
    assert not hides_value({"password": {"type": "string"}}, "password")  # structure stays
    assert redact_mapping({"params": [entry, {"name": "REPLICAS", "value": 3}]}) == {
        "params": [{"name": "DB_PASSWORD", "value": REDACTED}, {"name": "REPLICAS", "value": 3}]
    }


def test_long_registered_values_are_hidden_whole() -> None:
    jwt = "eyJ" + "a" * 300 + ".payload"  # a service-account token is ~1 KB
    register_secret(jwt, owner="test: long token")
    assert redact(f"token {jwt} and {jwt[:-4]}") == f"token {REDACTED} and {jwt[:-4]}"
    register_secret("x" * 300 + "-rotated", owner="test: long token")
    assert redact(jwt) == jwt


def test_registered_values_are_hidden_whether_few_or_many_are_registered() -> None:
    # Few values are looked for as text before the pattern runs; many, by the pattern.
    try:
        for count in (2, 30):
            values = [f"owned-secret-{count}-{n}-ünï" for n in range(count)]
            sensitive.replace_secrets("test-few-or-many", values)
            for value in (values[0], values[-1]):
                assert redact(f"before {value} after") == f"before {REDACTED} after"
            assert redact("nothing secret here") == "nothing secret here"
    finally:
        sensitive.replace_secrets("test-few-or-many", ())
