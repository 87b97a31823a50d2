"""A small typed client for every ``api.Registry`` RPC, used to ask opm and us the same things."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from google.protobuf import struct_pb2
from google.protobuf.message import Message

from resolver.catalog.registryapi import registry_pb2 as api

METHODS: dict[str, tuple[Any, Any, bool]] = {
    "ListPackages": (api.ListPackageRequest, api.PackageName, True),
    "GetPackage": (api.GetPackageRequest, api.Package, False),
    "GetBundle": (api.GetBundleRequest, api.Bundle, False),
    "GetBundleForChannel": (api.GetBundleInChannelRequest, api.Bundle, False),
    "GetChannelEntriesThatReplace": (api.GetAllReplacementsRequest, api.ChannelEntry, True),
    "GetBundleThatReplaces": (api.GetReplacementRequest, api.Bundle, False),
    "GetChannelEntriesThatProvide": (api.GetAllProvidersRequest, api.ChannelEntry, True),
    "GetLatestChannelEntriesThatProvide": (api.GetLatestProvidersRequest, api.ChannelEntry, True),
    "GetDefaultBundleThatProvides": (api.GetDefaultProviderRequest, api.Bundle, False),
    "ListBundles": (api.ListBundlesRequest, api.Bundle, True),
}


class Answer:
    """What one call returned: messages (one for unary calls) or an error code and message."""

    def __init__(
        self,
        messages: Sequence[Message] = (),
        code: grpc.StatusCode | None = None,
        detail: str = "",
    ) -> None:
        self.messages = list(messages)
        self.code = code
        self.detail = detail

    def __repr__(self) -> str:
        if self.code is not None:
            return f"<error {self.code.name}: {self.detail}>"
        return f"<{len(self.messages)} messages>"

    def key(self, *, ordered: bool = True) -> tuple[Any, ...]:
        """A comparable form; unordered streams compare as multisets."""
        wire = [m.SerializeToString(deterministic=True) for m in self.messages]
        return (self.code, self.detail, tuple(wire if ordered else sorted(wire)))


class Registry:
    """Calls any RPC on one server."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(
            target, options=[("grpc.max_receive_message_length", 256 * 1024 * 1024)]
        )

    def call(self, method: str, metadata: Sequence[tuple[str, str]] = (), **fields: Any) -> Answer:
        """Call ``method`` with a request built from ``fields``."""
        request_type, response_type, streaming = METHODS[method]
        path = f"/api.Registry/{method}"
        make = self.channel.unary_stream if streaming else self.channel.unary_unary
        stub = make(
            path,
            request_serializer=request_type.SerializeToString,
            response_deserializer=response_type.FromString,
        )
        try:
            result = stub(request_type(**fields), timeout=60, metadata=metadata)
            return Answer(list(result) if streaming else [result])
        except grpc.RpcError as err:
            return Answer(code=err.code(), detail=err.details())

    def custom_schemas(self, schema: str, package: str, *, acknowledge: bool = True) -> Answer:
        """Call ``api.ExperimentalRegistry/ExperimentalListPackageCustomSchemas``."""
        stub = self.channel.unary_stream(
            "/api.ExperimentalRegistry/ExperimentalListPackageCustomSchemas",
            request_serializer=api.ExperimentalListPackageCustomSchemasRequest.SerializeToString,
            response_deserializer=struct_pb2.Struct.FromString,
        )
        metadata = [("x-acknowledge-experimental", "true")] if acknowledge else []
        request = api.ExperimentalListPackageCustomSchemasRequest(
            schema=schema, packageName=package
        )
        try:
            return Answer(list(stub(request, timeout=60, metadata=metadata)))
        except grpc.RpcError as err:
            return Answer(code=err.code(), detail=err.details())

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()
