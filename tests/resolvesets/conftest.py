"""Fixtures for ResolveSet revisions: ResolveSet documents, and a store on the control plane whose
namespace is the test's own (it stands in for the daemon's namespace)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pivoter.kube import Kube, load_client
from pivoter.resolvesets import RevisionStore
from resolver.resolveset import PROVISIONER_PLAIN, Entry, ResolveSet
from tests.cluster import TestCluster


def resolveset(*bundles: tuple[str, str]) -> ResolveSet:
    """A ResolveSet selecting ``(package, version)`` pairs."""
    return ResolveSet(
        tuple(
            Entry(
                package=package,
                version=version,
                bundle=f"{package}.v{version}",
                channel="stable",
                catalog="main",
                image=f"registry.example/{package}:{version}",
                provisioner_class=PROVISIONER_PLAIN,
            )
            for package, version in bundles
        ),
        profile="pivoter",
    )


@pytest.fixture
def kube(cluster: TestCluster) -> Iterator[Kube]:
    """A client of the control plane."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(api_client)
    api_client.close()


@pytest.fixture
def store(kube: Kube, namespace: str) -> RevisionStore:
    """Revisions in the test's namespace."""
    return RevisionStore(kube, namespace)
