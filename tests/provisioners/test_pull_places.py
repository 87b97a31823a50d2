"""A pull that may come from several places with several credentials, against real registries.

:func:`provisioners.registries.pull.open_image` tries each place the mirror policy allows (its
mirrors, then the source) and, at each, every credential the pull secrets hold for that place, as
the kubelet does. ``test_mirrors.py`` and ``test_keyring.py`` check the policy and the keyring on
their own; here real distribution registries serve (or refuse) each place, so the whole chain
(registries.conf or OpenShift mirror sets -> places -> keyring -> OCI client -> image source) runs
as a disconnected cluster would run it: a source on a loopback port where nothing listens,
mirrors on live registries, pull secrets that are stale, misplaced or scoped to a namespace.
Where a real registry cannot misbehave (challenge loops, plain-http realms, enormous tokens,
cross-origin blob redirects), a scripted peer of :mod:`tests.net.hostile` plays the registry.

Every failure is asserted on its type and words: it names the place and the Secret, it is one
line, and it never holds a password or a token.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from provisioners.errors import (
    AuthenticationError,
    ContentTooLargeError,
    MirrorConfigError,
    RegistryBlockedError,
    SourceError,
)
from provisioners.httpclient import TlsOptions
from provisioners.registries import (
    AuthFile,
    Keyring,
    MirrorPolicy,
    Opened,
    PullFailedEverywhere,
    RegistryAccess,
    from_mirror_sets,
    open_image,
    parse_registries_conf,
)
from provisioners.registries.reference import parse_reference
from provisioners.sources.base import FetchOptions, FetchResult
from provisioners.sources.image import ImageSource, ImageSpec
from resolver.net.credentials import MAX_CREDENTIAL_CHARS, is_loopback
from tests.net.hostile import Step, hostile_server, timed
from tests.ports import free_port
from tests.provisioners.conftest import pusher_for
from tests.provisioners.oci import (
    LAYER_GZIP,
    OCI_MANIFEST,
    compress,
    digest,
    plain_bundle,
    tar_bytes,
)
from tests.provisioners.servers import Registry

OPTIONS = FetchOptions(timeout_seconds=5, deadline_seconds=30)
HOSTILE = FetchOptions(timeout_seconds=2, deadline_seconds=5)
"""For the scripted peers: each failure must come well within this deadline."""
MARGIN = 3.0
"""Slack over a deadline for a loaded machine: an upper bound, not a benchmark."""
ORIGIN = "registries.conf /etc/containers/registries.conf"
WRONG = "stale-Pa55word-A"
OTHER_WRONG = "stale-Pa55word-B"
"""Wrong passwords, spelled so that no message can hold them by chance."""


# -- helpers ------------------------------------------------------------------------------------


def dead_host() -> str:
    """``127.0.0.1:PORT`` where nothing listens: a source a disconnected cluster cannot reach."""
    return f"127.0.0.1:{free_port()}"


def dockerconfig(entries: dict[str, tuple[str, str]]) -> bytes:
    """A ``.dockerconfigjson`` of ``key -> (username, password)``."""
    auths = {
        key: {"auth": base64.b64encode(f"{user}:{password}".encode()).decode()}
        for key, (user, password) in entries.items()
    }
    return json.dumps({"auths": auths}).encode()


def keyring(*secrets: tuple[str, bytes]) -> Keyring:
    """Pull secrets in precedence order, each ``(source label, .dockerconfigjson)``."""
    return Keyring(tuple(AuthFile.parse(data, source) for source, data in secrets))


def pull(
    ref: str, dest: Path, access: RegistryAccess, options: FetchOptions = OPTIONS
) -> FetchResult:
    """Fetch ``ref`` through the image source, as a Bundle's unpack does."""
    return ImageSource().fetch(ImageSpec(ref, access=access), dest, options)


def open_at(ref: str, access: RegistryAccess) -> Opened:
    """Open ``ref`` (manifest only) to see which place and which login served it."""
    return open_image(
        parse_reference(ref),
        access,
        tls=TlsOptions(),
        timeout=OPTIONS.timeout_seconds,
        deadline=OPTIONS.deadline_seconds,
    )


def bundle_name(dest: Path) -> str:
    """The ConfigMap name of the plain bundle unpacked into ``dest``."""
    text = (dest / "manifests" / "objects.yaml").read_text()
    return text.split("name: ", 1)[1].split("\n", 1)[0]


