"""Fixtures for drift correction: a running pivoter whose system namespace is the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster import TestCluster, session_labels
from tests.drift.running import Pivoter, running_pivoter


@pytest.fixture
def pivoter(
    cluster: TestCluster, rukpak_crds: None, namespace: str, tmp_path: Path
) -> Iterator[Pivoter]:
    """The provisioning controllers running through a Manager; ``namespace`` is the system
    namespace (bundle ConfigMaps live there) and where the test bundles install."""
    with running_pivoter(
        cluster.kubeconfig, tmp_path / "store", namespace, session_labels()
    ) as running:
        yield running
