"""The gRPC side of ``pivoter catalog serve``: ``api.Registry``, ``api.ExperimentalRegistry``,
``grpc.health.v1.Health`` and server reflection on one port.

Started by :func:`pivoter.catalogserver.serve.serve` (and by tests). Every call reads the current
snapshot once, so a reload never changes the catalog under a stream that is being sent. Errors
carry the status code and message opm's server gives in the same case (Go errors without a code
reach clients as UNKNOWN).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.protobuf import struct_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from pivoter.catalogserver import grpclog, reflection
from pivoter.catalogserver.grpcguard import CallGuard, GrpcLimits, ThreadPool, server_options
from pivoter.catalogserver.registry import RegistryError, RegistryView
from pivoter.catalogserver.stale import StaleMarker, StaleReason
from resolver.catalog.model import GVK
from resolver.catalog.registryapi import registry_pb2 as api

SERVICE_NAMES = (
    api.DESCRIPTOR.services_by_name["Registry"].full_name,
    api.DESCRIPTOR.services_by_name["ExperimentalRegistry"].full_name,
    health.SERVICE_NAME,
    *reflection.SERVICE_NAMES,
)
"""Every service the server registers (and lists through reflection)."""

# opm's default receive limit is gRPC's 4 MiB; answers can be larger (ListBundles streams one
# message per bundle, but one bundle with inline objects can exceed it), so the send side is
# left unbounded as in grpc-go.
DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024

ViewGetter = Callable[[], RegistryView]


def _unknown(context: grpc.ServicerContext, err: Exception) -> None:
    """Abort the call as UNKNOWN (how grpc-go reports a plain Go error); abort raises."""
    context.abort(grpc.StatusCode.UNKNOWN, str(err))


def _generic_handler(
    service: str, servicer: object, marker: StaleMarker | None
) -> grpc.GenericRpcHandler[Any, Any]:
    """Route every method of ``service`` (from the proto descriptor) to ``servicer``, each
    wrapped once by ``marker`` (stale answers say so) when there is one.

    Written here instead of using the generated ``*_pb2_grpc`` module, which is untyped.
    """
    descriptor = api.DESCRIPTOR.services_by_name[service]
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for method in descriptor.methods:
        request = _message_class(method.input_type.full_name)
        behavior = getattr(servicer, method.name)
        if method.server_streaming:
            make = grpc.unary_stream_rpc_method_handler
            if marker is not None:
                behavior = marker.stream(behavior)
        else:
            make = grpc.unary_unary_rpc_method_handler
            if marker is not None:
                behavior = marker.unary(behavior)
        handlers[method.name] = make(
            behavior,
            request_deserializer=request.FromString,
            response_serializer=_serialize,
        )
    return grpc.method_handlers_generic_handler(descriptor.full_name, handlers)


def _serialize(message: Any) -> bytes:
    """A message's wire form; answers the view holds already serialized pass as they are."""
    if type(message) is bytes:
        return message
    return bytes(message.SerializeToString())


def _message_class(full_name: str) -> Any:
    if full_name == "google.protobuf.Struct":
        return struct_pb2.Struct
    return getattr(api, full_name.removeprefix("api."))


class SnapshotRegistryServicer:
    """``api.Registry`` over the current catalog snapshot."""

    def __init__(self, view: ViewGetter) -> None:
        self._view = view

    def ListPackages(self, request: api.ListPackageRequest, context: Any) -> Iterator[Any]:
        """Stream every package name."""
        for name in list(self._view().list_packages()):
            yield api.PackageName(name=name)

    def GetPackage(self, request: api.GetPackageRequest, context: Any) -> api.Package:
        """Return one package with its channels and heads."""
        try:
            return self._view().get_package(request.name)
        except RegistryError as err:
            _unknown(context, err)
            raise

    def GetBundle(self, request: api.GetBundleRequest, context: Any) -> api.Bundle:
        """Return one bundle of one channel."""
        try:
            return self._view().bundle(request.pkgName, request.channelName, request.csvName)
        except RegistryError as err:
            _unknown(context, err)
            raise

    def GetBundleForChannel(
        self, request: api.GetBundleInChannelRequest, context: Any
    ) -> api.Bundle:
        """Return the head bundle of a channel."""
        try:
            return self._view().bundle_for_channel(request.pkgName, request.channelName)
        except RegistryError as err:
            _unknown(context, err)
            raise

    def GetChannelEntriesThatReplace(
        self, request: api.GetAllReplacementsRequest, context: Any
    ) -> Iterator[api.ChannelEntry]:
        """Stream the entries that replace or skip a bundle."""
        try:
            entries = self._view().entries_that_replace(request.csvName)
        except RegistryError as err:
            _unknown(context, err)
            return
        yield from entries

    def GetBundleThatReplaces(self, request: api.GetReplacementRequest, context: Any) -> api.Bundle:
        """Return a bundle of the channel that replaces or skips a bundle."""
        try:
            return self._view().bundle_that_replaces(
                request.csvName, request.pkgName, request.channelName
            )
        except RegistryError as err:
            _unknown(context, err)
            raise

    def GetChannelEntriesThatProvide(
        self, request: api.GetAllProvidersRequest, context: Any
    ) -> Iterator[api.ChannelEntry]:
        """Stream the entries of every bundle providing a GVK."""
        try:
            entries = self._view().entries_that_provide(_gvk(request))
        except RegistryError as err:
            _unknown(context, err)
            return
        yield from entries

    def GetLatestChannelEntriesThatProvide(
        self, request: api.GetLatestProvidersRequest, context: Any
    ) -> Iterator[api.ChannelEntry]:
        """Stream the entries of channel heads providing a GVK."""
        try:
            entries = self._view().latest_entries_that_provide(_gvk(request))
        except RegistryError as err:
            _unknown(context, err)
            return
        yield from entries

    def GetDefaultBundleThatProvides(
        self, request: api.GetDefaultProviderRequest, context: Any
    ) -> api.Bundle:
        """Return the default-channel head providing a GVK."""
        try:
            return self._view().default_bundle_that_provides(_gvk(request))
        except RegistryError as err:
            _unknown(context, err)
            raise

    def ListBundles(self, request: api.ListBundlesRequest, context: Any) -> Iterator[bytes]:
        """Stream every (package, channel, bundle), serialized ahead."""
        yield from self._view().list_bundles()


