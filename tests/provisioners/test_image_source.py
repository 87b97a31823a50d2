"""The image source against a real distribution registry on loopback."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from provisioners.content import unpack_bundle
from provisioners.errors import (
    AuthenticationError,
    IntegrityError,
    InvalidSourceError,
    SourceNotFoundError,
    TlsVerificationError,
    UnsupportedContentError,
)
from provisioners.formats import format_for
from provisioners.formats.base import EmptyBundleError, MissingManifestsError, NestedManifestsError
from provisioners.registries import AuthFile, Keyring, RegistryAccess
from provisioners.sources.base import FetchOptions
from provisioners.sources.image import ImageSource, ImageSpec
from provisioners.store import BundleStore
from provisioners.unpack import SizeLimitError, UnsafeLinkError, UnsafePathError
from tests.provisioners.conftest import pusher_for
from tests.provisioners.oci import (
    DOCKER_LAYER,
    DOCKER_MANIFEST,
    LAYER_TAR,
    LAYER_ZSTD,
    Entry,
    file,
    plain_bundle,
)
from tests.provisioners.servers import Registry, Tls
from tests.provisioners.test_unpack import disk_bytes, sparse_tarball

OPTIONS = FetchOptions(timeout_seconds=5, deadline_seconds=60)


def with_pull_secret(config: bytes) -> RegistryAccess:
    """A pull with one pull secret."""
    return RegistryAccess(keyring=Keyring((AuthFile.parse(config, "the pull secret"),)))


def fetch(spec: ImageSpec, dest: Path):  # type: ignore[no-untyped-def]
    return ImageSource().fetch(spec, dest, OPTIONS)


def test_tag_reference_unpacks_records_digest_and_warns(registry: Registry, dest: Path) -> None:
    digest = pusher_for(registry).image("bundles/demo", "v1", [plain_bundle("by-tag")])
    result = fetch(ImageSpec(f"{registry.host}/bundles/demo:v1"), dest)
    assert result.revision == digest
    assert result.resolved_source == {
        "type": "image",
        "image": {"ref": f"{registry.host}/bundles/demo@{digest}"},
    }
    assert len(result.warnings) == 1
    assert "tag" in result.warnings[0]
    assert f"@{digest}" in result.warnings[0]
    converted = format_for("plain+v0").convert(dest)
    assert [o["metadata"]["name"] for o in converted.objects] == ["by-tag"]


def test_digest_reference_has_no_warning(registry: Registry, dest: Path) -> None:
    digest = pusher_for(registry).image("bundles/pinned", "v1", [plain_bundle("pinned")])
    result = fetch(ImageSpec(f"{registry.host}/bundles/pinned@{digest}"), dest)
    assert result.revision == digest
    assert result.warnings == []
    assert (dest / "manifests" / "objects.yaml").read_text().endswith("k: v\n")


@pytest.mark.parametrize("media_type", [LAYER_ZSTD, LAYER_TAR, DOCKER_LAYER])
def test_layer_media_types(registry: Registry, dest: Path, media_type: str) -> None:
    manifest_type = DOCKER_MANIFEST if media_type == DOCKER_LAYER else None
    pusher = pusher_for(registry)
    kwargs = {"manifest_type": manifest_type} if manifest_type else {}
    pusher.image("bundles/media", "t", [plain_bundle("media")], media_type=media_type, **kwargs)
    fetch(ImageSpec(f"{registry.host}/bundles/media:t"), dest)
    assert "name: media" in (dest / "manifests" / "objects.yaml").read_text()


def test_whiteouts_are_applied_across_layers(registry: Registry, dest: Path) -> None:
    base = [
        *plain_bundle("base"),
        file("manifests/removed.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: gone}\n"),
        Entry("docs/", kind=tarfile.DIRTYPE),
        file("docs/old-a.md", "a"),
        file("docs/old-b.md", "b"),
    ]
    top = [
        file("manifests/.wh.removed.yaml", ""),
        file("docs/new.md", "new"),
        file("docs/.wh..wh..opq", ""),  # after new.md: same-layer entries survive
    ]
    pusher_for(registry).image("bundles/layers", "v1", [base, top])
    fetch(ImageSpec(f"{registry.host}/bundles/layers:v1"), dest)
    assert sorted(p.name for p in (dest / "manifests").iterdir()) == ["objects.yaml"]
    assert sorted(p.name for p in (dest / "docs").iterdir()) == ["new.md"]


def test_image_index_picks_linux_amd64(registry: Registry, dest: Path) -> None:
    pusher = pusher_for(registry)
    arm = pusher.image("bundles/multi", "arm", [plain_bundle("arm64")])
    amd = pusher.image("bundles/multi", "amd", [plain_bundle("amd64")])
    index = pusher.index("bundles/multi", "v1", [(arm, "linux", "arm64"), (amd, "linux", "amd64")])
    result = fetch(ImageSpec(f"{registry.host}/bundles/multi:v1"), dest)
    assert result.revision == index
    assert "name: amd64" in (dest / "manifests" / "objects.yaml").read_text()


def test_missing_tag_and_repository(registry: Registry, dest: Path) -> None:
    pusher_for(registry).image("bundles/exists", "v1", [plain_bundle()])
    with pytest.raises(SourceNotFoundError, match="tag 'v2' not found"):
        fetch(ImageSpec(f"{registry.host}/bundles/exists:v2"), dest)
    with pytest.raises(SourceNotFoundError, match=r"does not exist|not found"):
        fetch(ImageSpec(f"{registry.host}/bundles/never-pushed:v1"), dest)


@pytest.mark.parametrize(
    "ref",
    ["", "UPPER/case:v1", "host:5000/repo:bad tag", "repo@sha256:abc", "repo:" + "x" * 200],
)
def test_bad_references_are_rejected(ref: str, dest: Path) -> None:
    with pytest.raises(InvalidSourceError, match="invalid image reference"):
        fetch(ImageSpec(ref), dest)


def test_private_registry_basic_auth(private_registry: Registry, dest: Path) -> None:
    pusher_for(private_registry).image("private/app", "v1", [plain_bundle("private")])
    ref = f"{private_registry.host}/private/app:v1"
    with pytest.raises(AuthenticationError, match="no pull secret has credentials"):
        fetch(ImageSpec(ref), dest)
    with pytest.raises(AuthenticationError, match="rejected"):
        fetch(
            ImageSpec(ref, access=with_pull_secret(private_registry.pull_secret(password="wrong"))),
            dest,
        )
    result = fetch(ImageSpec(ref, access=with_pull_secret(private_registry.pull_secret())), dest)
    assert result.revision.startswith("sha256:")
    assert "name: private" in (dest / "manifests" / "objects.yaml").read_text()


def test_private_registry_token_auth(token_registry: Registry, dest: Path) -> None:
    pusher_for(token_registry).image("private/token", "v1", [plain_bundle("token")])
    ref = f"{token_registry.host}/private/token:v1"
    with pytest.raises(AuthenticationError, match="no pull secret has credentials"):
        fetch(ImageSpec(ref), dest)
    with pytest.raises(AuthenticationError, match="rejected"):
        fetch(
            ImageSpec(ref, access=with_pull_secret(token_registry.pull_secret(password="nope"))),
            dest,
        )
    fetch(ImageSpec(ref, access=with_pull_secret(token_registry.pull_secret())), dest)
    assert "name: token" in (dest / "manifests" / "objects.yaml").read_text()


def test_tls_registry_needs_its_ca(tls_registry: Registry, tls: Tls, dest: Path) -> None:
    pusher_for(tls_registry, tls).image("secure/app", "v1", [plain_bundle("tls")])
    ref = f"{tls_registry.host}/secure/app:v1"
    with pytest.raises(TlsVerificationError, match="not trusted"):
        fetch(ImageSpec(ref, plain_http=False), dest)
    fetch(ImageSpec(ref, ca_pem=tls.ca_pem), dest)
    assert "name: tls" in (dest / "manifests" / "objects.yaml").read_text()


def test_plain_http_refused_for_remote_hosts(dest: Path) -> None:
    with pytest.raises(InvalidSourceError, match="plain http"):
        fetch(ImageSpec("quay.io/org/bundle:v1", plain_http=True), dest)


def test_layer_with_parent_path_is_refused(registry: Registry, dest: Path) -> None:
    evil = [*plain_bundle(), file("../escaped.txt", "x")]
    pusher_for(registry).image("evil/traversal", "v1", [evil])
    with pytest.raises(UnsafePathError, match=r"'\.\.'"):
        fetch(ImageSpec(f"{registry.host}/evil/traversal:v1"), dest)
    assert not (dest.parent / "escaped.txt").exists()


def test_layer_with_absolute_symlink_is_refused(registry: Registry, dest: Path) -> None:
    evil = [*plain_bundle(), Entry("manifests/passwd", kind=tarfile.SYMTYPE, link="/etc/passwd")]
    pusher_for(registry).image("evil/symlink", "v1", [evil])
    with pytest.raises(UnsafeLinkError, match="absolute"):
        fetch(ImageSpec(f"{registry.host}/evil/symlink:v1"), dest)


def test_blob_larger_than_declared_is_detected(registry: Registry, dest: Path) -> None:
    pusher = pusher_for(registry)
    good = pusher.image("bundles/blobs", "good", [plain_bundle("good")])
    other_layer = pusher.blob("bundles/blobs", b"not the layer the manifest names")
    # A manifest whose layer descriptor names a real blob but declares a different size.
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": pusher.blob("bundles/blobs", b"{}"),
            "size": 2,
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": other_layer,
                "size": 5,
            }
        ],
    }
    pusher.manifest(
        "bundles/blobs",
        "bad",
        json.dumps(manifest).encode(),
        "application/vnd.oci.image.manifest.v1+json",
    )
    assert good
    with pytest.raises(IntegrityError, match="larger than the 5 bytes"):
        fetch(ImageSpec(f"{registry.host}/bundles/blobs:bad"), dest)


def test_ten_gigabyte_sparse_file_in_a_layer_is_refused(
    registry: Registry, tmp_path: Path, dest: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    layer = sparse_tarball(work)
    pusher_for(registry).image("evil/sparse", "v1", [layer])
    with pytest.raises(SizeLimitError, match="10737418240 bytes"):
        fetch(ImageSpec(f"{registry.host}/evil/sparse:v1"), dest)
    assert disk_bytes(dest) < 1 << 20
    # Nothing beside the bundle root: the layer scratch directory is gone too.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle", "work"]


@pytest.mark.parametrize(
    ("layer", "error", "match"),
    [
        ([file("README.md", "no manifests here")], MissingManifestsError, "no manifests/"),
        ([Entry("manifests/", kind=tarfile.DIRTYPE)], EmptyBundleError, "zero objects"),
        (
            [*plain_bundle(), file("manifests/nested/more.yaml", "kind: x")],
            NestedManifestsError,
            "manifests/nested/",
        ),
    ],
)
def test_invalid_bundle_images_fail_the_unpack_and_stay_out_of_the_store(
    registry: Registry, tmp_path: Path, layer: list[Entry], error: type, match: str
) -> None:
    repo = f"invalid/{error.__name__.lower()}"
    pusher_for(registry).image(repo, "v1", [layer])
    store = BundleStore(tmp_path / "store")
    with pytest.raises(error, match=match):
        unpack_bundle(
            ImageSpec(f"{registry.host}/{repo}:v1"), store, bundle_format=format_for("plain+v0")
        )
    assert store.keys() == set()


def test_valid_bundle_image_is_stored_with_its_objects(registry: Registry, tmp_path: Path) -> None:
    pusher_for(registry).image("valid/bundle", "v1", [plain_bundle("stored")])
    store = BundleStore(tmp_path / "store")
    unpacked = unpack_bundle(
        ImageSpec(f"{registry.host}/valid/bundle:v1"), store, bundle_format=format_for("plain+v0")
    )
    assert unpacked.converted is not None
    assert [o["metadata"]["name"] for o in unpacked.converted.objects] == ["stored"]
    assert store.keys() == {unpacked.stored.key}


def test_tls_registry_with_verification_skipped(
    tls_registry: Registry, tls: Tls, dest: Path
) -> None:
    pusher_for(tls_registry, tls).image("secure/skip", "v1", [plain_bundle("skip")])
    fetch(
        ImageSpec(
            f"{tls_registry.host}/secure/skip:v1", plain_http=False, insecure_skip_tls_verify=True
        ),
        dest,
    )
    assert "name: skip" in (dest / "manifests" / "objects.yaml").read_text()


def test_index_without_the_platform(registry: Registry, tmp_path: Path) -> None:
    pusher = pusher_for(registry)
    arm = pusher.image("bundles/arm-only", "arm", [plain_bundle("arm")])
    s390 = pusher.image("bundles/arm-only", "s390x", [plain_bundle("s390x")])
    pusher.index("bundles/arm-only", "single", [(arm, "linux", "arm64")])
    pusher.index("bundles/arm-only", "two", [(arm, "linux", "arm64"), (s390, "linux", "s390x")])
    single = tmp_path / "single"
    single.mkdir()
    # A single-entry index is taken whatever its platform (bundles are platform-independent).
    fetch(ImageSpec(f"{registry.host}/bundles/arm-only:single"), single)
    assert "name: arm" in (single / "manifests" / "objects.yaml").read_text()
    two = tmp_path / "two"
    two.mkdir()
    with pytest.raises(UnsupportedContentError, match="offers linux/arm64, linux/s390x"):
        fetch(ImageSpec(f"{registry.host}/bundles/arm-only:two"), two)
