"""The operator's premises file (`HAPI_PREMISES_FILE`): read and checked at start.

Design notes: docs/internals.md (`adapters/premises_file.py`).
"""

from __future__ import annotations

import yaml

from hapi_grpc.domain import bounded_yaml
from hapi_grpc.domain.premises import PackError, PremiseBook, bundled_book, parse_operator
from hapi_grpc.domain.premises.bundled import role_table

__all__ = ["MAX_PREMISES_BYTES", "read_premises"]

MAX_PREMISES_BYTES = 1 << 20


def read_premises(path: str) -> PremiseBook:
    """The shipped packs overlaid by the file at `path`; PackError (one line) if unusable."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PREMISES_BYTES + 1)
    except OSError as exc:
        raise PackError(f"cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    if len(raw) > MAX_PREMISES_BYTES:
        raise PackError(f"{path} is larger than {MAX_PREMISES_BYTES} bytes")
    try:
        document = bounded_yaml.load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PackError(f"{path} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        what = f" ({problem})" if problem else ""
        raise PackError(f"{path} is not valid YAML{where}{what}") from None
    return bundled_book(parse_operator(document, path, role_table()))
