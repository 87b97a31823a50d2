"""Install only what was signed: the cluster's verification policy on the real control plane.

The daemon runs in this process as ``pivoter run`` wires it; bundle images are pushed to a
registry on loopback and signed there by the real ``cosign`` (hack/tools/cosign.sh), offline.
The policy is the ``pivoter-verification`` ConfigMap in pivoter's namespace with the trusted
keys in a Secret (docs/verification.md), read at every pull:

- under ``enforce`` a signed bundle installs by digest: its ResolveSet revision records the digest
  and who signed it (``pivoter history`` shows them), the child names the image by that digest,
  and its Bundle says who signed it; an unsigned upgrade, or one signed by another key, is
  refused before a revision is written (``Resolved=False``, reason ``NotVerified``) with a
  message naming the image and the policy, and what is installed does not change;
- a key rotation: a second key added to the Secret lets what it signed install; once the first
  key is removed, what only it signed stops verifying on the next pull;
- ``warn`` installs an unsigned bundle and says so (``Verified=False`` and a Warning Event);
  ``off`` verifies nothing and writes no ``Verified`` condition;
- a catalog image is held to the same policy: unsigned, its Catalog says why and serves nothing;
- levels combine: an input or a catalog naming a stricter policy (a labelled ConfigMap) has its
  images held to it too, the others are not; an unlabelled ConfigMap cannot be named; a
  BundleDeployment names one on its template and its Bundle is held to it when pulled.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES, CATALOGS, CONFIG_MAPS, SECRETS
from pivoter.cli.main import main
from pivoter.controllers.bundle import TYPE_VERIFIED
from pivoter.kube import NotFound
from pivoter.registries.verification import ANNOTATION, CONFIG_MAP, LABEL_POLICY
from pivoter.resolvesets import InputRef
from provisioners.apply.objects import LABEL_OWNER_NAME
from provisioners.verification import TrustedKey
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.inputs.conftest import Env, condition, is_
from tests.inputs.helpers import Version, config_map
from tests.verification.cosigntool import Cosign

pytestmark = [pytest.mark.cluster, pytest.mark.tools]

KEYS_SECRET = "signing-keys"


@pytest.fixture(scope="module")
def cosign(tmp_path_factory: pytest.TempPathFactory) -> Cosign:
    return Cosign(tmp_path_factory.mktemp("cosign-home"))


@pytest.fixture(scope="module")
def keys(cosign: Cosign) -> dict[str, tuple[Path, Path]]:
    return {name: cosign.key_pair(name) for name in ("release", "next", "stranger")}


def fingerprint(public: Path) -> str:
    return TrustedKey.from_pem(public.read_bytes(), name="").fingerprint


def put(env: Env, resource: Any, body: dict[str, Any]) -> None:
    """Create or replace an object in pivoter's namespace."""
    with contextlib.suppress(NotFound):
        env.kube.delete(resource, body["metadata"]["name"], env.namespace)
    env.kube.create(resource, body, env.namespace)


def trust(env: Env, *publics: Path) -> None:
    """The keys Secret holds exactly ``publics``."""
    data = {f"{p.stem}.pub": base64.b64encode(p.read_bytes()).decode() for p in publics}
    put(
        env,
        SECRETS,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": KEYS_SECRET}, "data": data},
    )


def policy(env: Env, mode: str) -> None:
    data = {"mode": mode, "keys": KEYS_SECRET}
    put(
        env,
        CONFIG_MAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CONFIG_MAP}, "data": data},
    )


def add_signed(env: Env, cosign: Cosign, package: str, version: Version, key: Path | None) -> str:
    """Push the bundle image, sign it by digest with ``key`` (None: unsigned); its digest."""
    env.publisher.add(package, version)
    image = env.publisher.image(package, version.version)
    digest = env.publisher.digests[(package, version.version)]
    if key is not None:
        cosign.sign(f"{image.rsplit(':', 1)[0]}@{digest}", key)
    return digest


def installed(env: Env, version: str) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        versions = [s.get("version") for s in (obj.get("status") or {}).get("selection") or []]
        return is_(obj, "Ready", "True") and versions == [version]

    return check


def says(*fragments: str) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        text = json.dumps(obj.get("status") or {})
        return all(f in text for f in fragments)

    return check


