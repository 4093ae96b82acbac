"""YAML from outside (catalog, premises and policy files), bounded in depth and aliases.

Design notes: docs/internals.md (`domain/bounded_yaml.py`).
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.nodes import MappingNode, Node, SequenceNode

__all__ = ["MAX_ALIAS_NODES", "MAX_DEPTH", "load"]

MAX_DEPTH = 64  # levels of sequences and mappings, as for JSON from outside
MAX_ALIAS_NODES = 100_000  # nodes aliases may add: shared parameter lists fit, bombs do not


class _BoundedLoader(yaml.SafeLoader):
    aliases = True

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._alias_nodes = 0
        self._sizes: dict[int, int] = {}  # id(collection node) -> nodes under it, itself included

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            if not self.aliases:
                raise ComposerError(None, None, "aliases are not allowed", mark)
            node = super().compose_node(parent, index)
            if isinstance(node, SequenceNode | MappingNode) and id(node) not in self._sizes:
                raise ComposerError(None, None, "an alias names a node that contains it", mark)
            self._alias_nodes += self._size(node)
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise ComposerError(
                    None, None, f"aliases expand to more than {MAX_ALIAS_NODES} nodes", mark
                )
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(node, SequenceNode):
            self._sizes[id(node)] = 1 + sum(self._size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            self._sizes[id(node)] = 1 + sum(
                self._size(key) + self._size(value) for key, value in node.value
            )
        return node

    def _size(self, node: Node) -> int:
        return self._sizes.get(id(node), 1)


class _NoAliasLoader(_BoundedLoader):
    aliases = False


def load(text: str, *, aliases: bool = True) -> Any:
    """The YAML document in `text`, like `yaml.safe_load`, within the bounds above."""
    loader = (_BoundedLoader if aliases else _NoAliasLoader)(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
