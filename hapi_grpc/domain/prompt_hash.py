"""Which instructions a decision was made with: a hash of the system prompt template.

The template is every text the system prompt is made of: the instructions and
each toolset's note and guide (`hapi_grpc.domain.prompt`), rendered once with
the catalog tools only and once with every known toolset. Changing any of them
changes the hash; the settings that fill in numbers (validation attempts, call
caps) do not. Evaluation reports record it, so two runs say whether they were
made with the same prompt.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from hapi_grpc.domain.prompt import system_prompt
from hapi_grpc.domain.toolsets.registry import TOOLSETS

__all__ = ["prompt_template_hash"]


@lru_cache(maxsize=1)
def prompt_template_hash() -> str:
    """`sha256:<hex>` of the system prompt template this code sends."""
    texts = (system_prompt(), system_prompt(toolsets=TOOLSETS))
    digest = hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()
    return f"sha256:{digest}"
