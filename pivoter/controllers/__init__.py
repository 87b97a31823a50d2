"""The product controllers of pivoter, registered with the manager in one place.

Each controller lives in its own module here and exposes ``setup(manager)``, which creates the
controller (``manager.controller(name, reconcile, ...)``) and declares what it watches
(``.watch(manager.informer(api_version, kind), mapper)``). Adding a controller is adding its
``setup`` to :data:`REGISTRY`; ``pivoter run`` calls :func:`register` and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable

from pivoter.controller.manager import Manager

__all__ = ["REGISTRY", "register"]

Setup = Callable[[Manager], None]

# The setup functions of every product controller, in start order. Empty until the first
# product controller lands (see docs/controller.md, "Adding a controller").
REGISTRY: list[Setup] = []


def register(manager: Manager, setups: list[Setup] | None = None) -> int:
    """Add every registered controller (or those of ``setups``) to ``manager``; return how many
    controllers the manager then has."""
    for setup in REGISTRY if setups is None else setups:
        setup(manager)
    return len(manager.controllers)
