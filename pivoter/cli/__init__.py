"""The ``pivoter`` command line: one module per command group, wired in :mod:`pivoter.cli.main`."""
