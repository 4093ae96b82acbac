"""The kubelet's and the runtimes' own texts, read as the runtimes write them, in linear time."""

from __future__ import annotations

import time

import pytest

from hapi_grpc.analyst.runtime_errors import (
    NOTE_LENGTH_LIMIT,
    PullFailure,
    StartFailure,
    missing_object,
    pull_failure,
    start_failure,
)

REF = "registry.example.com/payments/checkout-api:4.18.0-rc2"
CONTAINERD_NOT_FOUND = (
    f'Failed to pull image "{REF}": rpc error: code = NotFound desc = failed to pull and unpack'
    f' image "{REF}": failed to resolve reference "{REF}": {REF}: not found'
)
CONTAINERD_TOKEN_401 = (
    f'Failed to pull image "{REF}": failed to pull and unpack image "{REF}": failed to resolve'
    f' reference "{REF}": failed to authorize: failed to fetch anonymous token: unexpected'
    " status from GET request to https://registry.example.com/token?scope=repository:payments:pull:"
    " 401 Unauthorized"
)
CONTAINERD_HOST_403 = (
    f'Failed to pull image "{REF}": rpc error: code = Unknown desc = failed to pull and unpack'
    f' image "{REF}": failed to resolve reference "{REF}": pulling from host'
    " registry.example.com failed with status code [manifests 4.18.0-rc2]: 403 Forbidden"
)
CRIO_MANIFEST_UNKNOWN = (
    'Failed to pull image "quay.io/acme/web:4.1": initializing source docker://quay.io/acme/'
    "web:4.1: reading manifest 4.1 in quay.io/acme/web: manifest unknown"
)
CRIO_DENIED = (
    'Failed to pull image "docker.io/acme/private:2": rpc error: code = Unknown desc = reading'
    " manifest 2 in docker.io/acme/private: requested access to the resource is denied"
)
CRIO_UNAUTHORIZED = (
    'Failed to pull image "quay.io/acme/web:4.1": initializing source docker://quay.io/acme/'
    "web:4.1: reading manifest 4.1 in quay.io/acme/web: unauthorized: authentication required"
)
DIAL = (
    f'Failed to pull image "{REF}": rpc error: code = Unknown desc = failed to pull and unpack'
    f' image "{REF}": failed to resolve reference "{REF}": failed to do request: Head'
    ' "https://registry.example.com/v2/payments/checkout-api/manifests/4.18.0-rc2": dial tcp'
    " 10.0.0.5:443: i/o timeout"
)

# containerd's answer when the image exists but has no variant for the node's
# architecture: NotFound, yet the reference is right (a node-to-image fit).
CONTAINERD_NO_PLATFORM = (
    f'Failed to pull image "{REF}": rpc error: code = NotFound desc = failed to pull and unpack'
    f' image "{REF}": no match for platform in manifest: not found'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CONTAINERD_NOT_FOUND, PullFailure.NOT_FOUND),
        (CONTAINERD_NO_PLATFORM, PullFailure.PLATFORM),
        (CONTAINERD_TOKEN_401, PullFailure.UNAUTHORIZED),
        (CONTAINERD_HOST_403, PullFailure.UNAUTHORIZED),
        (CRIO_MANIFEST_UNKNOWN, PullFailure.NOT_FOUND),
        (CRIO_DENIED, PullFailure.UNAUTHORIZED),
        (CRIO_UNAUTHORIZED, PullFailure.UNAUTHORIZED),
        (DIAL, PullFailure.UNREACHABLE),
        ("Back-off pulling image " + REF, PullFailure.UNKNOWN),
    ],
)
def test_pull_failures_as_containerd_and_cri_o_write_them(text: str, expected: PullFailure) -> None:
    assert pull_failure([text]) is expected


def test_a_message_cut_before_its_cause_is_unknown_not_guessed() -> None:
    # The scheduler and recorders cut at NoteLengthLimit with " ..."; the tools cut
    # shorter. A long reference pushes "401 Unauthorized" past the cut.
    long_ref = "registry.example.com/" + "team/" * 80 + "app:1"
    text = (
        f'Failed to pull image "{long_ref}": failed to pull and unpack image "{long_ref}":'
        f' failed to resolve reference "{long_ref}": failed to authorize: 401 Unauthorized'
    )
    cut = text[: NOTE_LENGTH_LIMIT - 4] + " ..."
    assert pull_failure([cut]) is PullFailure.UNKNOWN
    # The first text that tells decides; one that does not is skipped.
    assert pull_failure([cut, CRIO_MANIFEST_UNKNOWN]) is PullFailure.NOT_FOUND


@pytest.mark.parametrize(
    ("text", "expected", "missing"),
    [
        (
            'Error: configmap "orders-settings" not found',
            StartFailure.MISSING_OBJECT,
            ("ConfigMap", "orders-settings"),
        ),
        (
            "Error: couldn't find key DB_URL in ConfigMap shop/app-config",
            StartFailure.MISSING_OBJECT,
            ("ConfigMap", "app-config"),
        ),
        (
            'Error: secret "tls-bundle" not found',
            StartFailure.MISSING_OBJECT,
            ("Secret", "tls-bundle"),
        ),
        (
            "failed to create containerd task: failed to create shim task: OCI runtime create"
            " failed: runc create failed: unable to start container process: exec:"
            ' "/app/server": stat /app/server: no such file or directory: unknown',
            StartFailure.COMMAND_NOT_FOUND,
            None,
        ),
        (
            'container create failed: executable file not found in $PATH: "serve"',
            StartFailure.COMMAND_NOT_FOUND,
            None,
        ),
        ("exec /usr/local/bin/app: exec format error", StartFailure.WRONG_PLATFORM, None),
    ],
)
def test_container_start_failures(
    text: str, expected: StartFailure, missing: tuple[str, str] | None
) -> None:
    assert start_failure([text]) is expected
    assert missing_object([text]) == missing


def test_hostile_text_is_read_in_linear_time() -> None:
    # Near-misses at every position: a backtracking matcher retries each of them.
    text = ('failed to resolve reference "' + "a" * 300 + '": ') * 200 + "é" * 60_000
    start = time.process_time()
    for _ in range(50):
        pull_failure([text])
        start_failure([text])
        missing_object([text])
    assert time.process_time() - start < 1.0