def cli(
    capsys: pytest.CaptureFixture[str], cluster: TestCluster, env: Env, *argv: str
) -> tuple[int, str, str]:
    code = main([*argv, "--kubeconfig", str(cluster.kubeconfig), "--namespace", env.namespace])
    out, err = capsys.readouterr()
    return code, out, err


def bundle_of(env: Env, package: str, version: str) -> dict[str, Any]:
    """The Bundle that unpacks ``package`` ``version`` (its source names the image, by digest
    where the revision pinned it)."""
    image = env.publisher.image(package, version)
    pinned = f"{image.rsplit(':', 1)[0]}@{env.publisher.digests[(package, version)]}"
    for bundle in env.kube.list(BUNDLES)[0]:
        source = ((bundle.get("spec") or {}).get("source") or {}).get("image") or {}
        if source.get("ref") in (image, pinned):
            return bundle
    raise AssertionError(f"no Bundle pulls {image}")


def test_enforce_installs_what_is_signed_and_refuses_the_rest_and_keys_rotate(
    env: Env,
    cluster: TestCluster,
    cosign: Cosign,
    keys: dict[str, tuple[Path, Path]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    ns = env.namespace
    release, nxt, stranger = keys["release"], keys["next"], keys["stranger"]
    trust(env, release[1])
    policy(env, "enforce")
    where = f"ConfigMap {ns}/{CONFIG_MAP}"

    # A signed bundle installs; its Bundle says which digest and which key.
    signed = add_signed(
        env, cosign, "vault", Version("1.0.0", config_map("vault", ns, version="1.0.0")), release[0]
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "vault"}])
    obj = env.wait(name, installed(env, "1.0.0"), what="vault 1.0.0 installed", timeout=120)
    (selected,) = obj["status"]["selection"]
    assert selected["digest"] == signed
    assert fingerprint(release[1]) in selected["signedBy"]
    # The revision records the digest and who signed it; the child installs it by digest.
    (entry,) = env.store.get(InputRef("Resolution", name), 1).resolveset().entries
    assert entry.digest == signed
    assert fingerprint(release[1]) in entry.signed_by
    assert where in entry.signed_by
    repository = env.publisher.image("vault", "1.0.0").rsplit(":", 1)[0]
    (child,) = env.children(name).values()
    assert child["spec"]["template"]["spec"]["source"]["image"]["ref"] == f"{repository}@{signed}"
    verified = condition(bundle_of(env, "vault", "1.0.0"), TYPE_VERIFIED)
    assert verified["status"] == "True", verified
    assert f"@{signed} verified by {where}" in verified["message"]
    assert fingerprint(release[1]) in verified["message"]
    code, out, _ = cli(capsys, cluster, env, "history", name, "-o", "json")
    assert code == 0
    (row,) = json.loads(out)
    assert row["verified"] == [
        {"package": "vault", "image": f"{repository}@{signed}", "signedBy": entry.signed_by}
    ]

    # An unsigned upgrade is refused before it is unpacked; 1.0.0 stays.
    unsigned = add_signed(
        env,
        cosign,
        "vault",
        Version("1.1.0", config_map("vault", ns, version="1.1.0"), replaces="1.0.0"),
        None,
    )
    env.publish()
    image = env.publisher.image("vault", "1.1.0")
    refused = env.wait(
        name,
        says(f"{image}@{unsigned} is not verified by {where}", "no signature found"),
        what="the refusal of the unsigned 1.1.0 in the Resolution's status",
        timeout=120,
    )
    resolved = condition(refused, "Resolved")
    assert (resolved["status"], resolved["reason"]) == ("False", "NotVerified"), resolved
    assert [r.number for r in env.store.list(InputRef("Resolution", name))] == [1]
    assert refused["status"]["activeRevision"] == 1
    assert env.config_map_data("vault") == {"version": "1.0.0"}

    # Signed by a key nobody trusts: refused, naming why.
    cosign.sign(f"{image.rsplit(':', 1)[0]}@{unsigned}", stranger[0])
    env.wait(
        name,
        says(f"{image}@{unsigned} is not verified", "does not verify with key"),
        what="the refusal of 1.1.0 signed by a stranger",
        timeout=120,
    )
    assert env.config_map_data("vault") == {"version": "1.0.0"}

    # Rotation, step 1: the next key is added, 1.1.0 is signed with it: it installs.
    trust(env, release[1], nxt[1])
    cosign.sign(f"{image.rsplit(':', 1)[0]}@{unsigned}", nxt[0])
    env.wait(name, installed(env, "1.1.0"), what="1.1.0 signed by the next key", timeout=120)
    assert (
        fingerprint(nxt[1]) in condition(bundle_of(env, "vault", "1.1.0"), TYPE_VERIFIED)["message"]
    )
    assert env.config_map_data("vault") == {"version": "1.1.0"}

    # Step 2: the old key is removed; 1.2.0 signed only with it no longer verifies.
    trust(env, nxt[1])
    old_only = add_signed(
        env,
        cosign,
        "vault",
        Version("1.2.0", config_map("vault", ns, version="1.2.0"), replaces="1.1.0"),
        release[0],
    )
    env.publish()
    env.wait(
        name,
        says(f"{env.publisher.image('vault', '1.2.0')}@{old_only} is not verified"),
        what="1.2.0, signed by the removed key, refused",
        timeout=120,
    )
    assert env.config_map_data("vault") == {"version": "1.1.0"}


