"""The BundleDeployment harness of tests/bundles, for helm charts."""

from tests.bundles.conftest import harness

__all__ = ["harness"]