def registries_conf(source: str, mirror: str) -> MirrorPolicy:
    """A registries.conf v2 mapping ``source`` (a prefix) to ``mirror`` for every pull."""
    text = f"""
unqualified-search-registries = ["registry.access.redhat.com"]

[[registry]]
prefix = "{source}"
location = "{source}"

[[registry.mirror]]
location = "{mirror}"
"""
    return parse_registries_conf(text, ORIGIN)


def idms(source: str, mirror: str, *, never_contact_source: bool = False) -> dict[str, Any]:
    """An ImageDigestMirrorSet as oc-mirror v2 writes it (``idms-oc-mirror.yaml``)."""
    entry: dict[str, Any] = {"mirrors": [mirror], "source": source}
    if never_contact_source:
        entry["mirrorSourcePolicy"] = "NeverContactSource"
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ImageDigestMirrorSet",
        "metadata": {"name": "idms-operator-0"},
        "spec": {"imageDigestMirrors": [entry]},
        "status": {},
    }


def itms(source: str, mirror: str) -> dict[str, Any]:
    """An ImageTagMirrorSet as oc-mirror v2 writes it (``itms-oc-mirror.yaml``)."""
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ImageTagMirrorSet",
        "metadata": {"name": "itms-generic-0"},
        "spec": {"imageTagMirrors": [{"mirrors": [mirror], "source": source}]},
        "status": {},
    }


def digest_set_policy(source: str, mirror: str) -> MirrorPolicy:
    """The policy of one ImageDigestMirrorSet mapping ``source`` to ``mirror``."""
    return from_mirror_sets(digest_sets=[idms(source, mirror)])


def assert_no_secret(message: str, *passwords: str) -> None:
    """``message`` is one line holding none of ``passwords``, raw or inside a basic header."""
    assert "\n" not in message, message
    for password in passwords:
        assert password not in message
        for user in ("puller", "someone"):
            assert base64.b64encode(f"{user}:{password}".encode()).decode() not in message


@dataclass(frozen=True)
class Pushed:
    """An image pushed to a registry: where, and its manifest digest."""

    registry: Registry
    repository: str
    digest: str

    @property
    def host(self) -> str:
        return self.registry.host


@pytest.fixture(scope="module")
def mirrored(registry: Registry) -> Pushed:
    """A bundle image on the anonymous registry, under the path a mirror of ``<source>/team``
    at ``<registry>/mirror/team`` serves ``<source>/team/app`` from (tag v1)."""
    pushed = pusher_for(registry).image("mirror/team/app", "v1", [plain_bundle("mirrored")])
    return Pushed(registry, "mirror/team/app", pushed)


@pytest.fixture(scope="module")
def private(private_registry: Registry, token_registry: Registry) -> dict[str, Pushed]:
    """The same bundle image on the htpasswd registry and on the token-realm registry, at
    ``team/app:v1``, keyed by how each authenticates."""
    found = {}
    for kind, registry in (("htpasswd", private_registry), ("token realm", token_registry)):
        pushed = pusher_for(registry).image("team/app", "v1", [plain_bundle("private")])
        found[kind] = Pushed(registry, "team/app", pushed)
    return found


AUTH_KINDS = ["htpasswd", "token realm"]


def right(registry: Registry) -> tuple[str, str]:
    """The username and password ``registry`` accepts."""
    assert registry.username is not None
    assert registry.password is not None
    return registry.username, registry.password


# -- 1. disconnected: a digest pull served by a mirror ------------------------------------------


@pytest.mark.parametrize(
    "policy_of",
    [registries_conf, digest_set_policy],
    ids=["registries.conf", "ImageDigestMirrorSet"],
)
def test_a_digest_pull_from_an_unreachable_source_is_served_by_its_mirror(
    mirrored: Pushed, dest: Path, policy_of: Callable[[str, str], MirrorPolicy]
) -> None:
    source = dead_host()
    policy = policy_of(f"{source}/team", f"{mirrored.host}/mirror/team")
    assert policy.problems == ()
    ref = f"{source}/team/app@{mirrored.digest}"

    result = pull(ref, dest, RegistryAccess(mirrors=policy))

    assert result.served_by == f"{mirrored.host}/mirror/team/app@{mirrored.digest}"
    # The resolved source is what the user wrote, pinned: the mirror is a detail of this cluster.
    assert result.resolved_source == {"type": "image", "image": {"ref": ref}}
    assert result.revision == mirrored.digest
    assert result.warnings == []
    assert bundle_name(dest) == "mirrored"


