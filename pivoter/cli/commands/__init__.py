"""The surface of the ``pivoter`` command line: each command's parser, flags and help texts.

Every module here exposes ``register(subparsers)``, which adds its command(s) and names each
handler as ``"module:function"`` (:func:`pivoter.cli.commands._common.set_handler`). Building the
whole parser therefore imports only argparse, the converters of :mod:`pivoter.cli.flags` and these
texts; a command's implementation (and with it kubernetes, gRPC, the resolver...) is imported by
:mod:`pivoter.cli.main` only when that command runs. ``tests/unit/test_cli_imports.py`` keeps it so.
"""
