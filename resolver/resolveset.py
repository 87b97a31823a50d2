"""The ResolveSet document: the result of a resolution, and the ``--installed`` input format.

A versioned document (``apiVersion: pivoter.io/v1alpha1``, ``kind: ResolveSet``) listing per
selected bundle its package, version, bundle name, channel, catalog, image and provisioner class
(from ``olm.bundle.mediatype``), and, where the daemon verified the image's signatures, its
digest and who signed it. ``metadata.selectionHash`` is computed from the selected bundles
only (package, bundle, version, image, provisioner class), so identical selections hash
identically whatever else changed in the catalogs or which catalog served them;
``metadata.inputsDigest`` records what was resolved from. Serialised to YAML and JSON. Written by
``pivoter resolve`` and the daemon; read back by :func:`load` as installed state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from resolver import safedata
from resolver.rules.inputs import Choice, Installed
from resolver.rules.predicates import PredicateError, requirements

API_VERSION = "pivoter.io/v1alpha1"
"""The schema version of the document."""

KIND = "ResolveSet"
"""The document kind."""

PROVISIONER_REGISTRY = "core-rukpak-io-registry"
PROVISIONER_PLAIN = "core-rukpak-io-plain"
PROVISIONER_HELM = "core-rukpak-io-helm"


class ResolveSetError(ValueError):
    """A document that is not a ResolveSet this version can read."""


def provisioner_class(mediatype: str) -> str:
    """The provisioner class of a bundle with ``olm.bundle.mediatype`` ``mediatype``."""
    if mediatype == "plain+v0":
        return PROVISIONER_PLAIN
    if mediatype == "helm":
        return PROVISIONER_HELM
    return PROVISIONER_REGISTRY


@dataclass(frozen=True, slots=True)
class Entry:
    """One selected bundle."""

    package: str
    version: str
    bundle: str
    channel: str
    catalog: str
    image: str
    provisioner_class: str
    replaces: str = ""
    requires: tuple[str, ...] = ()
    """The other packages of the set whose bundles meet this bundle's requirements
    (``olm.package.required``, ``olm.gvk.required``, ...): a pivot installs them first."""
    digest: str = ""
    """The image's manifest digest, when the daemon verified its signatures before writing the
    revision: what is installed is the image by this digest, never the tag resolved again."""
    signed_by: str = ""
    """Who signed that digest (a key's fingerprint, or a certificate's subject and issuer), or
    why it was not verified where the policy only warns."""

    @property
    def pinned_image(self) -> str:
        """The image by digest when one is recorded, else as the catalog names it."""
        if not self.digest or not self.image:
            return self.image
        name = self.image.split("@", 1)[0]
        last = name.rsplit("/", 1)[-1]
        if ":" in last:
            name = name[: len(name) - len(last)] + last.split(":", 1)[0]
        return f"{name}@{self.digest}"

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data (empty ``replaces`` and ``requires`` omitted)."""
        data: dict[str, Any] = {
            "package": self.package,
            "version": self.version,
            "bundle": self.bundle,
            "channel": self.channel,
            "catalog": self.catalog,
            "image": self.image,
            "provisionerClassName": self.provisioner_class,
        }
        if self.replaces:
            data["replaces"] = self.replaces
        if self.requires:
            data["requires"] = list(self.requires)
        if self.digest:
            data["digest"] = self.digest
        if self.signed_by:
            data["signedBy"] = self.signed_by
        return data


@dataclass(frozen=True, slots=True)
class ResolveSet:
    """A resolution result: selected bundles plus hashes and provenance."""

    entries: tuple[Entry, ...]
    inputs_digest: str = ""
    profile: str = ""
    notes: Mapping[str, Sequence[str]] = field(default_factory=dict)

    @property
    def selection_hash(self) -> str:
        """sha256 of the selected bundles only, independent of order and of catalogs."""
        rows = sorted(
            [e.package, e.bundle, e.version, e.image, e.provisioner_class] for e in self.entries
        )
        blob = json.dumps(rows, separators=(",", ":"), sort_keys=True).encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """The document as plain data."""
        metadata: dict[str, Any] = {"selectionHash": self.selection_hash}
        if self.inputs_digest:
            metadata["inputsDigest"] = self.inputs_digest
        if self.profile:
            metadata["profile"] = self.profile
        doc: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": metadata,
            "bundles": [e.to_dict() for e in sorted(self.entries, key=lambda e: e.package)],
        }
        if self.notes:
            doc["whyNotNewer"] = {k: list(v) for k, v in sorted(self.notes.items())}
        return doc

    def to_yaml(self) -> str:
        """YAML text."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=False)

    def to_json(self) -> str:
        """JSON text."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def installed(self) -> list[Installed]:
        """The bundles of this document as installed state for the next resolution."""
        return [
            Installed(
                name=e.bundle,
                package=e.package,
                version=e.version,
                catalog=e.catalog,
                channel=e.channel,
            )
            for e in self.entries
        ]


