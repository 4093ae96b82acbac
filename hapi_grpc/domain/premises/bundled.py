"""The packs shipped with the service (`hapi_grpc/data/premises/*.yaml`), loaded once.

Every pack file and the role table are parsed, and every condition compiled and
type-checked, the first time the book is needed (at start: `app.build_premises`), so a
broken pack stops the service before it serves.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import yaml
from pydantic import ValidationError

from hapi_grpc.domain.premises.book import OperatorPremises, PremiseBook
from hapi_grpc.domain.premises.packs import Pack, PackError, parse_packs
from hapi_grpc.domain.premises.roles import RoleTable

__all__ = ["bundled_book", "bundled_packs", "role_table"]

_PACKAGE = "hapi_grpc.data"
_FOLDER = "premises"
_ROLES = "roles.yaml"


def _documents() -> list[tuple[str, Any]]:
    folder = resources.files(_PACKAGE).joinpath(_FOLDER)
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml") and entry.name != _ROLES:
            source = f"premises/{entry.name}"
            try:
                found.append((source, yaml.safe_load(entry.read_text("utf-8"))))
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" at line {mark.line + 1}" if mark is not None else ""
                raise PackError(f"{source} is not valid YAML{where}") from None
    return found


@cache
def role_table() -> RoleTable:
    """The role table (`data/premises/roles.yaml`)."""
    text = resources.files(_PACKAGE).joinpath(_FOLDER).joinpath(_ROLES).read_text("utf-8")
    try:
        return RoleTable.model_validate(yaml.safe_load(text))
    except ValidationError as exc:
        raise PackError(f"premises/{_ROLES}: {exc.errors()[0].get('msg')}") from None


@cache
def bundled_packs() -> dict[str, Pack]:
    """Every shipped pack, by action type; PackError when one is broken or repeated."""
    packs: dict[str, Pack] = {}
    for source, document in _documents():
        for name, pack in parse_packs(document, source).items():
            if name in packs:
                raise PackError(f"{source}: pack {name!r} is also defined in another file")
            packs[name] = pack
    return packs


def bundled_book(operator: OperatorPremises | None = None) -> PremiseBook:
    """The shipped packs, overlaid by the operator's premises when given."""
    if operator is None:
        return _plain_book()
    return PremiseBook(bundled_packs(), role_table(), operator)


@cache
def _plain_book() -> PremiseBook:
    return PremiseBook(bundled_packs(), role_table())