def test_warn_installs_and_says_so_and_off_changes_nothing(
    env: Env, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    ns = env.namespace
    trust(env, keys["release"][1])
    policy(env, "warn")
    add_signed(
        env, cosign, "redis", Version("7.0.0", config_map("redis", ns, version="7.0.0")), None
    )
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "redis"}])
    env.wait(name, installed(env, "7.0.0"), what="unsigned redis installed under warn", timeout=120)
    bundle = bundle_of(env, "redis", "7.0.0")
    verified = condition(bundle, TYPE_VERIFIED)
    assert (verified["status"], verified["reason"]) == ("False", "NotVerified"), verified
    assert "no signature found" in verified["message"]
    assert "not verified (mode warn)" in condition(bundle, "Unpacked")["message"]
    events, _ = env.kube.list(env.kube.resource("v1", "Event"), None)
    warned = [
        e
        for e in events
        if e.get("reason") == "NotVerified"
        and (e.get("regarding") or e.get("involvedObject") or {}).get("name")
        == bundle["metadata"]["name"]
    ]
    assert warned, "no NotVerified Event on the Bundle"
    assert warned[0]["type"] == "Warning"

    # off: nothing verified, no condition written.
    policy(env, "off")
    add_signed(
        env,
        cosign,
        "redis",
        Version("7.1.0", config_map("redis", ns, version="7.1.0"), replaces="7.0.0"),
        None,
    )
    env.publish()
    env.wait(
        name, installed(env, "7.1.0"), what="unsigned redis 7.1.0 installed under off", timeout=120
    )
    assert condition(bundle_of(env, "redis", "7.1.0"), TYPE_VERIFIED) == {}


def test_an_unsigned_catalog_image_is_refused_and_a_signed_one_served(
    env: Env, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    ns = env.namespace
    trust(env, keys["release"][1])
    policy(env, "enforce")
    add_signed(
        env,
        cosign,
        "etcd",
        Version("3.5.0", config_map("etcd", ns, version="3.5.0")),
        keys["release"][0],
    )
    env.publisher.publish()
    reference, digest = env.publisher.push_catalog("catalogs/verified", "v1")
    name = unique_name("cat")
    body = {
        "apiVersion": "pivoter.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": name, "labels": session_labels()},
        "spec": {"source": {"type": "image", "image": {"ref": reference}}, "pollInterval": "1s"},
    }
    env.kube.create(CATALOGS, body)
    env.created.append((CATALOGS, name))
    env.wait(
        name,
        says(
            f"{reference}@{digest} is not verified by ConfigMap {ns}/{CONFIG_MAP}",
            "no signature found",
        ),
        what="the unsigned catalog image refused",
        resource=CATALOGS,
    )
    cosign.sign(f"{reference.rsplit(':', 1)[0]}@{digest}", keys["release"][0])
    env.wait(
        name,
        lambda o: is_(o, "Serving", "True"),
        what="the signed catalog served",
        resource=CATALOGS,
    )


