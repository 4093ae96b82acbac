#!/usr/bin/env python3
"""Validates the Kubernetes manifests under deploy/ offline.

    scripts/validate_manifests.py [DEPLOY_DIR] [--kubernetes-version 1.29 ...]

What it checks, with no cluster and no network:
- kustomization.yaml: its shape, and that every YAML file in the directory is
  used by it or lies under optional/ (a manifest nobody applies is a mistake);
- every resource, the ConfigMaps the kustomization generates, and the files
  under optional/: against the Kubernetes JSON schemas in strict mode (unknown
  fields are errors), using the schemas bundled in the `kubernetes-validate`
  package, for each requested Kubernetes version;
- the ServiceMonitor (a Prometheus Operator CRD the bundled schemas do not
  cover) against a small schema of its essential fields, and custom resources
  of the CRDs shipped here (optional/crds) against those CRDs' schemas;
- references between the applied resources: Service, PodDisruptionBudget,
  NetworkPolicy and ServiceMonitor selectors match something, named ports
  exist, ConfigMaps, Secrets and the ServiceAccount a pod uses are
  defined (or marked optional), and role bindings name a defined role
  (or a built-in system: one) and defined ServiceAccounts, and a pod whose
  ServiceAccount is bound to a role gets its token (automounted, or a
  projected serviceAccountToken volume at the standard path in every
  container);
- the generated catalog ConfigMap with the service's own catalog loader.

Exit status 0 when everything is valid, 1 when something is not, 2 on usage
errors or when kubernetes-validate is not installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

DEFAULT_VERSIONS = ("1.29", "latest")
CATALOG_KEY = "catalog.yaml"
CONFIGMAP_LIMIT = 1024 * 1024  # the API server refuses larger objects

_DURATION = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
_LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
_SELECTOR = {
    "type": "object",
    "properties": {
        "matchLabels": _LABELS,
        "matchExpressions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "operator"],
                "properties": {
                    "key": {"type": "string"},
                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    },
    "additionalProperties": False,
}

# Essential shape of monitoring.coreos.com/v1 ServiceMonitor.
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                "namespace": {"type": "string"},
                "labels": _LABELS,
                "annotations": _LABELS,
            },
        },
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "selector": _SELECTOR,
                "jobLabel": {"type": "string"},
                "namespaceSelector": {
                    "type": "object",
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                    "additionalProperties": False,
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "anyOf": [{"required": ["port"]}, {"required": ["targetPort"]}],
                        "properties": {
                            "port": {"type": "string", "minLength": 1},
                            "targetPort": {"type": ["string", "integer"]},
                            "path": {"type": "string", "pattern": "^/"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": _DURATION},
                            "scrapeTimeout": {"type": "string", "pattern": _DURATION},
                            "honorLabels": {"type": "boolean"},
                        },
                    },
                },
            },
        },
    },
}

# The parts of kustomize.config.k8s.io/v1beta1 Kustomization this layout may
# use; anything else is most likely a typo.
KUSTOMIZATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "resources"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "kustomize.config.k8s.io/v1beta1"},
        "kind": {"const": "Kustomization"},
        "namespace": {"type": "string"},
        "namePrefix": {"type": "string"},
        "nameSuffix": {"type": "string"},
        "labels": {"type": "array"},
        "commonAnnotations": _LABELS,
        "resources": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "components": {"type": "array", "items": {"type": "string"}},
        "patches": {"type": "array"},
        "images": {"type": "array"},
        "replicas": {"type": "array"},
        "generatorOptions": {"type": "object"},
        "secretGenerator": {"type": "array"},
        "configMapGenerator": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "behavior": {"enum": ["create", "replace", "merge"]},
                    "files": {"type": "array", "items": {"type": "string"}},
                    "literals": {"type": "array", "items": {"type": "string"}},
                    "options": {"type": "object"},
                },
            },
        },
    },
}

CRD_SCHEMAS = {("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR_SCHEMA}


@dataclass
class Manifest:
    source: str
    body: dict[str, Any]
    applied: bool  # part of the kustomization (False: under optional/)

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", "?"))

    @property
    def name(self) -> str:
        return str((self.body.get("metadata") or {}).get("name", "?"))

    def __str__(self) -> str:
        return f"{self.kind}/{self.name} ({self.source})"


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    checked: int = 0

    def error(self, message: str) -> None:
        self.errors.append(message)


def _load_yaml_documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        documents = [d for d in yaml.safe_load_all(handle) if d is not None]
    for document in documents:
        if not isinstance(document, dict):
            raise ValueError(f"{path}: a document is not a mapping")
    return documents


def _generated_configmaps(root: Path, kustomization: Mapping[str, Any]) -> Iterator[Manifest]:
    """The ConfigMaps kustomize would generate (before it adds the hash suffix)."""
    for generator in kustomization.get("configMapGenerator") or ():
        data: dict[str, str] = {}
        for entry in generator.get("files") or ():
            key, _, file_name = entry.rpartition("=")
            file_path = root / file_name
            data[key or Path(file_name).name] = file_path.read_text(encoding="utf-8")
        for literal in generator.get("literals") or ():
            key, _, value = literal.partition("=")
            data[key] = value
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": generator["name"]},
            "data": data,
        }
        yield Manifest(f"configMapGenerator {generator['name']}", body, applied=True)


def collect(root: Path, report: Report) -> list[Manifest]:
    kustomization_path = root / "kustomization.yaml"
    if not kustomization_path.is_file():
        report.error(f"{kustomization_path}: missing")
        return []
    (kustomization,) = _load_yaml_documents(kustomization_path)
    for problem in jsonschema.Draft202012Validator(KUSTOMIZATION_SCHEMA).iter_errors(kustomization):
        report.error(f"kustomization.yaml: {_path(problem)}: {problem.message}")
    if report.errors:
        return []

    manifests: list[Manifest] = []
    used = {kustomization_path.resolve()}
    for resource in kustomization["resources"]:
        path = root / resource
        if not path.is_file():
            report.error(f"kustomization.yaml: resource {resource!r} does not exist")
            continue
        used.add(path.resolve())
        manifests += [Manifest(resource, d, True) for d in _load_yaml_documents(path)]
    for generator in kustomization.get("configMapGenerator") or ():
        for entry in generator.get("files") or ():
            path = root / entry.rpartition("=")[2]
            if not path.is_file():
                report.error(f"configMapGenerator {generator['name']}: {path} does not exist")
                return manifests
            used.add(path.resolve())
    manifests += _generated_configmaps(root, kustomization)

    optional_dir = root / "optional"
    for path in sorted(_yaml_files(root)):
        resolved = path.resolve()
        if resolved in used:
            continue
        if optional_dir in path.parents:
            rel = str(path.relative_to(root))
            manifests += [Manifest(rel, d, False) for d in _load_yaml_documents(path)]
        else:
            report.error(
                f"{path.relative_to(root)}: not used by kustomization.yaml "
                "(add it to resources or move it under optional/)"
            )
    return manifests


def _yaml_files(root: Path) -> Iterable[Path]:
    for pattern in ("*.yaml", "*.yml"):
        yield from root.rglob(pattern)


def _path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(root)"


def defined_schemas(manifests: list[Manifest]) -> dict[tuple[str, str], dict[str, Any]]:
    """Schemas of the custom resources that CRDs among `manifests` define, closed
    to unknown fields (the API server prunes them: strict, like the rest)."""
    found = {}
    for manifest in manifests:
        if manifest.kind != "CustomResourceDefinition":
            continue
        spec = manifest.body.get("spec") or {}
        for version in spec.get("versions") or ():
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if version.get("served") and schema:
                key = (f"{spec.get('group')}/{version.get('name')}", spec["names"]["kind"])
                found[key] = _closed(schema)
    return found


def _closed(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    closed = dict(schema)
    if isinstance(schema.get("items"), dict):
        closed["items"] = _closed(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        closed["additionalProperties"] = _closed(schema["additionalProperties"])
    if "properties" in schema:
        closed["properties"] = {k: _closed(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            closed["additionalProperties"] = False
    return closed


def validate_schemas(manifests: list[Manifest], versions: list[str], report: Report) -> None:
    import kubernetes_validate  # bundles the schemas: no network needed
    from kubernetes_validate.utils import SchemaNotFoundError

    custom = {**defined_schemas(manifests), **CRD_SCHEMAS}
    for manifest in manifests:
        report.checked += 1
        key = (manifest.body.get("apiVersion"), manifest.body.get("kind"))
        crd_schema = custom.get(key)  # type: ignore[arg-type]
        if crd_schema is not None:
            validator = jsonschema.Draft202012Validator(crd_schema)
            for problem in validator.iter_errors(manifest.body):
                report.error(f"{manifest}: {_path(problem)}: {problem.message}")
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(manifest.body, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                report.error(f"{manifest}: Kubernetes {version}: {_path(exc)}: {exc.message}")
            except SchemaNotFoundError:
                report.error(f"{manifest}: no schema for {key[0]} {key[1]} in Kubernetes {version}")


def _pods(manifests: list[Manifest]) -> list[tuple[Manifest, dict[str, Any]]]:
    pods = []
    for manifest in manifests:
        if manifest.kind in {"Deployment", "StatefulSet", "DaemonSet"} and manifest.applied:
            template = manifest.body.get("spec", {}).get("template", {})
            pods.append((manifest, template))
    return pods


def _matches(selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    labels = labels or {}
    return bool(selector) and all(labels.get(k) == v for k, v in (selector or {}).items())


def _port_names(template: Mapping[str, Any]) -> set[str]:
    return {
        port["name"]
        for container in template.get("spec", {}).get("containers", [])
        for port in container.get("ports", [])
        if "name" in port
    }


TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _token_mounted(spec: Mapping[str, Any], account: Manifest | None) -> bool:
    """Whether every container of the pod sees its ServiceAccount token at TOKEN_DIR."""
    automount = spec.get("automountServiceAccountToken")
    if automount is None and account is not None:
        automount = account.body.get("automountServiceAccountToken")
    if automount is not False:  # Kubernetes' default is to mount it
        return True
    token_volumes = {
        volume["name"]
        for volume in spec.get("volumes", [])
        if any(
            "serviceAccountToken" in source
            for source in volume.get("projected", {}).get("sources", [])
        )
    }
    return bool(spec.get("containers")) and all(
        any(
            m.get("name") in token_volumes and m.get("mountPath", "").rstrip("/") == TOKEN_DIR
            for m in container.get("volumeMounts", [])
        )
        for container in spec["containers"]
    )


def check_references(manifests: list[Manifest], report: Report) -> None:
    applied = [m for m in manifests if m.applied]
    by_kind: dict[str, dict[str, Manifest]] = {}
    for manifest in applied:
        by_kind.setdefault(manifest.kind, {})[manifest.name] = manifest
    pods = _pods(applied)

    def pods_selected(selector: Mapping[str, str] | None) -> list[dict[str, Any]]:
        return [t for _, t in pods if _matches(selector, t.get("metadata", {}).get("labels"))]

    for service in by_kind.get("Service", {}).values():
        targets = pods_selected(service.body["spec"].get("selector"))
        if not targets:
            report.error(f"{service}: selector matches no pod template")
            continue
        names = set().union(*(_port_names(t) for t in targets))
        for port in service.body["spec"].get("ports", []):
            target = port.get("targetPort")
            if isinstance(target, str) and target not in names:
                report.error(f"{service}: targetPort {target!r} is not a container port name")

    for pdb in by_kind.get("PodDisruptionBudget", {}).values():
        if not pods_selected(pdb.body["spec"].get("selector", {}).get("matchLabels")):
            report.error(f"{pdb}: selector matches no pod template")

    for policy in by_kind.get("NetworkPolicy", {}).values():
        targets = pods_selected(policy.body["spec"].get("podSelector", {}).get("matchLabels"))
        if not targets:
            report.error(f"{policy}: podSelector matches no pod template")
            continue
        names = set().union(*(_port_names(t) for t in targets))
        for rule in policy.body["spec"].get("ingress", []):
            for port in rule.get("ports", []):
                if isinstance(port.get("port"), str) and port["port"] not in names:
                    report.error(f"{policy}: port {port['port']!r} is not a container port name")

    services = list(by_kind.get("Service", {}).values())
    for monitor in by_kind.get("ServiceMonitor", {}).values():
        selector = monitor.body["spec"]["selector"].get("matchLabels")
        chosen = [s for s in services if _matches(selector, s.body["metadata"].get("labels"))]
        if len(chosen) != 1:
            report.error(f"{monitor}: selector matches {len(chosen)} Services (expected exactly 1)")
            continue
        port_names = {p.get("name") for p in chosen[0].body["spec"].get("ports", [])}
        for endpoint in monitor.body["spec"]["endpoints"]:
            if "port" in endpoint and endpoint["port"] not in port_names:
                report.error(f"{monitor}: port {endpoint['port']!r} is not a port of {chosen[0]}")

    for binding in [
        *by_kind.get("ClusterRoleBinding", {}).values(),
        *by_kind.get("RoleBinding", {}).values(),
    ]:
        ref = binding.body.get("roleRef", {})
        defined = by_kind.get(ref.get("kind", ""), {})
        if ref.get("name") not in defined and not str(ref.get("name", "")).startswith("system:"):
            report.error(f"{binding}: roleRef {ref.get('kind')} {ref.get('name')!r} is not defined")
        for subject in binding.body.get("subjects", []):
            if subject.get("kind") == "ServiceAccount" and subject.get("name") not in by_kind.get(
                "ServiceAccount", {}
            ):
                report.error(f"{binding}: ServiceAccount {subject.get('name')!r} is not defined")

    bound_accounts = {
        subject.get("name")
        for binding in [
            *by_kind.get("ClusterRoleBinding", {}).values(),
            *by_kind.get("RoleBinding", {}).values(),
        ]
        for subject in binding.body.get("subjects", [])
        if subject.get("kind") == "ServiceAccount"
    }
    configmaps = by_kind.get("ConfigMap", {})
    secrets = by_kind.get("Secret", {})
    for workload, template in pods:
        spec = template.get("spec", {})
        account = spec.get("serviceAccountName")
        if account and account not in by_kind.get("ServiceAccount", {}):
            report.error(f"{workload}: ServiceAccount {account!r} is not defined")
        if account in bound_accounts and not _token_mounted(
            spec, by_kind.get("ServiceAccount", {}).get(account)
        ):
            report.error(
                f"{workload}: ServiceAccount {account!r} is bound to a role but its token is"
                f" not mounted at {TOKEN_DIR} (automount it or add a projected"
                " serviceAccountToken volume)"
            )
        for volume in spec.get("volumes", []):
            if "configMap" in volume:
                ref = volume["configMap"]
                if ref["name"] not in configmaps and not ref.get("optional"):
                    report.error(f"{workload}: ConfigMap {ref['name']!r} is not defined")
            if "secret" in volume:
                ref = volume["secret"]
                if ref["secretName"] not in secrets and not ref.get("optional"):
                    report.error(
                        f"{workload}: Secret {ref['secretName']!r} is not defined and not optional"
                    )
        for container in spec.get("containers", []):
            for source in container.get("envFrom", []):
                ref = source.get("configMapRef")
                if ref and ref["name"] not in configmaps and not ref.get("optional"):
                    report.error(f"{workload}: ConfigMap {ref['name']!r} is not defined")


def check_catalog(manifests: list[Manifest], report: Report) -> None:
    for manifest in manifests:
        if manifest.kind != "ConfigMap" or CATALOG_KEY not in (manifest.body.get("data") or {}):
            continue
        text = manifest.body["data"][CATALOG_KEY]
        size = sum(len(v.encode("utf-8")) for v in manifest.body["data"].values())
        if size >= CONFIGMAP_LIMIT:
            report.error(f"{manifest}: {size} bytes, over the 1 MiB ConfigMap limit")
        try:
            from hapi_grpc.adapters.catalog.loader import parse_catalog_text
        except ImportError:
            print(f"SKIP {manifest}: catalog loader not importable (install the project)")
            continue
        try:
            workflows = parse_catalog_text(text, str(manifest), "yaml")
        except ValueError as exc:
            report.error(f"{manifest}: catalog invalid: {exc}")
            continue
        print(f"OK   {manifest}: catalog with {len(workflows)} workflows")


def _versions(requested: list[str] | None) -> list[str]:
    from kubernetes_validate.utils import latest_version

    versions = requested or list(DEFAULT_VERSIONS)
    return [latest_version() if v == "latest" else v.removeprefix("v") for v in versions]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "directory", nargs="?", default=str(Path(__file__).resolve().parent.parent / "deploy")
    )
    parser.add_argument(
        "--kubernetes-version",
        action="append",
        dest="versions",
        help=f"validate against this version (repeatable; default: {', '.join(DEFAULT_VERSIONS)})",
    )
    args = parser.parse_args(argv)
    try:
        versions = _versions(args.versions)
    except ImportError:
        print(
            "kubernetes-validate is not installed: pip install kubernetes-validate", file=sys.stderr
        )
        return 2
    root = Path(args.directory)
    if not root.is_dir():
        print(f"{root}: not a directory", file=sys.stderr)
        return 2

    report = Report()
    try:
        manifests = collect(root, report)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        report.error(str(exc))
        manifests = []
    if not report.errors:
        validate_schemas(manifests, versions, report)
        check_references(manifests, report)
        check_catalog(manifests, report)

    for error in report.errors:
        print(f"ERROR {error}")
    if report.errors:
        print(f"{len(report.errors)} problem(s) in {root}")
        return 1
    for manifest in manifests:
        print(f"OK   {manifest}")
    print(
        f"{report.checked} manifests valid against Kubernetes {', '.join(versions)} "
        "(strict schemas) with consistent references"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