def test_without_the_mirror_the_unreachable_source_fails_in_its_own_words(
    mirrored: Pushed, dest: Path
) -> None:
    """The control for the test above: nothing listens at the source."""
    source = dead_host()
    with pytest.raises(SourceError, match=f"cannot reach {source}") as failed:
        pull(f"{source}/team/app@{mirrored.digest}", dest, RegistryAccess())
    assert failed.value.retryable
    assert not isinstance(failed.value, PullFailedEverywhere)  # one place: its own error


# -- 2. tags go only through tag mirrors --------------------------------------------------------


def test_a_tag_pull_needs_a_tag_mirror_when_the_source_is_never_contacted(
    mirrored: Pushed, dest: Path
) -> None:
    refuse: list[Step] = [("send", b"HTTP/1.1 500 Boom\r\nContent-Length: 0\r\n\r\n")]
    with hostile_server(refuse) as source_server:
        source = f"127.0.0.1:{source_server.port}"
        digest_set = idms(
            f"{source}/team", f"{mirrored.host}/mirror/team", never_contact_source=True
        )
        tag_ref = f"{source}/team/app:v1"

        only_digests = RegistryAccess(mirrors=from_mirror_sets(digest_sets=[digest_set]))
        with pytest.raises(RegistryBlockedError, match="pin the image by digest") as blocked:
            pull(tag_ref, dest, only_digests)
        message = str(blocked.value)
        assert tag_ref in message
        assert "ImageDigestMirrorSet idms-operator-0" in message
        assert "\n" not in message
        assert list(dest.iterdir()) == []

        with_tags = RegistryAccess(
            mirrors=from_mirror_sets(
                digest_sets=[digest_set],
                tag_sets=[itms(f"{source}/team", f"{mirrored.host}/mirror/team")],
            )
        )
        result = pull(tag_ref, dest, with_tags)

    assert result.served_by.startswith(f"{mirrored.host}/mirror/team/app")  # the tag mirror
    assert result.resolved_source == {
        "type": "image",
        "image": {"ref": f"{source}/team/app@{mirrored.digest}"},
    }
    assert any("referenced by tag" in w for w in result.warnings)
    assert bundle_name(dest) == "mirrored"
    assert source_server.heads == []  # NeverContactSource: not one request reached the source


# -- 3. failing everywhere, within one deadline -------------------------------------------------


def test_a_pull_that_fails_everywhere_names_each_place_with_its_own_error(
    registry: Registry, dest: Path
) -> None:
    source = dead_host()
    policy = registries_conf(f"{source}/team", f"{registry.host}/empty/team")
    ref = f"{source}/team/absent:v1"

    with pytest.raises(
        PullFailedEverywhere, match=f"could not pull {ref} from the 2 places tried"
    ) as failed:
        pull(ref, dest, RegistryAccess(mirrors=policy))

    message = str(failed.value)
    mirror = f"mirror {registry.host}/empty/team/absent:v1 ({ORIGIN}): "
    source_place = f"source {ref} ({ORIGIN}): "
    assert mirror in message
    assert source_place in message
    assert message.index(mirror) < message.index(source_place)  # in the order tried
    mirror_error = message.split(mirror, 1)[1].split("; source ", 1)[0]
    assert "does not exist" in mirror_error or "not found" in mirror_error
    assert f"cannot reach {source}" in message.split(source_place, 1)[1]
    assert failed.value.retryable  # the source may come back
    assert "\n" not in message


