"""Open an image for pulling: every place the mirror policy allows, every credential that matches.

:func:`open_image` is where the image source (bundles) and the catalog image source begin a pull.
It asks the :class:`~provisioners.registries.mirrors.MirrorPolicy` for the places that may serve
the reference (its mirrors in order, then the source unless it is blocked), and at each place
asks the :class:`~provisioners.registries.auth.Keyring` for the credentials that match it (the
most specific entry of each pull secret, in the secrets' precedence order), as the kubelet does:
the first credential the registry accepts wins, a rejected one hands over to the next, and a
place with no matching credential is tried anonymously. The first place that serves the
manifest serves the whole pull (its blobs too), within the one deadline the pull shares.

When every place fails, the error lists every place tried with its own error (and which
secrets were offered there), so a person can tell a mirror that lacks the image from a source
the network cannot reach. A pull with one place and one credential keeps that place's own error
(its type and words), as before mirrors existed. No credential value ever enters a message: a
:class:`~provisioners.registries.auth.Login` is named by its source (the Secret) and key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from provisioners.errors import (
    AuthenticationError,
    SourceError,
    SourceUnavailableError,
    TlsVerificationError,
)
from provisioners.httpclient import HttpClient, TlsOptions
from provisioners.registries.auth import Keyring, Login
from provisioners.registries.client import ImageManifest, RegistryClient
from provisioners.registries.mirrors import MirrorPolicy, PullPlace
from provisioners.registries.reference import ImageReference
from resolver.net import Budget

__all__ = ["Opened", "PullFailedEverywhere", "RegistryAccess", "open_image"]


@dataclass(frozen=True)
class RegistryAccess:
    """How pivoter reaches registries for one pull: the credentials and the mirrors."""

    keyring: Keyring = field(default_factory=Keyring)
    mirrors: MirrorPolicy = field(default_factory=MirrorPolicy)


class PullFailedEverywhere(SourceError):
    """No place (mirror or source) served the image; the message names each with its error."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


@dataclass(frozen=True)
class Opened:
    """A place that served the image's manifest, with the client that reached it."""

    client: RegistryClient
    place: PullPlace
    top: ImageManifest
    """The manifest (or index) the reference names, as this place served it."""
    login: Login | None
    """The credential the place accepted (None: anonymous)."""

    @property
    def served_by(self) -> str:
        """The mirror that served the content, pinned (``host/repository@digest``); empty
        when the source itself served it."""
        return self.place.reference.pinned(self.top.digest) if self.place.mirror else ""


@dataclass(frozen=True)
class _Attempt:
    place: PullPlace
    login: Login | None
    error: SourceError

    def line(self) -> str:
        where = f"mirror {self.place}" if self.place.mirror else f"source {self.place}"
        if self.place.origin:
            where += f" ({self.place.origin})"
        if self.login is not None and not isinstance(self.error, AuthenticationError):
            where += f" with {self.login.source}"  # an auth error names it itself
        return f"{where}: {self.error}"


def _schemes(
    place: PullPlace, tls: TlsOptions, plain_http: bool | None
) -> list[tuple[str, TlsOptions]]:
    """The ways to reach ``place``, in order: http for loopback registries without a CA (or when
    the caller says so), https otherwise. An ``insecure`` place of the mirror policy is reached
    as containers/image reaches an insecure registry: https without certificate checks first,
    then plain http if https cannot be spoken there (the usual mirror of a disconnected lab)."""
    reference = place.reference
    if plain_http is None:
        if place.insecure and not reference.is_loopback:
            return [("https", TlsOptions(tls.ca_pem, insecure_skip_verify=True)), ("http", tls)]
        plain_http = reference.is_loopback and not tls.ca_pem
    if plain_http and not reference.is_loopback and not place.insecure:
        plain_http = False
    if place.insecure and not plain_http:
        return [("https", TlsOptions(tls.ca_pem, insecure_skip_verify=True))]
    return [("http" if plain_http else "https", tls)]