def from_choices(
    choices: Sequence[Choice],
    *,
    inputs_digest: str = "",
    profile: str = "",
    notes: Mapping[str, Sequence[str]] | None = None,
) -> ResolveSet:
    """Build the document of a resolution's choices."""
    entries = tuple(
        Entry(
            package=c.package,
            version=c.bundle.version,
            bundle=c.bundle.name,
            channel=c.channel,
            catalog=c.catalog,
            image=c.bundle.image,
            provisioner_class=provisioner_class(c.bundle.mediatype),
            replaces=c.replaces,
            requires=_requires(c, choices),
        )
        for c in choices
    )
    return ResolveSet(entries, inputs_digest, profile, dict(notes or {}))


def _requires(choice: Choice, choices: Sequence[Choice]) -> tuple[str, ...]:
    """The packages of ``choices`` (other than its own) that meet a requirement of ``choice``."""
    try:
        predicates = list(requirements(choice.bundle))
    except PredicateError:
        return ()  # the resolver refused such a bundle already; nothing to order by
    return tuple(
        sorted(
            {
                other.package
                for other in choices
                if other.package != choice.package and any(p(other.bundle) for p in predicates)
            }
        )
    )


def parse(data: Any) -> ResolveSet:
    """Read a ResolveSet from decoded YAML/JSON; raise ResolveSetError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise ResolveSetError("a ResolveSet must be a mapping")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise ResolveSetError(
            f"expected apiVersion {API_VERSION} kind {KIND}, got "
            f"apiVersion {data.get('apiVersion')!r} kind {data.get('kind')!r}"
        )
    bundles = data.get("bundles")
    if bundles is None:
        bundles = []
    if not isinstance(bundles, list):
        raise ResolveSetError("bundles must be a list")
    entries = []
    for i, item in enumerate(bundles):
        if not isinstance(item, Mapping):
            raise ResolveSetError(f"bundles[{i}] must be a mapping")
        missing = [k for k in ("package", "bundle", "version") if not item.get(k)]
        if missing:
            raise ResolveSetError(f"bundles[{i}] lacks {', '.join(missing)}")
        entries.append(
            Entry(
                package=str(item["package"]),
                version=str(item["version"]),
                bundle=str(item["bundle"]),
                channel=str(item.get("channel", "") or ""),
                catalog=str(item.get("catalog", "") or ""),
                image=str(item.get("image", "") or ""),
                provisioner_class=str(item.get("provisionerClassName", "") or PROVISIONER_REGISTRY),
                replaces=str(item.get("replaces", "") or ""),
                requires=_packages(item.get("requires"), f"bundles[{i}].requires"),
                digest=str(item.get("digest", "") or ""),
                signed_by=str(item.get("signedBy", "") or ""),
            )
        )
    metadata = data.get("metadata") or {}
    return ResolveSet(
        tuple(entries),
        str(metadata.get("inputsDigest", "") or ""),
        str(metadata.get("profile", "") or ""),
    )


def _packages(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ResolveSetError(f"{where} must be a list of package names")
    return tuple(value)


def loads(text: str) -> ResolveSet:
    """Read a ResolveSet from YAML or JSON text."""
    try:
        data = safedata.load_yaml(text)
    except safedata.SafeDataError as err:
        raise ResolveSetError(f"not YAML or JSON: {err}") from None
    return parse(data)


def digest(parts: Sequence[Any]) -> str:
    """sha256 of canonical JSON of ``parts`` (used for ``inputsDigest``)."""
    blob = json.dumps(parts, separators=(",", ":"), sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()
