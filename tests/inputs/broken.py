"""Bundle manifests that pass the group's server-side dry run but fail when applied, for the
tests of what happens after a group was (partly) applied: rollback, crashes, failover.

The dry run cannot check objects in a Namespace that does not exist yet (a dry run creates
nothing), so a bundle that brings its own Namespace and, in it, an object the API server rejects
fails only at install time, half applied: the Namespace exists, the object does not.
"""

from __future__ import annotations

import yaml

__all__ = ["fails_after_dry_run"]


def fails_after_dry_run(namespace: str) -> str:
    """A new Namespace ``namespace`` and, in it, a ConfigMap with an invalid data key."""
    return yaml.safe_dump_all(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "rejected", "namespace": namespace},
                "data": {"not a valid key!": "x"},
            },
        ]
    )