def test_one_deadline_bounds_every_place_of_a_pull(dest: Path) -> None:
    """Three stalling mirrors and a stalling source (one peer, four repositories): each alone
    would wait the stall timeout (4 x 1 s); the pull's one deadline (1.5 s) ends the whole
    attempt, at the second mirror."""
    options = FetchOptions(timeout_seconds=1.0, deadline_seconds=1.5)
    with hostile_server([("stall", 60)]) as peer:
        host = f"127.0.0.1:{peer.port}"
        mirrors = "".join(
            f'[[registry.mirror]]\nlocation = "{host}/{name}/team"\n' for name in ("m1", "m2", "m3")
        )
        conf = f'[[registry]]\nprefix = "{host}/src/team"\nlocation = "{host}/src/team"\n{mirrors}'
        access = RegistryAccess(mirrors=parse_registries_conf(conf, ORIGIN))
        exc, seconds = timed(lambda: pull(f"{host}/src/team/app:v1", dest, access, options))

    assert seconds < options.deadline_seconds + MARGIN, f"the pull took {seconds:.1f}s"
    assert isinstance(exc, PullFailedEverywhere), exc
    message = str(exc)
    first = message.index(f"mirror {host}/m1/team/app:v1 ({ORIGIN}): {host} stalled")
    second = message.index(f"mirror {host}/m2/team/app:v1 ({ORIGIN}): {host} is too slow")
    assert first < second
    assert "passed its 1.5s deadline" in message
    assert exc.retryable
    assert "\n" not in message
    # No time was left for the third mirror or the source: they were not asked, and the error
    # says so (a person must not read the source as tried and unreachable).
    asked = [head.split(b" ")[1] for head in peer.heads]
    assert asked == [b"/v2/m1/team/app/manifests/v1", b"/v2/m2/team/app/manifests/v1"]
    untried = message.split("not tried, the pull's deadline was spent: ", 1)[1]
    assert f"mirror {host}/m3/team/app:v1" in untried
    assert "source " in untried


def test_a_deadline_spent_on_a_mirror_says_the_source_was_not_tried(dest: Path) -> None:
    options = FetchOptions(timeout_seconds=10.0, deadline_seconds=1.0)
    with hostile_server([("stall", 60)]) as mirror:
        source = dead_host()
        policy = registries_conf(f"{source}/team", f"127.0.0.1:{mirror.port}/team")
        exc, seconds = timed(
            lambda: pull(f"{source}/team/app:v1", dest, RegistryAccess(mirrors=policy), options)
        )
    assert isinstance(exc, SourceError), exc
    assert seconds < options.deadline_seconds + MARGIN
    assert "mirror" in str(exc)
    assert source in str(exc)


# -- 4. credentials ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", AUTH_KINDS)
def test_a_stale_pull_secret_hands_over_to_the_next(
    private: dict[str, Pushed], kind: str, dest: Path
) -> None:
    image = private[kind]
    user, password = right(image.registry)
    access = RegistryAccess(
        keyring=keyring(
            ("Secret team/stale", dockerconfig({image.host: (user, WRONG)})),
            ("Secret team/current", dockerconfig({image.host: (user, password)})),
        )
    )
    ref = f"{image.host}/team/app@{image.digest}"

    opened = open_at(ref, access)
    assert opened.login is not None
    assert opened.login.source == "Secret team/current"
    assert opened.served_by == ""

    result = pull(ref, dest, access)
    assert result.revision == image.digest
    assert bundle_name(dest) == "private"


@pytest.mark.parametrize("kind", AUTH_KINDS)
def test_only_wrong_passwords_name_every_secret_and_no_password(
    private: dict[str, Pushed], kind: str, dest: Path
) -> None:
    image = private[kind]
    user, password = right(image.registry)
    ref = f"{image.host}/team/app:v1"

    one = RegistryAccess(
        keyring=keyring(("Secret team/stale-a", dockerconfig({image.host: (user, WRONG)})))
    )
    with pytest.raises(AuthenticationError, match="rejected the pull secret's credentials") as err:
        pull(ref, dest, one)
    message = str(err.value)
    assert f"(credentials from Secret team/stale-a, entry {image.host!r})" in message
    assert_no_secret(message, WRONG, password)

    two = RegistryAccess(
        keyring=keyring(
            ("Secret team/stale-a", dockerconfig({image.host: (user, WRONG)})),
            ("Secret team/stale-b", dockerconfig({image.host: (user, OTHER_WRONG)})),
        )
    )
    with pytest.raises(SourceError, match="rejected the pull secret's credentials") as both:
        pull(ref, dest, two)
    message = str(both.value)
    first = message.index("(credentials from Secret team/stale-a, ")
    second = message.index("(credentials from Secret team/stale-b, ")
    assert f"from the 1 place tried: source {ref}: " in message
    assert first < second  # in precedence order
    assert message.count("rejected the pull secret's credentials") == 2
    assert_no_secret(message, WRONG, OTHER_WRONG, password)
    assert list(dest.iterdir()) == []


