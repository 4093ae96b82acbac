"""Actions on the objects a workload depends on: its configuration, its image pull
secret, its certificate.

- RevertConfiguration: reads the ConfigMaps and Secrets the workload's template
  references (do they exist; the values are never read); values: the workload.
- RepairPullSecret: reads the failing Pod (its `imagePullSecrets`) and the secret
  named there; values: that secret. The kubelet's "Unable to retrieve some image
  pull secrets (<name>)" names it too when the Pod's spec was not read.
- FixCertificate, RenewCertificate, FixCertificateGitOps: reads the Certificate's
  issuer; values: the Certificate and, for FixCertificate, the issuer's CA secret.
"""

from __future__ import annotations

from typing import Any

import re2

from hapi_grpc.analyst.actions.base import Evidence, Objection, Situation, Values, target_values
from hapi_grpc.analyst.actions.restarts import RestartWorkload, pod_view
from hapi_grpc.analyst.conversation import LIST, Step, pending

__all__ = ["Certificate", "PullSecret", "RevertConfiguration"]

_ACME_ATTEMPTS = ("acme.cert-manager.io/v1/Order", "acme.cert-manager.io/v1/Challenge")

_SECRETS_NAMED = re2.compile(
    r"Unable to retrieve some image pull secrets \((?P<names>[^)]{1,600})\)"
)


class RevertConfiguration(Evidence):
    def _refs(self, situation: Situation) -> list[dict[str, Any]]:
        workload = situation.findings.workload or {}
        return list(workload.get("config_refs", []))[:5]

    def reads(self, situation: Situation) -> list[Step]:
        namespace = situation.namespace
        return pending(
            *(situation.reads.got(r["kind"], namespace, r["name"]) for r in self._refs(situation))
        )

    def values(self, situation: Situation) -> Values | Objection:
        values = RestartWorkload().values(situation)
        if isinstance(values, Objection):
            return values
        maps = [r["name"] for r in self._refs(situation) if r["kind"] == "ConfigMap"]
        if len(maps) == 1:
            values["configmap"] = maps[0]
        return values


class PullSecret(Evidence):
    def _secret(self, situation: Situation, view: dict[str, Any]) -> str:
        named = [str(s) for s in view.get("image_pull_secrets") or [] if s]
        if len(named) == 1:
            return named[0]
        for event in situation.reads.observed.events:
            match = _SECRETS_NAMED.search(event["message"])
            if match:
                names = [n.strip() for n in match.group("names").split(",") if n.strip()]
                if len(names) == 1:
                    return names[0]
        return ""

    def reads(self, situation: Situation) -> list[Step]:
        view = pod_view(situation)
        if isinstance(view, tuple):
            return [view]
        secret = self._secret(situation, view or {})
        return pending(situation.reads.got("Secret", situation.namespace, secret)) if secret else []

    def values(self, situation: Situation) -> Values | Objection:
        view = pod_view(situation)
        secret = self._secret(situation, view if isinstance(view, dict) else {})
        if not secret:
            return Objection("no single image pull secret of the failing Pod was found")
        values = target_values("Secret", situation.namespace)
        values["pull_secret"] = secret
        # The account whose imagePullSecrets the Pods use is the one they run as.
        account = (situation.findings.pod or {}).get("service_account")
        if account:
            values["service_account"] = account
        return values


class Certificate(Evidence):
    def reads(self, situation: Situation) -> list[Step]:
        certificate = situation.reported("Certificate")
        issuer = certificate.get("issuer") or {}
        if not issuer.get("name"):
            return []
        kind = str(issuer.get("kind") or "Issuer")
        namespace = None if kind == "ClusterIssuer" else certificate["namespace"]
        found = situation.reads.got(kind, namespace, str(issuer["name"]))
        if isinstance(found, tuple):
            return [found]  # the issuer first: only an ACME one presents challenges
        if not certificate.get("failed_issuance_attempts") or found.get("acme") is False:
            return []
        # What the failed issuances tried: a challenge that failed validation fails again.
        needed: list[Step] = []
        for attempt in _ACME_ATTEMPTS:
            arguments = {"kind": attempt, "namespace": certificate["namespace"]}
            needed += situation.reads.unread(LIST, arguments, limit=20)
        return needed

    def values(self, situation: Situation) -> Values | Objection:
        certificate = situation.reported("Certificate")
        if not certificate:
            return Objection("no Certificate was read")
        values = target_values("Certificate", certificate["namespace"])
        values["certificate"] = certificate["name"]
        issuer = certificate.get("issuer") or {}
        kind = str(issuer.get("kind") or "Issuer")
        namespace = "" if kind == "ClusterIssuer" else certificate["namespace"]
        record = situation.reads.object(kind, namespace, str(issuer.get("name", "")))
        if record.get("ca_secret"):
            values["secret"] = record["ca_secret"]
        return values
