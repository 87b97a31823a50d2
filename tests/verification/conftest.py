"""Fixtures of the verification tests: a local registry (distribution's, on loopback) for the
images the real cosign signs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.provisioners.servers import Registry, run_registry


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """An anonymous plain-http registry (the name makes its tests ``tools`` tests)."""
    with run_registry(tmp_path_factory.mktemp("signing-registry")) as running:
        yield running
