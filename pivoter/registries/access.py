"""What every pull in the daemon offers a registry: the pull secrets in precedence and the mirrors.

:class:`RegistryAccessProvider` is built once by the daemon's wiring and handed to every room that
pulls an image (the Bundle controller, the Catalog sources, the ClusterCatalog controller). For
one pull, :meth:`RegistryAccessProvider.access` reads the Secrets the pull names, most specific
first, and appends the cluster-wide pull secret (``pivoter run --global-pull-secret NS/NAME``,
what OLM v1's flag of the same name means), then joins the mirrors. The Secrets are read at
every pull, never kept: a fixed or rotated Secret is used by the next attempt without a restart
and without touching the object that pulls.

Mirrors come from two places, merged (:meth:`MirrorPolicy.merge`): a ``registries.conf`` v2 file
(``--registries-conf``; read again when it changes on disk) and OpenShift's cluster objects
(``ImageDigestMirrorSet``, ``ImageTagMirrorSet``, ``ImageContentSourcePolicy``) from the
informers the wiring starts for the kinds the API server serves, so a new mirror set applies to
the next pull. A malformed file makes every pull fail with its message (a disconnected cluster
must not fall back to the source silently); a malformed object is skipped and described in
:attr:`RegistryAccessProvider.problems`.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from pivoter.kube import Kube
from pivoter.registries.secrets import PullSecretRef, read_auth_file
from pivoter.registries.verification import VerificationPolicyProvider
from provisioners.errors import InvalidSourceError
from provisioners.registries.auth import AuthFile, Keyring
from provisioners.registries.mirrors import (
    MirrorPolicy,
    from_mirror_sets,
    parse_registries_conf,
)
from provisioners.registries.pull import RegistryAccess
from provisioners.verification import VerificationPolicy

__all__ = ["CatalogSecrets", "MirrorObjects", "RegistryAccessProvider"]

log = logging.getLogger(__name__)

MAX_REGISTRIES_CONF = 1 << 20


@dataclass(frozen=True)
class MirrorObjects:
    """Readers of the cluster's mirror objects (each returns the objects as the cache holds
    them); None where the kind is not served."""

    digest_sets: Callable[[], Iterable[Mapping[str, Any]]] | None = None
    tag_sets: Callable[[], Iterable[Mapping[str, Any]]] | None = None
    content_source_policies: Callable[[], Iterable[Mapping[str, Any]]] | None = None


class CatalogSecrets:
    """Which catalogs name which images, for the catalogs that have a pull secret.

    A catalog's pull secret is offered for the catalog's own image and for the bundle images it
    names, and for nothing else: the Catalog and ClusterCatalog controllers :meth:`record` what
    each catalog names when its content changes, and the Bundle controller asks
    :meth:`for_image`. So a Bundle (whoever created it) gets a catalog's credentials only for
    an image that catalog offers anyway, and no annotation can point a pull at them.
    """

    def __init__(self) -> None:
        self._by_catalog: dict[str, tuple[str, tuple[PullSecretRef, ...], frozenset[str]]] = {}
        self._lock = threading.Lock()

    def record(
        self, catalog: str, digest: str, secrets: Sequence[PullSecretRef], images: Iterable[str]
    ) -> None:
        """``catalog`` (at content ``digest``) names ``images`` and pulls with ``secrets``;
        no secrets: forget it."""
        if not secrets:
            self.forget(catalog)
            return
        with self._lock:
            known = self._by_catalog.get(catalog)
            if known is not None and known[0] == digest and known[1] == tuple(secrets):
                return
        entry = (digest, tuple(secrets), frozenset(i for i in images if i))
        with self._lock:
            self._by_catalog[catalog] = entry

    def forget(self, catalog: str) -> None:
        """``catalog`` is gone (or has no pull secret any more)."""
        with self._lock:
            self._by_catalog.pop(catalog, None)

    def for_image(self, image: str) -> list[PullSecretRef]:
        """The pull secrets of every catalog that names ``image`` (catalogs by name)."""
        with self._lock:
            entries = sorted(self._by_catalog.items())
        refs: list[PullSecretRef] = []
        for _, (_, secrets, images) in entries:
            if image in images:
                refs.extend(r for r in secrets if r not in refs)
        return refs


@dataclass
class RegistryAccessProvider:
    """Builds a :class:`RegistryAccess` for each pull (see the module docstring)."""

    kube: Kube
    namespace: str = ""
    """pivoter's namespace: where the Secrets that Catalogs and ClusterCatalogs name live."""
    global_pull_secret: tuple[str, str] | None = None
    """(namespace, name) of the cluster-wide pull secret; None: none."""
    registries_conf: Path | None = None
    mirror_objects: MirrorObjects = field(default_factory=MirrorObjects)
    catalog_secrets: CatalogSecrets = field(default_factory=CatalogSecrets)
    """The catalogs' pull secrets by the images they name (for bundle pulls)."""
    verification: VerificationPolicyProvider | None = None
    """The cluster's verification policy (:mod:`pivoter.registries.verification`), handed to
    every pull with its access; None: nothing is verified."""
    _file: tuple[tuple[int, int], MirrorPolicy] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def verification_policies(self, *named: tuple[str, str]) -> tuple[VerificationPolicy, ...]:
        """The verification policies of a pull starting now: the cluster's and each ``(name,
        where)`` a catalog or input names (:mod:`pivoter.registries.verification`); empty:
        verify nothing. Raises :class:`~provisioners.verification.VerificationPolicyError` for
        one that cannot be used."""
        return self.verification.policies(*named) if self.verification is not None else ()

    def access(self, secrets: Sequence[PullSecretRef] = ()) -> RegistryAccess:
        """The keyring of ``secrets`` (most specific first) then the global pull secret, and
        the mirrors as they are now. Raises :class:`InvalidSourceError` for a required Secret
        that is missing or malformed, and for a malformed ``registries.conf``."""
        refs = list(secrets)
        if self.global_pull_secret is not None:
            namespace, name = self.global_pull_secret
            refs.append(PullSecretRef(namespace, name, field="--global-pull-secret"))
        files: list[AuthFile] = []
        seen: set[tuple[str, str]] = set()
        for ref in refs:
            if (ref.namespace, ref.name) in seen:
                continue
            seen.add((ref.namespace, ref.name))
            found = read_auth_file(self.kube, ref)
            if found is not None:
                files.append(found)
        return RegistryAccess(keyring=Keyring(tuple(files)), mirrors=self.mirrors())

    def mirrors(self) -> MirrorPolicy:
        """The file's rules merged with the cluster objects' (the file's first)."""
        return MirrorPolicy.merge(self._from_file(), self._from_cluster())

    @property
    def problems(self) -> tuple[str, ...]:
        """What is wrong with the mirror configuration now (objects skipped, self-mirrors)."""
        return self.mirrors().problems

    def _from_file(self) -> MirrorPolicy:
        path = self.registries_conf
        if path is None:
            return MirrorPolicy()
        try:
            stat = path.stat()
        except OSError as exc:
            return _unreadable(path, exc)
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if self._file is not None and self._file[0] == stamp:
                return self._file[1]
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_REGISTRIES_CONF + 1)
        except OSError as exc:
            return _unreadable(path, exc)
        policy = parse_registries_conf(data, f"registries.conf {path}")
        with self._lock:
            self._file = (stamp, policy)
        return policy

    def _from_cluster(self) -> MirrorPolicy:
        readers = self.mirror_objects

        def objects(read: Callable[[], Iterable[Mapping[str, Any]]] | None) -> list[Any]:
            return list(read()) if read is not None else []

        return from_mirror_sets(
            digest_sets=objects(readers.digest_sets),
            tag_sets=objects(readers.tag_sets),
            content_source_policies=objects(readers.content_source_policies),
        )


def _unreadable(path: Path, exc: OSError) -> NoReturn:
    """A registries.conf that cannot be read fails every pull rather than skip its mirrors."""
    raise InvalidSourceError(
        f"--registries-conf {path}: cannot be read ({os.strerror(exc.errno or 0) or exc})"
    )
