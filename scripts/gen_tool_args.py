#!/usr/bin/env python3
"""Generates the pydantic argument models of our tools from tools.proto.

Usage: gen_tool_args.py DESCRIPTOR_SET GENERATED_PYTHON_DIR OUTPUT_FILE

tools.proto is the one source of a tool's arguments: each message named by a
field of `ToolCallRecord.arguments` whose message ends in `Args` becomes a
pydantic model of the same name (what the model is shown as JSON Schema and
what validates its calls). Run by scripts/gen_python.sh; the output is pure
pydantic so the domain imports no protobuf.

Mapping (a rule the generator does not know is an error, never skipped):
- types: string -> str, int32 -> int, double -> float, bool -> bool,
  repeated string -> list[str], map<string, string> -> dict[str, str],
  google.protobuf.Struct -> dict[str, Any];
- protovalidate rules -> Field constraints: string min_len/max_len/pattern,
  string `in` (the empty string dropped) -> Literal, int/double gte/lte,
  repeated min_items/max_items and item rules, map max_pairs and key/value
  rules;
- required: `required`, a non-optional string with min_len >= 1 (unless
  IGNORE_IF_ZERO_VALUE), or a repeated field with min_items >= 1; otherwise optional: the comment's
  "Default X." sentence gives the default, else bool -> False, repeated ->
  [], map/Struct -> {}, others -> None;
- the field's leading comment -> the description.
A blank string sent for an optional string field is treated as unset (proto3:
"" is the unset string), so the field takes its default.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

HEADER = '''"""Argument models of our tools: generated from protos/hapi/v1/tools.proto, do not edit.

Regenerate with `make generate` (scripts/gen_tool_args.py). Pure pydantic: the
domain imports no protobuf. A toolset adds what a proto cannot say (a check
such as "compiles as RE2") in a thin subclass in its own package.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from hapi_grpc.domain.toolsets.tool import ToolArgs

__all__ = [
{names}
]


