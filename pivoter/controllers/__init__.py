"""The product controllers of pivoter: Bundles, BundleDeployments and what they provision.

Each controller lives in its own module here; :func:`pivoter.controllers.provisioning.setup`
creates them on a :class:`pivoter.runtime.Manager` (``manager.controller(name, reconcile, ...)``
plus ``.watch(manager.informer(api_version, kind), mapper)``), and :mod:`pivoter.daemon` calls it.
"""
