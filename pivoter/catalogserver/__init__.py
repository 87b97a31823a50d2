"""Serve a file-based catalog over the operator-registry gRPC API and catalogd-style HTTP.

Entry point: :func:`pivoter.catalogserver.serve.serve`, used by ``pivoter catalog serve``.
"""
