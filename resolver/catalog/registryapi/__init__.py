"""Generated protobuf/gRPC stubs of operator-registry's ``api.Registry`` (``proto/registry.proto``).

The modules next to this file (``registry_pb2``, ``registry_pb2_grpc``) are written by setup.py's
build hook and are not in git. The gRPC catalog source (``resolver.catalog.sources.grpc``) and the
gRPC catalog server (``pivoter.catalogserver.grpc``) import them from here.
"""