def test_two_rejected_secrets_at_one_place_are_not_two_places(
    private: dict[str, Pushed], dest: Path
) -> None:
    image = private["htpasswd"]
    user, _ = right(image.registry)
    access = RegistryAccess(
        keyring=keyring(
            ("Secret team/stale-a", dockerconfig({image.host: (user, WRONG)})),
            ("Secret team/stale-b", dockerconfig({image.host: (user, OTHER_WRONG)})),
        )
    )
    with pytest.raises(SourceError) as failed:
        pull(f"{image.host}/team/app:v1", dest, access)
    assert "2 places" not in str(failed.value)


@pytest.mark.parametrize("kind", AUTH_KINDS)
def test_secrets_for_other_registries_only_say_where_they_looked(
    private: dict[str, Pushed], kind: str, dest: Path
) -> None:
    image = private[kind]
    user, password = right(image.registry)
    access = RegistryAccess(
        keyring=keyring(
            ("Secret team/quay", dockerconfig({"quay.io": (user, password)})),
            (
                "Secret openshift-config/pull-secret",
                dockerconfig({"registry.redhat.io": ("someone", password)}),
            ),
        )
    )
    with pytest.raises(AuthenticationError, match="requires authentication") as err:
        pull(f"{image.host}/team/app:v1", dest, access)
    message = str(err.value)
    assert (
        f"(no entry for {image.host} in Secret team/quay, Secret openshift-config/pull-secret)"
        in message
    )
    assert_no_secret(message, password)


@pytest.mark.parametrize("kind", AUTH_KINDS)
def test_the_most_specific_key_of_a_secret_wins(
    private: dict[str, Pushed], kind: str, dest: Path
) -> None:
    image = private[kind]
    user, password = right(image.registry)
    ref = f"{image.host}/team/app:v1"

    scoped = dockerconfig({image.host: (user, WRONG), f"{image.host}/team": (user, password)})
    opened = open_at(ref, RegistryAccess(keyring=keyring(("Secret team/scoped", scoped))))
    assert opened.login is not None
    assert opened.login.key == f"{image.host}/team"
    pull(ref, dest, RegistryAccess(keyring=keyring(("Secret team/scoped", scoped))))
    assert bundle_name(dest) == "private"

    # Reversed: the namespace key is still the one offered, and the registry-wide key of the
    # same secret is no fallback (one login per secret, as containers/image reads auth.json).
    reversed_keys = dockerconfig(
        {image.host: (user, password), f"{image.host}/team": (user, WRONG)}
    )
    access = RegistryAccess(keyring=keyring(("Secret team/scoped", reversed_keys)))
    with pytest.raises(AuthenticationError, match="rejected") as err:
        open_at(ref, access)
    assert f"entry '{image.host}/team'" in str(err.value)
    assert_no_secret(str(err.value), WRONG, password)


def test_a_mirrors_credentials_are_looked_up_by_the_mirrors_host(
    private: dict[str, Pushed], dest: Path
) -> None:
    image = private["htpasswd"]
    user, password = right(image.registry)
    source = dead_host()
    policy = from_mirror_sets(digest_sets=[idms(f"{source}/team", f"{image.host}/team")])
    ref = f"{source}/team/app@{image.digest}"

    # The right password, filed under the source's name: the mirror is asked anonymously.
    for_source = RegistryAccess(
        mirrors=policy,
        keyring=keyring(("Secret team/source", dockerconfig({source: (user, password)}))),
    )
    with pytest.raises(PullFailedEverywhere) as failed:
        pull(ref, dest, for_source)
    message = str(failed.value)
    mirror_line = message.split(f"mirror {image.host}/team/app@{image.digest}", 1)[1]
    assert mirror_line.startswith(" (ImageDigestMirrorSet idms-operator-0): registry")
    assert "no pull secret has credentials" in mirror_line.split("; source", 1)[0]
    assert f"source {ref} (ImageDigestMirrorSet idms-operator-0) with Secret team/source" in (
        message
    )
    assert_no_secret(message, password)

    # Filed under the mirror's name (and a wrong one under the source's): the mirror serves.
    both = RegistryAccess(
        mirrors=policy,
        keyring=keyring(
            (
                "Secret team/both",
                dockerconfig({source: (user, WRONG), f"{image.host}/team": (user, password)}),
            )
        ),
    )
    opened = open_at(ref, both)
    assert opened.login is not None
    assert opened.login.key == f"{image.host}/team"
    result = pull(ref, dest, both)
    assert result.served_by == f"{image.host}/team/app@{image.digest}"
    assert result.resolved_source == {"type": "image", "image": {"ref": ref}}


