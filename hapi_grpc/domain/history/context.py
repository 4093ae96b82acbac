"""The history context of a target from its entries: windows, hash matches, regression."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from hapi_grpc.domain.history.records import HashMatch, HistoryContext, HistoryEntry, Windows

__all__ = ["build_context", "hash_match"]


def hash_match(entry: HistoryEntry, current: str) -> HashMatch:
    """How `current` compares with the spec after, then before, `entry`; an
    entry without either hash keeps the comparison its source made (Data
    Storage compares with the current hash of the same query)."""
    if not current:
        return HashMatch.NONE
    if not (entry.pre_spec_hash or entry.post_spec_hash):
        return entry.hash_match
    if entry.post_spec_hash == current:
        return HashMatch.POST
    if entry.pre_spec_hash == current:
        return HashMatch.PRE
    return HashMatch.NONE


def build_context(
    target_resource: str,
    current_spec_hash: str,
    entries: Iterable[HistoryEntry],
    windows: Windows,
    now: float,
) -> HistoryContext:
    """Tier 1: every entry inside `windows.tier1`; tier 2: older ones inside
    `windows.tier2` whose spec matches the current one (a configuration
    regression). `regression_detected`: some entry's pre-remediation spec is
    the current spec (the fix was undone)."""
    tier1: list[HistoryEntry] = []
    tier2: list[HistoryEntry] = []
    regression = False
    for entry in sorted(entries, key=lambda e: (e.completed_at, e.attempt)):
        age = now - entry.completed_at
        if age > windows.tier2:
            continue
        match = hash_match(entry, current_spec_hash)
        entry = dataclasses.replace(entry, hash_match=match)
        if match is HashMatch.PRE:
            regression = True
        if age <= windows.tier1:
            tier1.append(entry)
        elif match is not HashMatch.NONE:
            tier2.append(entry)
    return HistoryContext(
        target_resource=target_resource,
        current_spec_hash=current_spec_hash,
        regression_detected=regression,
        tier1_window=windows.tier1,
        tier1=tuple(tier1),
        tier2_window=windows.tier2,
        tier2=tuple(tier2),
    )
