"""Checks shared by the service's and the toolsets' settings models (pure functions)."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["check_url"]


def check_url(value: str | None, schemes: tuple[str, ...]) -> str | None:
    """`value` stripped when it is a URL with one of `schemes` and a host (none for
    memory://); else ValueError naming what is allowed, never the URL itself
    (it may carry credentials)."""
    if value is None:
        return None
    names = [f"{scheme}://" for scheme in schemes]
    allowed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
    except ValueError:
        raise ValueError(f"must be a URL with scheme {allowed} and a host") from None
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        raise ValueError(f"must be a URL with scheme {allowed} and a host, got {shown}")
    if not host and scheme != "memory":
        raise ValueError(f"must be a URL with scheme {allowed} and a host, got no host")
    return value.strip()