def test_an_anonymous_mirror_attempt_says_which_secrets_had_no_entry_for_it(
    private: dict[str, Pushed], dest: Path
) -> None:
    image = private["htpasswd"]
    user, password = right(image.registry)
    source = dead_host()
    access = RegistryAccess(
        mirrors=from_mirror_sets(digest_sets=[idms(f"{source}/team", f"{image.host}/team")]),
        keyring=keyring(("Secret team/source", dockerconfig({source: (user, password)}))),
    )
    with pytest.raises(PullFailedEverywhere) as failed:
        pull(f"{source}/team/app@{image.digest}", dest, access)
    assert f"no entry for {image.host} in Secret team/source" in str(failed.value)


# -- 5. hostile registries ----------------------------------------------------------------------


def _response(status: str, headers: dict[str, str], body: bytes = b"") -> list[Step]:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers.items())]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    return [("send", ("\r\n".join(lines) + "\r\n\r\n").encode() + body)]


def _secret_for(host: str) -> RegistryAccess:
    return RegistryAccess(
        keyring=keyring(("Secret team/pull", dockerconfig({host: ("someone", WRONG)})))
    )


@pytest.mark.parametrize("scheme", ["Basic", "Bearer"])
def test_a_registry_that_challenges_forever_gets_one_answer(scheme: str, dest: Path) -> None:
    token = "granted-token-xyz"

    def script(head: bytes) -> list[Step]:
        if head.startswith(b"GET /token"):
            return _response(
                "200 OK",
                {"Content-Type": "application/json"},
                json.dumps({"token": token}).encode(),
            )
        challenge = 'Basic realm="loop"'
        if scheme == "Bearer":  # the realm is this peer too; ``server`` is bound by then
            challenge = f'Bearer realm="{server.url}/token",service="loop"'
        return _response("401 Unauthorized", {"WWW-Authenticate": challenge})

    with hostile_server(script) as server:
        host = f"127.0.0.1:{server.port}"
        exc, seconds = timed(lambda: pull(f"{host}/team/app:v1", dest, _secret_for(host), HOSTILE))

    assert isinstance(exc, AuthenticationError), exc
    assert "rejected the pull secret's credentials" in str(exc)
    assert "Secret team/pull" in str(exc)
    assert seconds < HOSTILE.deadline_seconds + MARGIN
    assert_no_secret(str(exc), WRONG)
    assert token not in str(exc)
    # Asked once anonymously, answered once (plus the token request): no loop.
    assert len(server.heads) == (2 if scheme == "Basic" else 3)
    assert b"authorization" in server.heads[-1].lower()


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record (and refuse) every name lookup of a host that is not loopback."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def lookup(host: str, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(host):
            asked.append(host)
            raise OSError(f"the test refuses to look up {host}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return asked


def test_a_plain_http_realm_elsewhere_gets_no_credentials(
    dest: Path, loopback_only: list[str]
) -> None:
    challenge = 'Bearer realm="http://example.invalid/token",service="r",scope="repository:x:pull"'
    with hostile_server(_response("401 Unauthorized", {"WWW-Authenticate": challenge})) as server:
        host = f"127.0.0.1:{server.port}"
        exc, seconds = timed(lambda: pull(f"{host}/team/app:v1", dest, _secret_for(host), HOSTILE))

    assert isinstance(exc, AuthenticationError), exc
    message = str(exc)
    assert "refusing to send credentials to example.invalid over plain http" in message
    assert "Secret team/pull" in message
    assert seconds < HOSTILE.deadline_seconds + MARGIN
    assert_no_secret(message, WRONG)
    assert loopback_only == []  # example.invalid was never even looked up
    assert len(server.heads) == 1


@pytest.mark.parametrize(
    ("size", "words"),
    [
        (MAX_CREDENTIAL_CHARS + 1, f"longer than {MAX_CREDENTIAL_CHARS} characters"),
        (2 << 20, "returned more than 1048576 bytes"),
    ],
    ids=["over the credential cap", "over the token body cap"],
)
def test_an_enormous_token_is_refused_in_one_line(size: int, words: str, dest: Path) -> None:
    token = "T" * size

    def script(head: bytes) -> list[Step]:
        if head.startswith(b"GET /token"):
            body = json.dumps({"token": token}).encode()
            return _response("200 OK", {"Content-Type": "application/json"}, body)
        if b"authorization: bearer" in head.lower():
            raise AssertionError("the enormous token was sent back")
        realm = f'Bearer realm="{server.url}/token",service="big"'
        return _response("401 Unauthorized", {"WWW-Authenticate": realm})

    with hostile_server(script) as server:
        host = f"127.0.0.1:{server.port}"
        exc, seconds = timed(lambda: pull(f"{host}/team/app:v1", dest, _secret_for(host), HOSTILE))

    assert isinstance(exc, SourceError), exc
    if size > 1 << 20:
        assert isinstance(exc, ContentTooLargeError), exc
    message = str(exc)
    assert words in message
    assert "T" * 32 not in message
    assert len(message) < 500
    assert_no_secret(message, WRONG)
    assert seconds < HOSTILE.deadline_seconds + MARGIN
    assert len(server.heads) == 2  # the manifest request and the token request, nothing more


def test_a_blob_redirected_to_another_origin_gets_no_credentials(dest: Path) -> None:
    layer = compress(tar_bytes(plain_bundle("redirected")), LAYER_GZIP)
    config = b'{"architecture":"amd64","os":"linux"}'
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": digest(config),
                "size": len(config),
            },
            "layers": [{"mediaType": LAYER_GZIP, "digest": digest(layer), "size": len(layer)}],
        }
    ).encode()

    def storage(head: bytes) -> list[Step]:
        return _response("200 OK", {"Content-Type": "application/octet-stream"}, layer)

    with hostile_server(storage) as other:

        def registry(head: bytes) -> list[Step]:
            if b"authorization: basic" not in head.lower():
                return _response("401 Unauthorized", {"WWW-Authenticate": 'Basic realm="r"'})
            if b"/manifests/" in head:
                return _response("200 OK", {"Content-Type": OCI_MANIFEST}, manifest)
            # 127.0.0.1 and localhost are different origins (both loopback, so both allowed).
            location = f"http://localhost:{other.port}/storage/{digest(layer)}?signature=abc"
            return _response("307 Temporary Redirect", {"Location": location})

        with hostile_server(registry) as server:
            host = f"127.0.0.1:{server.port}"
            result = pull(f"{host}/team/app:v1", dest, _secret_for(host), HOSTILE)

    assert result.revision == digest(manifest)
    assert bundle_name(dest) == "redirected"
    blob_requests = [h for h in server.heads if b"/blobs/" in h]
    assert blob_requests
    assert all(b"authorization: basic" in h.lower() for h in blob_requests)
    (stored,) = other.heads
    assert stored.startswith(b"GET /storage/")
    assert b"authorization" not in stored.lower()
    assert base64.b64encode(f"someone:{WRONG}".encode()) not in stored