class SnapshotExperimentalRegistryServicer:
    """``api.ExperimentalRegistry``: custom-schema objects, for clients that acknowledge it."""

    def __init__(self, view: ViewGetter) -> None:
        self._view = view

    def ExperimentalListPackageCustomSchemas(
        self, request: api.ExperimentalListPackageCustomSchemasRequest, context: Any
    ) -> Iterator[struct_pb2.Struct]:
        """Stream the objects of one custom schema in one package."""
        metadata = dict(context.invocation_metadata())
        # Unaware clients get an empty stream, exactly as opm answers them.
        if metadata.get("x-acknowledge-experimental") != "true":
            return
        if not request.schema:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "schema is required")
        try:
            objects = list(self._view().custom_schema_objects(request.schema, request.packageName))
        except ValueError as err:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid custom schema query: {err}")
        yield from objects


def _gvk(request: Any) -> GVK:
    return GVK(group=request.group, version=request.version, kind=request.kind)


class _AlwaysServing(health_pb2_grpc.HealthServicer):  # type: ignore[misc]
    """Health ``Check`` answers SERVING for any service name, as opm's does; the process only
    listens once a catalog is loaded, so being reachable means being ready."""

    def __init__(self, max_watches: int) -> None:
        self._watches = threading.BoundedSemaphore(max_watches)

    def Check(self, request: Any, context: Any) -> Any:
        """Report SERVING."""
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)

    def Watch(self, request: Any, context: Any) -> Iterator[Any]:
        """Send SERVING, then hold the stream open (the status never changes) until the client
        leaves or the server stops, as grpc-go's health server does.

        Each open Watch holds a worker thread: at most ``max_watches`` at once, so that watchers
        can never take every worker; one more is refused with RESOURCE_EXHAUSTED.
        """
        if not self._watches.acquire(blocking=False):
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "too many health watches open")
        try:
            done = threading.Event()
            if not context.add_callback(done.set):
                return  # the RPC has already ended
            yield health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
            while context.is_active() and not done.wait(timeout=5.0):
                pass
        finally:
            self._watches.release()


def build_server(
    view: ViewGetter,
    *,
    address: str,
    max_watches: int = 4,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    stale: StaleReason | None = None,
    limits: GrpcLimits | None = None,
) -> tuple[grpc.Server, int]:
    """Return a started-ready (not yet started) server bound to ``address`` and its port.

    ``stale`` says why the catalog served is stale (None: current); registry answers then carry
    it in their metadata (:mod:`pivoter.catalogserver.stale`). A request message may have at
    most ``max_message_bytes`` and ``limits.max_request_bytes``. Every call is guarded by
    ``limits`` (:mod:`pivoter.catalogserver.grpcguard`: per-connection streams, timeouts on
    everything a client owes, calls per peer); at most ``max_watches`` health Watch streams are
    open at once.
    """
    limits = limits or GrpcLimits()
    server = grpc.server(
        ThreadPool(max_workers=limits.threads, thread_name_prefix="grpc"),
        interceptors=[CallGuard(limits)],
        options=[
            # Requests are names and GVKs: no client needs more than limits.max_request_bytes,
            # and each call could make the server hold that much.
            ("grpc.max_receive_message_length", min(max_message_bytes, limits.max_request_bytes)),
            ("grpc.max_send_message_length", -1),
            ("grpc.so_reuseport", 0),
            *server_options(limits),
        ],
    )
    marker = StaleMarker(stale) if stale is not None else None
    server.add_generic_rpc_handlers(
        (
            _generic_handler("Registry", SnapshotRegistryServicer(view), marker),
            _generic_handler(
                "ExperimentalRegistry", SnapshotExperimentalRegistryServicer(view), marker
            ),
        )
    )
    health_pb2_grpc.add_HealthServicer_to_server(_AlwaysServing(max_watches=max_watches), server)
    reflection.enable(server, SERVICE_NAMES)
    grpclog.install()  # a malformed request is one log line, not a traceback
    try:
        port = server.add_insecure_port(address)
    except RuntimeError:  # grpcio >= 1.60 raises where older releases returned 0
        port = 0
    if port == 0:
        raise OSError(
            f"cannot listen for gRPC on {address}: the port is in use or the host is unknown"
        )
    return server, port
