"""Cost bounds for CEL that comes from outside the service.

Design notes: docs/internals.md (`domain/cel_cost.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hapi_grpc.domain.cel_ast import Node, read_program

__all__ = ["OUTSIDE", "CelLimits", "Shape", "check_limits", "estimate", "within_inputs"]

# The runtime's own bound (cel-cpp RuntimeOptions.comprehension_max_iterations).
ITERATION_BUDGET = 10_000


@dataclass(frozen=True, slots=True)
class CelLimits:
    """What an expression from one kind of source may cost."""

    max_chars: int = 2048
    max_nodes: int = 400
    max_cost: int = 30_000_000  # about 1-2 ns each: tens of milliseconds at worst
    max_string: int = 256 * 1024  # the longest string an expression may build
    input_chars: int = 1024  # any string of an input (checked at run time)
    input_items: int = 200  # a variable's entries, and each collection in it
    input_nested_items: int = 50  # each collection nested deeper
    # Variables the service fills itself, bounded where they are built: the
    # observed record keeps strings of at most 300 characters.
    recorded: tuple[tuple[str, int], ...] = (("observed", 300),)


OUTSIDE = CelLimits()


@dataclass(frozen=True, slots=True)
class Shape:
    """Upper bounds of a value: `chars` as a string, `items` as a list or map,
    `item` the shape of its elements (None: an input's, unbounded by literals)."""

    chars: float = 1.0
    items: float = 0.0
    item: Shape | None = None
    min_chars: float = 0.0  # a lower bound, known for string constants


@dataclass(frozen=True, slots=True)
class _Est:
    cost: float
    shape: Shape


def check_limits(source: str, program: Any, limits: CelLimits) -> None:
    """Raises ValueError naming the bound `source` (compiled as `program`) exceeds."""
    if len(source) > limits.max_chars:
        raise ValueError(f"is longer than {limits.max_chars} characters")
    root = read_program(program)
    nodes = _count(root)
    if nodes > limits.max_nodes:
        raise ValueError(f"has {nodes} syntax nodes, more than {limits.max_nodes}")
    longest = _Estimator(limits).longest(root)
    if longest > limits.max_string:
        raise ValueError(
            f"can build a string of {longest:.3g} characters, more than {limits.max_string:,}"
        )
    cost = estimate(root, limits)
    if cost > limits.max_cost:
        raise ValueError(
            f"has an estimated cost of {cost:.3g}, more than {limits.max_cost:,} "
            "(string growth, nested loops or large inputs)"
        )


def _count(node: Node) -> int:
    return 1 + sum(_count(a) for a in node.args)


def estimate(root: Node, limits: CelLimits) -> float:
    """The worst-case cost of evaluating `root` on inputs within `limits`: loops
    multiply their bodies, but all loops together run at most ITERATION_BUDGET
    times (the runtime stops past it), so the cost is also at most the cost with
    every loop run once plus the budget times the dearest single iteration."""
    nested = _Estimator(limits).walk(root, {}).cost
    flat = _Estimator(limits, flat=True)
    once = flat.walk(root, {}).cost
    return min(nested, once + ITERATION_BUDGET * max(flat.iterations, default=0.0))


def within_inputs(values: Mapping[str, Any], limits: CelLimits) -> bool:
    """Whether `values` (variables from a request or a model: incident, params)
    are within the sizes the estimate assumed: strings of `input_chars`, each
    variable and the collections in it of `input_items`, deeper ones of
    `input_nested_items`."""
    stack: list[tuple[Any, int]] = [(v, 0) for v in values.values()]
    visited = 0
    while stack:
        value, depth = stack.pop()
        visited += 1
        if visited > 100_000:  # far past anything within the bounds
            return False
        if isinstance(value, str | bytes):
            if len(value) > limits.input_chars:
                return False
            continue
        # Numbers and None before the `Mapping` check: an ABC's isinstance costs
        # several times a concrete type's, and most values are scalars.
        if value is None or isinstance(value, int | float):
            continue
        most = limits.input_items if depth < 2 else limits.input_nested_items
        if isinstance(value, dict | Mapping):
            if len(value) > most:
                return False
            stack.extend((v, depth + 1) for v in (*value.keys(), *value.values()))
        elif isinstance(value, list | tuple):
            if len(value) > most:
                return False
            stack.extend((v, depth + 1) for v in value)
    return True


def _traverse(chars: float) -> float:
    return 0.1 * chars


def _build(chars: float) -> float:
    """Building a string piece by piece (replace, join, format): measured about ten
    times slower per character than reading one."""
    return chars


# A new string in a new list (split): measured about 25 times the cost of reading
# a character, whatever its length.
_ELEMENT = 25.0


def _item(shape: Shape, input_shape: Shape) -> Shape:
    return shape.item or input_shape


def _widest(*shapes: Shape) -> Shape:
    items = [s.item for s in shapes if s.item is not None]
    return Shape(
        chars=max(s.chars for s in shapes),
        items=max(s.items for s in shapes),
        item=None
        if any(s.item is None and s.items for s in shapes) or not items
        else _widest(*items),
    )


_SCALAR = Shape()


class _Estimator:
    def __init__(self, limits: CelLimits, *, flat: bool = False) -> None:
        self.limits = limits
        self.flat = flat  # count every loop as running once
        self.iterations: list[float] = []  # (flat) the cost of one iteration of each loop
        self.strings: list[float] = []  # the longest string each node can give
        self.variables = {name: self._variable(chars, limits) for name, chars in limits.recorded}
        self.variable = self._variable(limits.input_chars, limits)
        self.input = _item(_item(self.variable, self.variable), self.variable)
        self.accumulators: set[str] = set()

    @staticmethod
    def _variable(chars: float, limits: CelLimits) -> Shape:
        nested = Shape(chars=chars, items=limits.input_nested_items)
        nested = Shape(chars=chars, items=nested.items, item=nested)  # and so on down
        top = Shape(chars=chars, items=limits.input_items, item=nested)
        return Shape(chars=chars, items=limits.input_items, item=top)

    def longest(self, root: Node) -> float:
        """The longest string any node of `root` can give."""
        self.walk(root, {})
        return max(self.strings, default=0.0)

    def walk(self, node: Node, scope: dict[str, Shape]) -> _Est:
        est = self._walk(node, scope)
        self.strings.append(est.shape.chars)
        return est

    def _walk(self, node: Node, scope: dict[str, Shape]) -> _Est:
        if node.kind == "const":
            chars = len(node.text) if node.text is not None else 1
            return _Est(0, Shape(chars=chars, min_chars=chars))
        if node.kind == "ident":
            shape = scope.get(node.name) or self.variables.get(node.name, self.variable)
            return _Est(1, shape)
        if node.kind == "select":
            operand = self.walk(node.args[0], scope)
            return _Est(operand.cost + 1, _item(operand.shape, self.input))
        if node.kind in ("list", "struct"):
            parts = [self.walk(a, scope) for a in node.args]
            values = [p.shape for p in (parts[1::2] if node.kind == "struct" else parts)]
            items = len(values)
            item = _widest(*values) if values else _SCALAR
            base = 10 if node.kind == "list" else 30
            return _Est(base + sum(p.cost for p in parts), Shape(chars=1, items=items, item=item))
        if node.kind == "loop":
            return self._loop(node, scope)
        return self._call(node, scope)

    def _loop(self, node: Node, scope: dict[str, Shape]) -> _Est:
        range_node, init_node, cond_node, step_node, result_node = node.args
        iter_var, iter_var2, accu_var = node.vars
        over = self.walk(range_node, scope)
        runs = min(max(over.shape.items, 1.0), ITERATION_BUDGET)
        init = self.walk(init_node, scope)
        inner = dict(scope)
        inner[iter_var] = _item(over.shape, self.input)
        if iter_var2:
            inner[iter_var2] = _item(over.shape, self.input)
        inner[accu_var] = init.shape
        first = self.walk(step_node, inner)
        grown = max(0.0, first.shape.items - init.shape.items)
        accu = Shape(
            chars=max(init.shape.chars, first.shape.chars),
            items=init.shape.items + runs * grown,
            item=first.shape.item,
        )
        inner[accu_var] = accu
        self.accumulators.add(accu_var)
        step = self.walk(step_node, inner)
        cond = self.walk(cond_node, inner)
        result = self.walk(result_node, inner)
        once = cond.cost + step.cost + 1
        if self.flat:
            self.iterations.append(once)
            runs = 1.0
        cost = over.cost + init.cost + runs * once + result.cost
        return _Est(cost, result.shape)

    def _call(self, node: Node, scope: dict[str, Shape]) -> _Est:
        args = [self.walk(a, scope) for a in node.args]
        shapes = [a.shape for a in args]
        spent = sum(a.cost for a in args)
        rule = _RULES.get(node.name, _default)
        own, shape = rule(self, node, shapes)
        return _Est(spent + own, shape)


Rule = Callable[[_Estimator, Node, list[Shape]], tuple[float, Shape]]


def _default(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    """Any other function (conversions, has, type): reads its arguments once,
    gives a value no larger."""
    if not shapes:
        return 1, _SCALAR
    return 1 + _traverse(sum(s.chars for s in shapes)), _widest(*shapes)


def _logic(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    return 1, _widest(*shapes[1:]) if node.name == "_?_:_" else _SCALAR


def _compare(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    # Strings compare by character, lists and maps by element.
    chars = min(s.chars for s in shapes)
    items = min(s.items for s in shapes)
    return 1 + _traverse(chars) + items, _SCALAR


def _scan(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    """contains, startsWith, endsWith, indexOf, lastIndexOf, charAt: a test or a
    small value, after reading the text (and comparing the needle)."""
    text = shapes[0].chars
    needle = shapes[1].chars if len(shapes) > 1 else 1.0
    return 1 + _traverse(text) * max(1.0, _traverse(needle)), _SCALAR


def _matches(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    # RE2: linear in the text; a pattern that is not a constant is compiled each time.
    return 1 + _traverse(shapes[0].chars) + shapes[-1].chars, _SCALAR


def _same_size(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    """lowerAscii, upperAscii, trim, reverse, substring: a copy at most as long."""
    text = shapes[0].chars
    return 1 + _traverse(text), Shape(chars=text)


def _quote(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    text = shapes[0].chars
    return 1 + _traverse(text), Shape(chars=6 * text + 2)  # \uXXXX escapes at worst


def _split(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    text = shapes[0].chars
    separator = shapes[1].min_chars if len(shapes) > 1 else 0.0
    pieces = (text / separator if separator >= 1 else text) + 1
    cost = 1 + _traverse(text) + pieces * _ELEMENT
    return cost, Shape(chars=1, items=pieces, item=Shape(chars=text))


def _concat(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    left, right = shapes
    item = None
    if left.items or right.items:
        item = _widest(*(_item(s, est.input) for s in shapes if s.items))
    shape = Shape(chars=left.chars + right.chars, items=left.items + right.items, item=item)
    if node.overloads and all(o == "add_string" for o in node.overloads):
        return 1 + _traverse(shape.chars), Shape(chars=shape.chars)
    first = node.args[0]
    if first.kind == "ident" and first.name in est.accumulators:
        # A comprehension appending to its own result: the runtime appends in place.
        return 1 + right.items, shape
    # Strings are copied by character, lists by element.
    return 1 + max(_traverse(shape.chars), shape.items), shape


def _replace(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    text, old, new = shapes[0], shapes[1], shapes[2]
    # Each match of `old` (every position when it may be empty) becomes `new`.
    matches = text.chars / old.min_chars if old.min_chars >= 1 else text.chars + 1
    chars = text.chars + matches * new.chars
    return 1 + _traverse(text.chars) + _build(chars), Shape(chars=chars)


def _join(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    parts = shapes[0]
    separator = shapes[1].chars if len(shapes) > 1 else 0.0
    # Characters the parts hold in all (a list of strings: items x chars).
    chars = max(parts.chars, _deep_total(parts, est.input, 1)) + parts.items * separator
    return 1 + _build(chars), Shape(chars=chars)


def _format(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    template, values = shapes[0], shapes[1]
    # Every `%s` may render a whole argument, nested lists and maps included.
    chars = template.chars * (1 + _deep_total(values, est.input, 3))
    return 1 + _build(chars), Shape(chars=chars)


def _deep_total(shape: Shape, input_shape: Shape, depth: int) -> float:
    if depth == 0 or not shape.items:
        return shape.chars
    return shape.items * max(1.0, _deep_total(_item(shape, input_shape), input_shape, depth - 1))


def _index(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    return 1, _item(shapes[0], est.input)


def _member(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    value, container = shapes
    return 1 + container.items * (1 + _traverse(value.chars)), _SCALAR


def _size(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    return 1, _SCALAR


def _quantity(est: _Estimator, node: Node, shapes: list[Shape]) -> tuple[float, Shape]:
    return 20 + _traverse(shapes[0].chars), _SCALAR  # a Python function: a call's overhead


_RULES: dict[str, Rule] = {
    **dict.fromkeys(["_&&_", "_||_", "!_", "_?_:_", "@not_strictly_false"], _logic),
    **dict.fromkeys(["_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"], _compare),
    **dict.fromkeys(["contains", "startsWith", "endsWith", "indexOf", "lastIndexOf"], _scan),
    "charAt": _scan,
    **dict.fromkeys(["lowerAscii", "upperAscii", "trim", "reverse", "substring"], _same_size),
    "strings.quote": _quote,
    "split": _split,
    "matches": _matches,
    "_+_": _concat,
    "replace": _replace,
    "join": _join,
    "format": _format,
    "_[_]": _index,
    "@in": _member,
    "size": _size,
    "quantity": _quantity,
}
