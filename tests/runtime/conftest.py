"""Fixtures for the controller-core tests that run against the real control plane."""

from __future__ import annotations

import pytest

from pivoter.kube import Kube
from tests.cluster import TestCluster


@pytest.fixture
def kube(cluster: TestCluster) -> Kube:
    """pivoter's client boundary, authenticated as the cluster admin."""
    return Kube(cluster.api_client())
