"""gRPC server reflection under both names clients ask for: ``grpc.reflection.v1`` and
``grpc.reflection.v1alpha``.

grpcio-reflection (1.85) ships only the v1alpha service, while current clients (grpcurl, grpc-go's
``reflection`` package, Postman) ask for v1 first. The two protocols are the same messages under
another package name, so v1 is served by the same servicer: its requests are read and its answers
written with the v1alpha classes (identical bytes on the wire), and the v1 file descriptor, built
here from the v1alpha one, is added to the descriptor pool so that clients can also describe the
v1 service itself. Used by :func:`pivoter.catalogserver.grpcserver.build_server`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection as v1alpha
from grpc_reflection.v1alpha import reflection_pb2 as messages

__all__ = ["SERVICE_NAMES", "V1ALPHA_SERVICE_NAME", "V1_SERVICE_NAME", "enable"]

V1ALPHA_SERVICE_NAME: str = v1alpha.SERVICE_NAME
V1_SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
SERVICE_NAMES = (V1_SERVICE_NAME, V1ALPHA_SERVICE_NAME)
"""The reflection services :func:`enable` registers."""

_V1_FILE = "grpc/reflection/v1/reflection.proto"


def _add_v1_descriptor() -> None:
    """Add ``grpc/reflection/v1/reflection.proto`` to the default pool (once)."""
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    messages.DESCRIPTOR.CopyToProto(proto)
    old, new = proto.package, "grpc.reflection.v1"
    proto.name = _V1_FILE
    proto.package = new

    def rename(type_name: str) -> str:
        return type_name.replace(f".{old}.", f".{new}.")

    for message in proto.message_type:
        for message_field in message.field:
            if message_field.type_name:
                message_field.type_name = rename(message_field.type_name)
    for service in proto.service:
        for method in service.method:
            method.input_type = rename(method.input_type)
            method.output_type = rename(method.output_type)
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    pool.AddSerializedFile(proto.SerializeToString())


def enable(server: grpc.Server, service_names: Iterable[str]) -> None:
    """Serve reflection v1 and v1alpha on ``server``, listing ``service_names``."""
    names = tuple(service_names)
    v1alpha.enable_server_reflection(names, server)
    _add_v1_descriptor()
    servicer = v1alpha.ReflectionServicer(names)
    handler: grpc.RpcMethodHandler[Any, Any] = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=messages.ServerReflectionRequest.FromString,
        response_serializer=messages.ServerReflectionResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(V1_SERVICE_NAME, {"ServerReflectionInfo": handler}),)
    )
