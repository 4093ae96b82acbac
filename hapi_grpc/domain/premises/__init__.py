"""Premises by action type: what must hold before a workflow is automated.

Design notes: docs/internals.md (`domain/premises/__init__.py`).
"""

from hapi_grpc.domain.premises.book import (
    OperatorPremises,
    PremiseBook,
    Premises,
    WorkflowPremises,
    parse_operator,
)
from hapi_grpc.domain.premises.bundled import bundled_book, bundled_packs, role_table
from hapi_grpc.domain.premises.evaluate import BoundFor, bound_over, evaluate_premises
from hapi_grpc.domain.premises.packs import Pack, PackError, parse_packs
from hapi_grpc.domain.premises.roles import RoleBinding, RoleTable, bind_roles

__all__ = [
    "BoundFor",
    "OperatorPremises",
    "Pack",
    "PackError",
    "PremiseBook",
    "Premises",
    "RoleBinding",
    "RoleTable",
    "WorkflowPremises",
    "bind_roles",
    "bound_over",
    "bundled_book",
    "bundled_packs",
    "evaluate_premises",
    "parse_operator",
    "parse_packs",
    "role_table",
]
