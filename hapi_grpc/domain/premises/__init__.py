"""Premises by action type: what must hold before a workflow is automated.

Design notes: docs/internals.md (`domain/premises/__init__.py`).
"""

from hapi_grpc.domain.premises.book import PremiseBook, Premises, parse_operator
from hapi_grpc.domain.premises.bundled import bundled_book, role_table
from hapi_grpc.domain.premises.evaluate import evaluate_premises
from hapi_grpc.domain.premises.packs import PackError, parse_packs
from hapi_grpc.domain.premises.roles import bind_roles

__all__ = [
    "PackError",
    "PremiseBook",
    "Premises",
    "bind_roles",
    "bundled_book",
    "evaluate_premises",
    "parse_operator",
    "parse_packs",
    "role_table",
]