class ProtoArgs(ToolArgs):
    """Base of the generated models: a blank optional string is an unset field."""

    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _drop_blank(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls._BLANK_IS_UNSET:
            blank = [
                k
                for k in cls._BLANK_IS_UNSET
                if isinstance(data.get(k), str) and not data[k].strip()
            ]
            if blank:
                data = {{k: v for k, v in data.items() if k not in blank}}
        return data


def _values_only(schema: dict[str, Any]) -> None:
    """Shows a map's value rule only: its key pattern is still checked, but
    `patternProperties` is not accepted by every model provider."""
    rules = schema.pop("patternProperties", None)
    if rules:
        schema["additionalProperties"] = next(iter(rules.values()))
'''

_DEFAULT = re.compile(r"(?:^|\s)Default (\S+?)[.,]?(?=\s|$)")


def _load(descriptor_set: Path, generated: Path) -> Any:
    sys.path.insert(0, str(generated))
    from buf.validate import validate_pb2  # registers the (buf.validate.field) extension
    from google.protobuf import descriptor_pb2

    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    return validate_pb2, descriptor_pb2, files


def _comments(file: Any) -> dict[tuple[int, ...], str]:
    out = {}
    for loc in file.source_code_info.location:
        if loc.leading_comments:
            text = " ".join(line.strip() for line in loc.leading_comments.strip().splitlines())
            out[tuple(loc.path)] = text
    return out


def _literal(value: Any) -> str:
    if isinstance(value, str):
        # The quotes ruff format prefers: double, unless only they would need escaping.
        quote = "'" if '"' in value and "'" not in value else '"'
        body = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
        return f"{quote}{body}{quote}"
    return repr(value)


_KNOWN = {
    "FieldRules": {"required", "ignore", "string", "int32", "double", "repeated", "map"},
    "StringRules": {"min_len", "max_len", "pattern", "in"},
    "Int32Rules": {"gte", "lte", "gt", "lt"},
    "DoubleRules": {"gte", "lte", "gt", "lt"},
    "RepeatedRules": {"min_items", "max_items", "items"},
    "MapRules": {"max_pairs", "keys", "values"},
}


def _check_known(rules: Any, where: str) -> None:
    """Stops on a rule the mapping does not know, at any depth: never dropped."""
    known = _KNOWN.get(rules.DESCRIPTOR.name, set())
    for field, value in rules.ListFields():
        if field.name not in known:
            raise SystemExit(f"gen_tool_args: {where}: rule {field.full_name} not mapped")
        if field.message_type is not None:
            _check_known(value, where)


def _string_rules(rules: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    s = rules.string
    for proto_name, name in (("min_len", "min_length"), ("max_len", "max_length")):
        if s.HasField(proto_name):
            out[name] = getattr(s, proto_name)
    if s.HasField("pattern"):
        out["pattern"] = s.pattern
    return out


def _field(field: Any, validate: Any, descriptor: Any, comment: str, messages: Any) -> tuple:
    """(name, annotation, Field kwargs, blank-is-unset) of one proto field."""
    fdp = descriptor.FieldDescriptorProto
    rules = field.options.Extensions[validate.field]
    _check_known(rules, field.name)
    kw: dict[str, Any] = {}
    required = rules.required
    optional = field.proto3_optional
    repeated = field.label == fdp.LABEL_REPEATED
    blank_is_unset = False
    entry = messages.get(field.type_name.rsplit(".", 1)[-1]) if field.type_name else None
    if repeated and entry is not None and entry.options.map_entry:
        if any(f.type != fdp.TYPE_STRING for f in entry.field):
            raise SystemExit(f"gen_tool_args: {field.name}: only map<string, string> is mapped")
        keys = _string_rules(rules.map.keys) if rules.map.HasField("keys") else {}
        values = _string_rules(rules.map.values) if rules.map.HasField("values") else {}
        annotation = f"dict[{_constrained('str', keys)}, {_constrained('str', values)}]"
        if "pattern" in keys:
            kw["json_schema_extra"] = "_values_only"
        if rules.map.HasField("max_pairs"):
            kw["max_length"] = rules.map.max_pairs
        empty = "dict"
    elif repeated:
        if field.type != fdp.TYPE_STRING:
            raise SystemExit(f"gen_tool_args: {field.name}: only repeated string is mapped")
        r = rules.repeated
        items = _string_rules(r.items) if r.HasField("items") else {}
        annotation = f"list[{_constrained('str', items)}]"
        if r.HasField("min_items"):
            kw["min_length"] = r.min_items
            required = required or r.min_items >= 1
        if r.HasField("max_items"):
            kw["max_length"] = r.max_items
        empty = "list"
    elif field.type == fdp.TYPE_MESSAGE:
        if field.type_name != ".google.protobuf.Struct":
            raise SystemExit(f"gen_tool_args: {field.name}: message {field.type_name} not mapped")
        annotation, empty = "dict[str, Any]", "dict"
    elif field.type == fdp.TYPE_STRING:
        kw.update(_string_rules(rules))
        choices = [v for v in getattr(rules.string, "in") if v]
        if choices:
            annotation = "Literal[" + ", ".join(_literal(v) for v in choices) + "]"
            kw = {}
        else:
            annotation = "str"
        ignored_if_empty = rules.ignore == validate.IGNORE_IF_ZERO_VALUE
        required = required or (
            not optional and not ignored_if_empty and kw.get("min_length", 0) >= 1
        )
        blank_is_unset = not required
        empty = None
    elif field.type in (fdp.TYPE_INT32, fdp.TYPE_DOUBLE):
        number = rules.int32 if field.type == fdp.TYPE_INT32 else rules.double
        for proto_name, name in (("gte", "ge"), ("lte", "le"), ("gt", "gt"), ("lt", "lt")):
            if number.HasField(proto_name):
                kw[name] = getattr(number, proto_name)
        annotation = "int" if field.type == fdp.TYPE_INT32 else "float"
        empty = None
    elif field.type == fdp.TYPE_BOOL:
        annotation, empty = "bool", "False"
    else:
        raise SystemExit(f"gen_tool_args: {field.name}: type {field.type} not mapped")

    default = _DEFAULT.search(comment)
    if not default and re.search(r"\bdefault\b", comment, re.IGNORECASE):
        raise SystemExit(f"gen_tool_args: {field.name}: write the default as 'Default X.'")
    if default and required:
        raise SystemExit(f"gen_tool_args: {field.name}: a required field has a default")
    if required:
        pass
    elif default:
        text = default.group(1)
        if annotation == "bool" or empty in ("list", "dict"):
            raise SystemExit(f"gen_tool_args: {field.name}: 'Default X.' on a {annotation}")
        if annotation.startswith("Literal[") and _literal(text) not in annotation:
            raise SystemExit(f"gen_tool_args: {field.name}: default {text!r} is not allowed")
        kw = {"default": {"int": int, "float": float}.get(annotation, str)(text), **kw}
    elif empty in ("list", "dict"):
        kw = {"default_factory": empty, **kw}
    elif empty == "False":
        kw = {"default": False, **kw}
    else:
        annotation += " | None"
        kw = {"default": None, **kw}
    if not comment:
        raise SystemExit(f"gen_tool_args: {field.name}: no comment to describe it")
    kw["description"] = comment
    return field.name, annotation, kw, blank_is_unset


def _constrained(annotation: str, rules: dict[str, Any]) -> str:
    if not rules:
        return annotation
    return f"Annotated[{annotation}, Field({', '.join(_kwargs(rules))})]"


def _wrapped(text: str) -> str:
    """A long description as implicitly joined string pieces, each line short."""
    if len(text) <= 77:  # fits after `        description=` on a line of 100
        return _literal(text)
    pieces, line = [], ""
    for word in text.split(" "):
        if line and len(line) + len(word) > 66:
            pieces.append(line)
            line = ""
        line += word + " "
    pieces.append(line[:-1])
    inner = "".join(f"            {_literal(p)}\n" for p in pieces)
    return f"(\n{inner}        )"


def _kwargs(kw: dict[str, Any]) -> list[str]:
    parts = []
    for key, value in kw.items():
        if key == "json_schema_extra":
            parts.append(f"{key}={value}")
        elif key == "description":
            parts.append(f"{key}={_wrapped(value)}")
        elif key == "default_factory":
            parts.append(f"{key}={value}")
        elif key == "pattern":
            parts.append(f"{key}=r{_literal(value)}")
        else:
            parts.append(f"{key}={_literal(value)}")
    return parts


def generate(descriptor_set: Path, generated: Path) -> str:
    validate, descriptor, files = _load(descriptor_set, generated)
    tools = next(f for f in files.file if f.name == "hapi/v1/tools.proto")
    messages = {m.name: m for m in tools.message_type}
    for m in tools.message_type:
        messages.update({n.name: n for n in m.nested_type})
    record = messages["ToolCallRecord"]
    oneof = [d.name for d in record.oneof_decl].index("arguments")
    wanted = [
        f.type_name.rsplit(".", 1)[-1]
        for f in record.field
        if f.HasField("oneof_index") and f.oneof_index == oneof and f.type_name.endswith("Args")
    ]
    comments = _comments(tools)
    index = {m.name: i for i, m in enumerate(tools.message_type)}
    parsed = {
        name: [
            _field(field, validate, descriptor, comments.get((4, index[name], 2, j), ""), messages)
            for j, field in enumerate(messages[name].field)
        ]
        for name in wanted
    }
    aliases = _shared_rules(parsed)
    blocks = []
    uses_annotated = bool(aliases)
    for name in wanted:
        fields, blanks = [], []
        for fname, annotation, kw, blank in parsed[name]:
            rules = _rules_key(annotation, kw)
            if rules in aliases:
                annotation = annotation.replace("str", aliases[rules], 1)
                kw = {k: v for k, v in kw.items() if k not in ("max_length", "pattern")}
            uses_annotated = uses_annotated or "Annotated[" in annotation
            args = ", ".join(_kwargs(kw))  # one line: ruff format folds what is long
            fields.append(f"    {fname}: {annotation} = Field({args})\n")
            if blank:
                blanks.append(fname)
        doc = f'    """Arguments of `{_tool_of(record, name)}` (proto `{name}`)."""\n'
        body = doc + "\n"
        if blanks:
            listed = ", ".join(_literal(b) for b in blanks)
            body += f"    _BLANK_IS_UNSET: ClassVar[frozenset[str]] = frozenset({{{listed}}})\n\n"
        blocks.append(f"\n\nclass {name}(ProtoArgs):\n{body}" + "".join(fields))
    names = "\n".join(f'    "{n}",' for n in sorted(["ProtoArgs", *wanted]))
    shared = "".join(
        f"{alias} = Annotated[str, Field({', '.join(_kwargs(dict(rules)))})]\n"
        for rules, alias in aliases.items()
    )
    if shared:
        shared = "\n\n# String rules several fields share.\n" + shared
    text = HEADER.format(names=names) + shared + "".join(blocks)
    if uses_annotated:
        text = text.replace("from typing import Any,", "from typing import Annotated, Any,")
    return text


def _rules_key(annotation: str, kw: dict[str, Any]) -> tuple | None:
    """The (max_length, pattern) rules of a plain string field, None for any other field."""
    if annotation not in ("str", "str | None") or "pattern" not in kw:
        return None
    return (("max_length", kw.get("max_length")), ("pattern", kw["pattern"]))


def _shared_rules(parsed: dict[str, list[tuple]]) -> dict[tuple, str]:
    """A named constrained type per string rule set that several fields repeat, named
    after the first field having it (`namespace` -> `_Namespace`)."""
    seen: dict[tuple, list[str]] = {}
    for fields in parsed.values():
        for fname, annotation, kw, _ in fields:
            key = _rules_key(annotation, kw)
            if key is not None:
                seen.setdefault(key, []).append(fname)
    return {
        key: "_" + "".join(part.title() for part in names[0].split("_"))
        for key, names in seen.items()
        if len(names) > 1
    }


def _tool_of(record: Any, message: str) -> str:
    return next(f.name for f in record.field if f.type_name.endswith("." + message))


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    text = generate(Path(sys.argv[1]), Path(sys.argv[2]))
    out = Path(sys.argv[3])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
