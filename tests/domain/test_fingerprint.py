"""The incident fingerprint: the digest of what `dataclasses.asdict` gives, less moving fields."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from hapi_grpc.domain.fingerprint import _digest, incident_fingerprint
from hapi_grpc.domain.incident import DeduplicationContext
from tests.fakes.investigation import make_incident


def by_asdict(incident: object) -> str:
    # The same digest, of the content as the slower standard library gives it.
    return _digest(dataclasses.asdict(incident))  # type: ignore[call-overload]


def test_the_fingerprint_is_that_of_the_incident_as_asdict_gives_it() -> None:
    seen = datetime(2026, 11, 20, 8, 30, tzinfo=UTC)
    incidents = [
        make_incident(),
        make_incident("rr-2", custom_labels={}, detected_labels={"gitops": True, "ha": 2.5}),
        dataclasses.replace(
            make_incident("rr-3"),
            deduplication=DeduplicationContext(True, seen, seen, 4, "rr-prev"),
        ),
    ]
    for incident in incidents:
        assert incident_fingerprint(incident) == by_asdict(incident)


def test_the_remediation_id_and_moving_counters_do_not_change_it() -> None:
    first = make_incident("rr-a")
    retry = dataclasses.replace(
        make_incident("rr-b"),
        deduplication=dataclasses.replace(first.deduplication, occurrence_count=9),
    )
    assert incident_fingerprint(first) == incident_fingerprint(retry)
    other = dataclasses.replace(first, incident_id="fp-other")
    assert incident_fingerprint(other) != incident_fingerprint(first)
