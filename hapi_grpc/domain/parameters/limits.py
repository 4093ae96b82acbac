"""The validator's hard limits: on values, on patterns and on the text it echoes.

Values and patterns beyond these are rejected whatever a schema says; names
of undeclared parameters are cut (with a marker saying how much) before they
reach an outcome or a log line, so a hostile name cannot amplify into either.
"""

from __future__ import annotations

MAX_STRING_LENGTH = 4096
"""Longest string value accepted for any parameter, whatever its schema says."""

MAX_PATTERN_LENGTH = 512
"""Longest schema pattern that is compiled; longer ones are treated as invalid."""

MAX_SAFE_INTEGER = 2**53 - 1
"""Largest integer magnitude accepted: protobuf Struct carries numbers as doubles."""

MAX_NAME_CHARS = 512
"""Characters of an undeclared parameter's name kept in `ValidationOutcome.stripped`."""

MAX_STRIPPED_NAMES = 64
"""Undeclared names listed in `ValidationOutcome.stripped` (the first, sorted)."""

LOG_NAME_CHARS = 64
"""Characters of a caller-supplied name or id shown in a log line."""

LOG_ID_CHARS = 128
"""Characters of a workflow id shown in a log line (catalog ids are at most 128)."""

LOG_NAMES_SHOWN = 20
"""Undeclared names listed in the log line about stripped parameters."""