def test_an_input_or_a_catalog_can_ask_for_more_never_less(
    env: Env, cosign: Cosign, keys: dict[str, tuple[Path, Path]]
) -> None:
    # No cluster policy here: only what an input or a catalog names applies, on top of it.
    ns = env.namespace
    trust(env, keys["release"][1])
    strict = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "strict"}}
    strict["data"] = {"mode": "enforce", "keys": KEYS_SECRET}
    strict["metadata"]["labels"] = {LABEL_POLICY: "true"}  # type: ignore[index]
    put(env, CONFIG_MAPS, strict)
    put(env, CONFIG_MAPS, {**strict, "metadata": {"name": "unlabelled"}})
    add_signed(env, cosign, "minio", Version("1.0.0", config_map("minio", ns, v="1")), None)
    add_signed(env, cosign, "nats", Version("1.0.0", config_map("nats", ns, v="1")), None)
    add_signed(env, cosign, "etcd", Version("1.0.0", config_map("etcd", ns, v="1")), None)
    env.publish()
    catalog = env.catalog()

    def annotated(packages: list[dict[str, Any]], policy: str = "") -> str:
        return env.resolution(packages, annotations={ANNOTATION: policy} if policy else None)

    # The input that names the strict policy is refused; the one that names none installs.
    refused = annotated([{"name": "minio"}], "strict")
    plain = annotated([{"name": "nats"}])
    env.wait(plain, installed(env, "1.0.0"), what="nats installed (no policy applies)")
    obj = env.wait(
        refused,
        says(f"is not verified by ConfigMap {ns}/strict", "no signature found"),
        what="minio refused by the input's policy",
    )
    assert condition(obj, "Resolved")["reason"] == "NotVerified"
    assert env.config_map_data("minio") is None
    # Only a ConfigMap labelled as a policy can be named.
    wrong = annotated([{"name": "etcd"}], "unlabelled")
    env.wait(
        wrong,
        says(f"ConfigMap {ns}/unlabelled is not a verification policy", LABEL_POLICY),
        what="the unlabelled ConfigMap refused as a policy",
    )
    assert env.config_map_data("etcd") is None
    # A catalog that names the strict policy holds every input's new revisions to it.
    env.kube.merge_patch(CATALOGS, catalog, {"metadata": {"annotations": {ANNOTATION: "strict"}}})
    add_signed(
        env,
        cosign,
        "nats",
        Version("1.1.0", config_map("nats", ns, v="2"), replaces="1.0.0"),
        None,
    )
    env.publish()
    obj = env.wait(
        plain,
        says(f"is not verified by ConfigMap {ns}/strict"),
        what="nats 1.1.0 refused by the catalog's policy",
    )
    assert condition(obj, "Resolved")["reason"] == "NotVerified"
    assert env.config_map_data("nats") == {"v": "1"}

    # A BundleDeployment (rukpak's own input) names a policy on its template: its Bundle is held
    # to it when pulled.
    deployment = unique_name("bd")
    template = {
        "metadata": {"annotations": {ANNOTATION: "strict"}},
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "source": {"type": "image", "image": {"ref": env.publisher.image("etcd", "1.0.0")}},
        },
    }
    body = {
        "apiVersion": "core.rukpak.io/v1alpha1",
        "kind": "BundleDeployment",
        "metadata": {"name": deployment, "labels": session_labels()},
        "spec": {"provisionerClassName": "core-rukpak-io-plain", "template": template},
    }
    env.kube.create(BUNDLE_DEPLOYMENTS, body)
    env.created.append((BUNDLE_DEPLOYMENTS, deployment))
    bundle = wait_for(
        lambda: next(
            (
                b
                for b in env.kube.list(BUNDLES)[0]
                if (b["metadata"].get("labels") or {}).get(LABEL_OWNER_NAME) == deployment
                and condition(b, "Unpacked").get("status") == "False"
            ),
            None,
        ),
        timeout=60,
        what="the BundleDeployment's Bundle refused by its policy",
    )
    unpacked = condition(bundle, "Unpacked")["message"]
    assert f"is not verified by ConfigMap {ns}/strict" in unpacked, unpacked
    assert condition(bundle, TYPE_VERIFIED)["reason"] == "NotVerified"
    assert env.config_map_data("etcd") is None