def open_image(
    reference: ImageReference,
    access: RegistryAccess,
    *,
    tls: TlsOptions,
    timeout: float,
    deadline: float,
    plain_http: bool | None = None,
) -> Opened:
    """Find the first place that serves ``reference``'s manifest (see the module docstring).

    Raises the place's own :class:`SourceError` when there was one place and one attempt,
    :class:`PullFailedEverywhere` when several were tried, and the mirror policy's
    ``RegistryBlockedError`` when no place may be contacted at all.
    """
    places = access.mirrors.places(reference)
    budget = Budget(deadline, stall=timeout)
    attempts: list[_Attempt] = []
    for number, place in enumerate(places):
        if number and budget.remaining() <= 0:
            raise _failure(reference, attempts, untried=places[number:])
        opened = _open_at(
            place,
            access,
            _schemes(place, tls, plain_http),
            budget,
            attempts,
            timeout=timeout,
            deadline=deadline,
        )
        if opened is not None:
            return opened
    raise _failure(reference, attempts, untried=[])


def _open_at(
    place: PullPlace,
    access: RegistryAccess,
    schemes: list[tuple[str, TlsOptions]],
    budget: Budget,
    attempts: list[_Attempt],
    *,
    timeout: float,
    deadline: float,
) -> Opened | None:
    """The manifest at ``place`` by the first scheme that speaks there and the first credential
    it accepts; None (each failure appended to ``attempts``) when it cannot serve it."""
    target = place.reference
    for number, (scheme, place_tls) in enumerate(schemes):
        http = HttpClient(place_tls, timeout=timeout, deadline=deadline, budget=budget)
        logins: list[Login | None] = [
            *access.keyring.candidates(target.registry, target.repository)
        ] or [None]
        for login in logins:
            client = RegistryClient(
                target,
                http,
                scheme=scheme,
                credentials=login.credentials if login is not None else None,
            )
            try:
                top = client.manifest(target.manifest_ref)
            except AuthenticationError as exc:
                attempts.append(_Attempt(place, login, _explained(exc, place, login, access)))
                continue  # the next credential for this place, then the next place
            except (SourceUnavailableError, TlsVerificationError) as exc:
                if number + 1 < len(schemes):
                    break  # https cannot be spoken there: the next scheme (plain http)
                attempts.append(_Attempt(place, login, exc))
                return None
            except SourceError as exc:
                attempts.append(_Attempt(place, login, exc))
                return None  # this place cannot serve it whatever the credential
            return Opened(client, place, top, login)
        else:
            return None  # every credential refused
    return None


def _explained(
    error: AuthenticationError, place: PullPlace, login: Login | None, access: RegistryAccess
) -> AuthenticationError:
    """The registry's refusal and which Secret was offered (or where none was found)."""
    if login is not None:
        return AuthenticationError(
            f"{error} (credentials from {login.source}, entry {login.key!r})"
        )
    if access.keyring.sources:
        where = ", ".join(access.keyring.sources)
        return AuthenticationError(f"{error} (no entry for {place.reference.registry} in {where})")
    return AuthenticationError(f"{error} (no pull secret is configured)")


def _failure(
    reference: ImageReference,
    attempts: list[_Attempt],
    *,
    untried: list[PullPlace],
) -> SourceError:
    """The error of a pull that no place served: the place's own error when the pull had one
    place and made one attempt there; otherwise every attempt, and the places the deadline
    left untried."""
    tried = list(dict.fromkeys(a.place for a in attempts))
    if len(attempts) == 1 and not untried:
        return attempts[0].error
    lines = [a.line() for a in attempts]
    if untried:
        names = ", ".join(f"{'mirror' if p.mirror else 'source'} {p}" for p in untried)
        lines.append(f"not tried, the pull's deadline was spent: {names}")
    retryable = (not untried and any(a.error.retryable for a in attempts)) or bool(untried)
    places = "place" if len(tried) == 1 else "places"
    return PullFailedEverywhere(
        f"could not pull {reference} from the {len(tried)} {places} tried: {'; '.join(lines)}",
        retryable=retryable,
    )
