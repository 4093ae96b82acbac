"""Premises by action type: what must hold before a workflow is automated.

A workflow inherits the premise pack of its action type (`packs`, shipped in
`hapi_grpc/data/premises/`), bound to its parameters through roles (`roles`); its
own declarations add to it; the operator's premises file adds, extends or replaces
packs and maps roles (`book`). `evaluate` runs them on the observed record. A
state-changing workflow with no pack and no declaration is *unverified*
(`Premises.unverified`): the selection gate sends it to review.

The API others build on:

    from hapi_grpc.domain.premises import bundled_book, bound_over, evaluate_premises

    book = bundled_book()                       # or the one `app.build_premises` made
    premises = book.premises(workflow_id, hit, parameters=names)
    results = evaluate_premises(premises, bound_over(incident, observed), params)
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
