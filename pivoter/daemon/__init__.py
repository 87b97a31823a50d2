"""The daemon of ``pivoter run``: what it is asked to build, the wiring, and the process.

* :mod:`~pivoter.daemon.settings`: the typed settings and every default of ``pivoter run``
  (light: the CLI reads the defaults from it for ``--help`` without importing the daemon);
* :mod:`~pivoter.daemon.hooks`: the fault-injection points tests pass to the wiring;
* :mod:`~pivoter.daemon.product`: :func:`~pivoter.daemon.product.build`, the one function that
  registers every controller, cache and server on a Manager, called by ``pivoter run`` and by
  every test fixture that runs the controllers in its own process;
* :mod:`~pivoter.daemon.webhook`: the admission webhook's certificate, server and registration;
* :mod:`~pivoter.daemon.process`: :func:`~pivoter.daemon.process.run`, the client, the Manager
  with its endpoints and leader election, the product, until a signal.

This ``__init__`` imports nothing, so that importing the settings stays light.
"""
