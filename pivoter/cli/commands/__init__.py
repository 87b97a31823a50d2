"""What building the commands' parsers shares (:mod:`~pivoter.cli.commands._common`).

Every command is one module of :mod:`pivoter.cli` with its flags and its handler. Building
the whole parser imports only argparse, the converters of :mod:`pivoter.cli.flags` and those
modules; what a command needs to run (kubernetes, gRPC, the resolver...) is imported when it runs.
``tests/unit/test_cli_imports.py`` keeps it so.
"""
