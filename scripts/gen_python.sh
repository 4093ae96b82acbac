#!/usr/bin/env bash
# Generates the Python modules of the contract (and of buf/validate, which they
# import) into generated/python. Run through `make generate`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-$root/.venv/bin/python}"
out="$root/generated/python"
"$root/scripts/fetch_protos.sh"
rm -rf "$out/hapi" "$out/buf"
mkdir -p "$out"
cd "$root"
"$py" -m grpc_tools.protoc -I protos -I third_party/protovalidate \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  --include_source_info --descriptor_set_out="$out/hapi/v1/descriptor_set.pb" \
  protos/hapi/v1/*.proto
"$py" -m grpc_tools.protoc -I third_party/protovalidate \
  --python_out="$out" --pyi_out="$out" \
  third_party/protovalidate/buf/validate/validate.proto
for d in hapi hapi/v1 buf buf/validate; do
  printf '"""Generated protobuf modules; do not edit (make generate)."""\n' > "$out/$d/__init__.py"
done
# The tools' pydantic argument models, generated from tools.proto (pure pydantic,
# imported by the domain), formatted as the rest of hapi_grpc. The image build
# copies only what the stubs need (no generator, no ruff) and uses the
# committed models, which scripts/check_generated.sh keeps fresh.
if [ -f "$root/scripts/gen_tool_args.py" ]; then
  args="$root/hapi_grpc/domain/toolsets/arguments_gen.py"
  "$py" "$root/scripts/gen_tool_args.py" "$out/hapi/v1/descriptor_set.pb" "$out" "$args"
  "$py" -m ruff format -q --config "$root/pyproject.toml" "$args"
fi
