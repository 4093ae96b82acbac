"""Generated protobuf modules; do not edit (make generate)."""
