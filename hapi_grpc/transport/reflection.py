"""Server reflection that keeps the proto comments.

Design notes: docs/internals.md (`transport/reflection.py`).
"""

from __future__ import annotations

from importlib import resources

from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import _async, _base
from grpc_reflection.v1alpha import reflection_pb2 as pb


def _documented_files() -> dict[str, bytes]:
    raw = resources.files("hapi.v1").joinpath("descriptor_set.pb").read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(raw).file
    return {f.name: f.SerializeToString() for f in files}


class DocumentedReflectionServicer(_async.ReflectionServicer):
    """v1alpha reflection (what grpcurl uses) with comments for hapi.v1."""

    def __init__(self, service_names: tuple[str, ...]) -> None:
        super().__init__(service_names)
        self._documented = _documented_files()

    def _respond(
        self, request: pb.ServerReflectionRequest, file_name: str
    ) -> pb.ServerReflectionResponse:
        descriptor = self._pool.FindFileByName(file_name)
        seen: dict[str, object] = {}
        _base._collect_transitive_dependencies(descriptor, seen)
        protos = []
        for name, dep in seen.items():
            if name in self._documented:
                protos.append(self._documented[name])
            else:
                proto = descriptor_pb2.FileDescriptorProto()
                dep.CopyToProto(proto)  # type: ignore[attr-defined]
                protos.append(proto.SerializeToString())
        return pb.ServerReflectionResponse(
            file_descriptor_response=pb.FileDescriptorResponse(file_descriptor_proto=protos),
            original_request=request,
        )

    def _file_by_filename(self, request, filename):  # type: ignore[no-untyped-def]
        try:
            return self._respond(request, filename)
        except KeyError:
            return _base._not_found_error(request)

    def _file_containing_symbol(self, request, fully_qualified_name):  # type: ignore[no-untyped-def]
        try:
            file_name = self._pool.FindFileContainingSymbol(fully_qualified_name).name
        except KeyError:
            # `pkg.Service.Method`: look up the service.
            service, _, method = fully_qualified_name.rpartition(".")
            try:
                found = self._pool.FindServiceByName(service)
            except KeyError:
                return _base._not_found_error(request)
            if method not in found.methods_by_name:
                return _base._not_found_error(request)
            file_name = found.file.name
        return self._respond(request, file_name)
