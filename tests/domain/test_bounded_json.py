"""The shared bounded-JSON reader: nesting measured as the parser would see it."""

from __future__ import annotations

import json

import pytest

from hapi_grpc.domain.bounded_json import (
    PRUNED,
    JsonBoundsError,
    check_depth,
    holds_pruned,
    loads,
    loads_pruned,
    nesting,
)


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("3", 0),
        ("[]", 1),
        ('{"a": [1, {"b": 2}]}', 3),
        ('{"a": "[[[[{{{{"}', 1),  # brackets inside strings do not count
        ('["\\"[[[", [2]]', 2),  # nor after an escaped quote
        ('["a\\\\", [[3]]]', 3),  # an escaped backslash ends the escape
    ],
)
def test_nesting_skips_strings(text: str, depth: int) -> None:
    assert nesting(text) == depth
    assert loads(text, max_bytes=100, max_depth=depth) == json.loads(text)


def test_past_the_bounds_is_a_json_error_before_parsing() -> None:
    with pytest.raises(json.JSONDecodeError, match="nested deeper than 64 levels"):
        loads("[" * 65 + "]" * 65, max_bytes=1000)
    with pytest.raises(JsonBoundsError, match="larger than 10 bytes"):
        loads(b'"' + b"x" * 20 + b'"', max_bytes=10)
    assert loads("[" * 64 + "]" * 64, max_bytes=1000)[0] is not None


def test_check_depth_bounds_parsed_values() -> None:
    value: list[object] = []
    for _ in range(70):
        value = [value]
    with pytest.raises(ValueError, match="nested deeper than 64 levels"):
        check_depth(value)
    check_depth({"a": [{"b": 1}]})


def test_loads_pruned_cuts_only_what_nests_too_deep() -> None:
    deep = "[" * 5000 + "]" * 5000  # past what the standard parser survives
    text = f'{{"items": [{{"a": "[{{\\"]"}}, {{"b": {deep}}}, {{"c": [[1]]}}], "n": NaN}}'
    value = loads_pruned(text.encode(), max_bytes=100_000, max_depth=3)
    first, second, third = value["items"]
    assert first == {"a": '[{"]'} and not holds_pruned(first)
    assert second == {"b": PRUNED} and holds_pruned(second)
    assert third == {"c": PRUNED}
    assert value["n"] is PRUNED  # no bare NaN in JSON: left out with the rest
    assert loads_pruned('{"a": [1]}', max_bytes=100) == {"a": [1]}
