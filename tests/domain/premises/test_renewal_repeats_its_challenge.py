"""RenewCertificate is not a retry of a challenge that failed validation: an ACME Order
or Challenge of the Certificate's issuer that is invalid (or, after failed issuances, a
presented Challenge whose self-check still fails) will be presented again, through the
same solver, by a new issuance. A failure that was not the challenge's (a rate limit)
may be retried. An issuer that is not ACME (a CA issuer) presents no challenge: its
failed issuances do not call for one to be read."""

from __future__ import annotations

from typing import Any

from hapi_grpc.domain.observed import Observed
from tests.domain.premises.scenes import NS, record, schema, verdict

RENEW = schema("RenewCertificate", "NAMESPACE", "CERTIFICATE_NAME")
PARAMS = {"NAMESPACE": NS, "CERTIFICATE_NAME": "shop-tls"}
ISSUER_REF = {"kind": "Issuer", "name": "acme", "group": "cert-manager.io"}


ACME_SPEC = {"acme": {"server": "https://acme.example.org/directory"}}


def scene(
    *attempts: dict[str, Any], failed: int = 3, issuer_spec: dict[str, Any] | None = None
) -> Observed:
    issuer = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Issuer",
        "metadata": {"name": "acme", "namespace": NS},
        "spec": ACME_SPEC if issuer_spec is None else issuer_spec,
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    certificate = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "shop-tls", "namespace": NS},
        "spec": {"secretName": "shop-tls", "issuerRef": {"kind": "Issuer", "name": "acme"}},
        "status": {
            "failedIssuanceAttempts": failed,
            "lastFailureTime": "2026-11-26T04:00:00Z",
            "conditions": [{"type": "Ready", "status": "False", "reason": "Failed"}],
        },
    }
    return record(issuer, certificate, *attempts)


def acme(kind: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "acme.cert-manager.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"issuerRef": ISSUER_REF},
        "status": status,
    }


def test_a_renewal_after_an_error_outside_the_challenge_is_allowed() -> None:
    errored = acme("Order", "shop-tls-3-1", {"state": "errored", "reason": "429 rateLimited"})
    assert verdict(scene(errored), RENEW, PARAMS) is None


def test_an_invalid_order_is_not_renewed_into_the_same_failure() -> None:
    veto = verdict(scene(acme("Order", "shop-tls-3-1", {"state": "invalid"})), RENEW, PARAMS)
    assert veto is not None
    assert "RenewCertificate.last_attempt_not_refused_by_its_challenge" in veto.message


def test_a_presented_challenge_failing_its_self_check_after_failures_is_not_renewed() -> None:
    failing = {"presented": True, "state": "pending", "reason": "wrong status code '404'"}
    challenge = acme("Challenge", "shop-tls-3-1-7", failing)
    veto = verdict(scene(challenge), RENEW, PARAMS)
    assert veto is not None and "last_attempt_not_refused_by_its_challenge" in veto.message
    # A first attempt still propagating has not failed anything yet.
    assert verdict(scene(challenge, failed=0), RENEW, PARAMS) is None


def test_failed_issuances_with_no_acme_attempt_read_are_unverified() -> None:
    shop_order = {
        "apiVersion": "shop.example.com/v1",
        "kind": "Order",
        "metadata": {"name": "o-1", "namespace": NS},
        "spec": {"issuerRef": ISSUER_REF},
        "status": {"state": "invalid"},
    }
    veto = verdict(scene(shop_order), RENEW, PARAMS)  # another group's Order says nothing
    assert veto is not None and "last_attempt_not_refused_by_its_challenge" in veto.message
    assert verdict(scene(shop_order, failed=0), RENEW, PARAMS) is None


def test_failed_issuances_through_a_ca_issuer_need_no_challenge_read() -> None:
    ca_issuer = {"ca": {"secretName": "shop-ca"}}
    assert verdict(scene(issuer_spec=ca_issuer), RENEW, PARAMS) is None
    # Through an ACME issuer, or one not read, the attempts must have been read.
    veto = verdict(scene(), RENEW, PARAMS)
    assert veto is not None and "last_attempt_not_refused_by_its_challenge" in veto.message
