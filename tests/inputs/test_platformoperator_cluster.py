"""PlatformOperators on the real control plane: the reference's e2e scenarios (a valid package is
installed and ``activeBundleDeployment`` set; an unknown package fails clearly), through the same
resolution and pivot path as Resolutions."""

from __future__ import annotations

import pytest

from pivoter.apis.resources import PLATFORM_OPERATORS
from tests.inputs.conftest import Env, condition, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster


def test_valid_package_is_installed_and_named_after_the_platform_operator(env: Env) -> None:
    env.publisher.add("certs", Version("1.0.0", config_map("certs", env.namespace, v="1")))
    env.publish()
    env.catalog()
    name = env.platform_operator("certs")
    obj = env.wait(
        name,
        lambda o: is_(o, "Installed", "True", "InstallSuccessful"),
        what="InstallSuccessful",
        resource=PLATFORM_OPERATORS,
    )
    assert obj["status"]["activeBundleDeployment"] == {"name": name}
    children = env.children(name, "PlatformOperator")
    assert list(children) == [name]
    assert children[name]["spec"]["template"]["spec"]["source"]["image"]["ref"].endswith(
        "/certs:1.0.0"
    )
    assert env.config_map_data("certs") == {"v": "1"}
    # Unlike the reference, a newer bundle along the channel is picked up.
    env.publisher.add("certs", Version("1.1.0", config_map("certs", env.namespace, v="2"), "1.0.0"))
    env.publish()
    env.wait(
        name,
        lambda o: (
            o["status"].get("activeRevision") == 2
            and is_(o, "Installed", "True", "InstallSuccessful")
        ),
        what="the upgrade",
        resource=PLATFORM_OPERATORS,
    )
    assert env.config_map_data("certs") == {"v": "2"}


def test_unknown_package_fails_with_source_failed(env: Env) -> None:
    env.publisher.add("certs", Version("1.0.0", config_map("certs", env.namespace, v="1")))
    env.publish()
    env.catalog()
    name = env.platform_operator("no-such-package")
    obj = env.wait(
        name,
        lambda o: is_(o, "Installed", "False", "SourceFailed"),
        what="SourceFailed",
        resource=PLATFORM_OPERATORS,
    )
    message = condition(obj, "Installed")["message"]
    assert message.startswith("failed to find candidate olm.bundles from the no-such-package")
    assert obj["status"].get("activeBundleDeployment") is None
    assert not env.children(name, "PlatformOperator")