# -- 6. registries.conf that is wrong ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('[[registry]\nprefix = "quay.io"\n', "not valid TOML"),
        (
            '[[registry]]\nprefix = "quay.io/team"\n[[registry.mirror]]\n'
            'location = "http://mirror.local/team"\n',
            "[[registry]] #1 (quay.io/team) mirror #1: location 'http://mirror.local/team' has a "
            "URL scheme",
        ),
    ],
    ids=["bad TOML", "mirror with a scheme"],
)
def test_a_malformed_registries_conf_is_refused_in_one_line(text: str, words: str) -> None:
    with pytest.raises(MirrorConfigError) as err:
        parse_registries_conf(text, ORIGIN)
    message = str(err.value)
    assert message.startswith(f"{ORIGIN}: ")
    assert words in message
    assert "\n" not in message


def test_a_mirror_that_is_its_own_source_is_a_problem_and_the_source_still_serves(
    registry: Registry, dest: Path
) -> None:
    pushed = pusher_for(registry).image("self/team/app", "v1", [plain_bundle("self")])
    policy = registries_conf(f"{registry.host}/self/team", f"{registry.host}/self/team")
    (problem,) = policy.problems
    assert problem.startswith(ORIGIN)
    assert "is the source itself and is dropped" in problem

    result = pull(f"{registry.host}/self/team/app:v1", dest, RegistryAccess(mirrors=policy))

    assert result.served_by == ""
    assert result.revision == pushed
    assert bundle_name(dest) == "self"
