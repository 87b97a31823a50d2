"""The credential keyring: auth files matched per image as containers/image matches auth.json.

Documents are shaped as the cluster holds them (an OpenShift global pull secret, a
``kubectl create secret docker-registry`` secret, a legacy ``.dockercfg``); every lookup goes
through :meth:`AuthFile.parse`, so normalization and matching are tested together.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from provisioners.errors import InvalidSourceError
from provisioners.registries import AuthFile, Keyring, Login
from provisioners.registries.auth import BasicCredentials


def _auth(username: str, password: str) -> str:
    return base64.b64encode(f"{username}:{password}".encode()).decode()


def _config(auths: dict[str, Any]) -> bytes:
    return json.dumps({"auths": auths}).encode()


def _file(source: str, logins: dict[str, tuple[str, str]]) -> AuthFile:
    """An auth file of ``key -> (username, password)`` entries, as ``auth`` fields."""
    return AuthFile.parse(
        _config({key: {"auth": _auth(*login)} for key, login in logins.items()}), source
    )


def _key(auth_file: AuthFile, registry: str, repository: str) -> str | None:
    login = auth_file.lookup(registry, repository)
    return None if login is None else login.key


GLOBAL_PULL_SECRET = _config(
    {
        "cloud.openshift.com": {
            "auth": _auth("openshift-release-dev+ocm", "T0K3N"),
            "email": "a@b",
        },
        "quay.io": {"auth": _auth("openshift-release-dev+ocm", "T0K3N"), "email": "a@b"},
        "registry.connect.redhat.com": {"auth": _auth("uhc-pool", "c0nnect"), "email": "a@b"},
        "registry.redhat.io": {"auth": _auth("uhc-pool", "r3dhat"), "email": "a@b"},
    }
)
DOCKERCFG = json.dumps(
    {"https://index.docker.io/v1/": {"auth": _auth("hubuser", "hubpass"), "email": "hub@x"}}
).encode()


def test_dockerconfigjson_as_a_cluster_holds_it() -> None:
    pull_secret = AuthFile.parse(GLOBAL_PULL_SECRET, "Secret openshift-config/pull-secret")
    assert [key for key, _ in pull_secret.entries] == [
        "cloud.openshift.com",
        "quay.io",
        "registry.connect.redhat.com",
        "registry.redhat.io",
    ]
    login = pull_secret.lookup("registry.redhat.io", "redhat/redhat-operator-index")
    assert login == Login(
        "Secret openshift-config/pull-secret",
        "registry.redhat.io",
        BasicCredentials("uhc-pool", "r3dhat"),
    )
    assert pull_secret.lookup("ghcr.io", "org/app") is None


def test_a_kubectl_docker_registry_secret() -> None:
    # kubectl create secret docker-registry writes username, password, email and auth.
    secret = _config(
        {
            "registry.example.com:8443": {
                "username": "robot",
                "password": "s3cret",
                "email": "robot@example.com",
                "auth": _auth("robot", "s3cret"),
            }
        }
    )
    login = AuthFile.parse(secret, "Secret ns/regcred").lookup(
        "registry.example.com:8443", "team/bundle"
    )
    assert login is not None
    assert login.credentials == BasicCredentials("robot", "s3cret")


def test_legacy_dockercfg_matches_docker_hub() -> None:
    legacy = AuthFile.parse(DOCKERCFG, "Secret ns/old key '.dockercfg'")
    assert legacy.entries == (("index.docker.io", BasicCredentials("hubuser", "hubpass")),)
    login = legacy.lookup("docker.io", "library/nginx")
    assert login is not None
    assert (login.key, login.credentials) == (
        "index.docker.io",
        BasicCredentials("hubuser", "hubpass"),
    )


SPECIFIC = {
    "quay.io": ("registry", "p0"),
    "quay.io/org": ("org", "p1"),
    "quay.io/org/team": ("team", "p2"),
    "quay.io/org/team/app": ("app", "p3"),
    "quay.io/other/app": ("other", "p4"),
}


@pytest.mark.parametrize(
    ("repository", "key"),
    [
        ("org/team/app", "quay.io/org/team/app"),
        ("org/team/app/nested", "quay.io/org/team/app"),
        ("org/team/other", "quay.io/org/team"),
        ("org/web", "quay.io/org"),
        ("other/app", "quay.io/other/app"),
        ("other/web", "quay.io"),
        ("elsewhere/app", "quay.io"),
        ("single", "quay.io"),
    ],
)
def test_most_specific_key_wins_within_a_file(repository: str, key: str) -> None:
    # Written least specific first, so document order cannot be what decides.
    assert _key(_file("s", SPECIFIC), "quay.io", repository) == key


@pytest.mark.parametrize(
    ("key", "repository"),
    [
        ("quay.io/or", "org/app"),
        ("quay.io/org/ap", "org/app"),
        ("quay.io/org/app", "org/application"),
        ("quay.io/org/app", "org"),
        ("quay.io/org", "organization/app"),
        ("quay.io/app", "org/app"),
    ],
)
def test_namespaces_match_whole_components_only(key: str, repository: str) -> None:
    assert _key(_file("s", {key: ("u", "p")}), "quay.io", repository) is None


@pytest.mark.parametrize(
    ("written", "normalized"),
    [
        ("https://index.docker.io/v1/", "index.docker.io"),
        ("http://registry.local:5000/", "registry.local:5000"),
        ("https://quay.io/v2/some/path", "quay.io"),
        ("https://user@quay.io", "quay.io"),
        ("quay.io/", "quay.io"),
        ("quay.io/org/", "quay.io/org"),
        ("quay.io/org/app", "quay.io/org/app"),
    ],
)
def test_keys_are_normalized(written: str, normalized: str) -> None:
    assert [key for key, _ in _file("s", {written: ("u", "p")}).entries] == [normalized]


def test_a_url_keys_path_is_no_namespace() -> None:
    # "https://quay.io/org/" is quay.io, so it serves every repository of quay.io.
    auth_file = _file("s", {"https://quay.io/org/": ("u", "p")})
    assert _key(auth_file, "quay.io", "elsewhere/app") == "quay.io"


@pytest.mark.parametrize(
    "order",
    [
        ("https://quay.io/", "quay.io/", "quay.io"),
        ("quay.io", "quay.io/", "https://quay.io/"),
        ("quay.io/", "https://quay.io", "quay.io"),
    ],
)
def test_a_key_as_written_beats_one_normalized_to_it(order: tuple[str, ...]) -> None:
    passwords = {"quay.io": "exact", "quay.io/": "slash", "https://quay.io/": "url"}
    passwords |= {"https://quay.io": "url"}
    auth_file = _file("s", {key: ("u", passwords[key]) for key in order})
    assert auth_file.entries == (("quay.io", BasicCredentials("u", "exact")),)


def test_among_url_keys_the_first_wins() -> None:
    auth_file = _file("s", {"https://quay.io/v1/": ("u", "one"), "http://quay.io": ("u", "two")})
    assert auth_file.entries == (("quay.io", BasicCredentials("u", "one")),)


HUB = ("docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com")


@pytest.mark.parametrize("key", [*HUB, "https://index.docker.io/v1/", "https://docker.io"])
@pytest.mark.parametrize("registry", HUB)
def test_docker_hub_names_are_one_registry(key: str, registry: str) -> None:
    login = _file("s", {key: ("hub", "p")}).lookup(registry, "library/busybox")
    assert login is not None
    assert login.credentials == BasicCredentials("hub", "p")


def test_docker_hub_namespaces_match_across_names() -> None:
    auth_file = _file("s", {"index.docker.io/myorg": ("org", "p1"), "docker.io": ("any", "p2")})
    assert _key(auth_file, "docker.io", "myorg/app") == "index.docker.io/myorg"
    assert _key(auth_file, "docker.io", "library/nginx") == "docker.io"


def test_the_hub_key_spelled_as_the_reference_is_preferred() -> None:
    auth_file = _file(
        "s", {"https://index.docker.io/v1/": ("legacy", "p1"), "docker.io": ("modern", "p2")}
    )
    assert _key(auth_file, "docker.io", "library/nginx") == "docker.io"
    assert _key(auth_file, "index.docker.io", "library/nginx") == "index.docker.io"
    # Neither spelled as the reference: the first in the document.
    assert _key(auth_file, "registry-1.docker.io", "library/nginx") == "index.docker.io"


def test_hub_aliases_do_not_reach_other_registries() -> None:
    auth_file = _file("s", {"docker.io": ("hub", "p")})
    assert auth_file.lookup("quay.io", "library/nginx") is None
    assert auth_file.lookup("docker.io.evil.example", "library/nginx") is None


@pytest.mark.parametrize(
    ("key", "registry", "matches"),
    [
        ("localhost:5000", "localhost:5000", True),
        ("localhost:5000", "localhost", False),
        ("localhost", "localhost:5000", False),
        ("localhost:5000", "localhost:5001", False),
        ("http://localhost:5000/", "localhost:5000", True),
        ("http://localhost:5000/", "localhost", False),
        ("127.0.0.1:5000/org", "127.0.0.1:5000", True),
        ("[::1]:5000", "[::1]:5000", True),
        ("[::1]:5000", "[::1]", False),
    ],
)
def test_hosts_match_exactly_port_included(key: str, registry: str, matches: bool) -> None:
    assert (_file("s", {key: ("u", "p")}).lookup(registry, "org/app") is not None) is matches


def test_entries_without_basic_credentials_are_dropped() -> None:
    secret = _config(
        {
            "quay.io/org": {"identitytoken": "eyJhbGciOi.token"},
            "quay.io/org/app": {},
            "quay.io": {"auth": _auth("u", "p")},
            "ghcr.io": "not a map",
        }
    )
    auth_file = AuthFile.parse(secret, "s")
    assert auth_file.entries == (("quay.io", BasicCredentials("u", "p")),)
    assert _key(auth_file, "quay.io", "org/app") == "quay.io"


def test_precedence_across_files_and_dedup() -> None:
    bundle = _file("Secret ns/bundle-pull", {"quay.io/org/app": ("bundle", "pb")})
    account = _file("Secret ns/sa-pull", {"quay.io": ("shared", "ps")})
    catalog = _file("Secret ns/catalog-pull", {"quay.io/org": ("shared", "ps")})
    cluster = _file(
        "Secret openshift-config/pull-secret",
        {"quay.io/org/app": ("global", "pg"), "registry.redhat.io": ("rh", "pr")},
    )
    keyring = Keyring((bundle, account, catalog, cluster))
    assert keyring.sources == (
        "Secret ns/bundle-pull",
        "Secret ns/sa-pull",
        "Secret ns/catalog-pull",
        "Secret openshift-config/pull-secret",
    )
    # Precedence, not specificity, orders files: the service account's registry-wide key comes
    # before the cluster's exact one; the catalog's equal credentials are not tried twice.
    assert keyring.candidates("quay.io", "org/app") == [
        Login("Secret ns/bundle-pull", "quay.io/org/app", BasicCredentials("bundle", "pb")),
        Login("Secret ns/sa-pull", "quay.io", BasicCredentials("shared", "ps")),
        Login(
            "Secret openshift-config/pull-secret",
            "quay.io/org/app",
            BasicCredentials("global", "pg"),
        ),
    ]
    assert keyring.candidates("quay.io", "other/app") == [
        Login("Secret ns/sa-pull", "quay.io", BasicCredentials("shared", "ps")),
    ]
    assert [login.source for login in keyring.candidates("registry.redhat.io", "rh/index")] == [
        "Secret openshift-config/pull-secret"
    ]
    assert keyring.candidates("ghcr.io", "org/app") == []


def test_same_username_other_password_is_not_a_duplicate() -> None:
    first = _file("a", {"quay.io": ("robot", "old")})
    second = _file("b", {"quay.io": ("robot", "new")})
    third = _file("c", {"quay.io": ("robot", "old")})
    logins = Keyring((first, second, third)).candidates("quay.io", "org/app")
    assert [(login.source, login.credentials.password) for login in logins] == [
        ("a", "old"),
        ("b", "new"),
    ]


def test_an_empty_keyring_gives_nothing() -> None:
    assert Keyring().candidates("quay.io", "org/app") == []
    assert Keyring().sources == ()
    empty = AuthFile.parse(b'{"auths": {}}', "Secret ns/empty")
    assert Keyring((empty,)).candidates("docker.io", "library/nginx") == []


SECRET = "Hunter2-do-not-print"


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"username": "robot", "password": SECRET + "\n"}, "password"),
        ({"username": "robot", "password": "\x00" + SECRET}, "password"),
        ({"username": "ro:bot", "password": SECRET}, "username"),
        ({"username": "robot", "password": 7}, "password"),
        ({"auth": _auth("robot", SECRET + "\r\n")}, "auth"),
        ({"auth": _auth("robot", SECRET)[:-2] + "!!"}, "auth"),
        ({"auth": base64.b64encode(SECRET.encode()).decode()}, "auth"),
        ({"auth": _auth("robot", "fine"), "identitytoken": SECRET + " tail"}, "identitytoken"),
        ({"registrytoken": SECRET + "\t"}, "registrytoken"),
    ],
)
def test_a_bad_entry_names_source_key_and_field_never_the_value(
    entry: dict[str, Any], field: str
) -> None:
    secret = _config({"quay.io": {"auth": _auth("ok", "fine")}, "quay.io/org/app": entry})
    with pytest.raises(InvalidSourceError) as caught:
        AuthFile.parse(secret, "Secret ns/bundle-pull key '.dockerconfigjson'")
    message = str(caught.value)
    assert "Secret ns/bundle-pull key '.dockerconfigjson'" in message
    assert "'quay.io/org/app'" in message
    assert field in message
    assert SECRET not in message
    assert SECRET not in repr(caught.value)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"{not json", "not valid JSON"),
        (b'["quay.io"]', "JSON object"),
        (b'{"auths": ["quay.io"]}', "'auths' must be a map"),
    ],
)
def test_a_malformed_document_names_its_source(data: bytes, words: str) -> None:
    with pytest.raises(InvalidSourceError, match=words) as caught:
        AuthFile.parse(data, "Secret ns/broken")
    assert "Secret ns/broken" in str(caught.value)


def test_no_repr_shows_a_password() -> None:
    auth_file = _file("Secret ns/pull", {"quay.io": ("robot", SECRET)})
    login = auth_file.lookup("quay.io", "org/app")
    assert login is not None
    keyring = Keyring((auth_file,))
    for shown in (login, auth_file, keyring, keyring.candidates("quay.io", "org/app")):
        assert SECRET not in repr(shown)
        assert SECRET not in str(shown)
    assert repr(login) == (
        "Login(source='Secret ns/pull', key='quay.io', username='robot', password=<redacted>)"
    )
    assert repr(auth_file) == "AuthFile(source='Secret ns/pull', keys=['quay.io'])"


_component = st.text("abcz09", min_size=1, max_size=3)


@given(
    repository=st.lists(_component, min_size=1, max_size=5),
    present=st.lists(st.booleans(), min_size=6, max_size=6),
    decoys=st.lists(st.lists(_component, min_size=1, max_size=5), max_size=5),
)
def test_the_longest_namespace_present_wins(
    repository: list[str], present: list[bool], decoys: list[list[str]]
) -> None:
    # Keys: some of the repository's own namespaces (the registry itself is level 0), plus
    # arbitrary other paths; the answer is the deepest namespace present that is a prefix, in
    # whole components, of the repository, whatever else the file holds.
    namespaces = ["/".join(repository[:n]) for n in range(len(repository) + 1)]
    keys = ["/".join(["quay.io", *path]) for path in decoys]
    keys += [f"quay.io/{ns}".rstrip("/") for ns, on in zip(namespaces, present, strict=False) if on]
    auth_file = _file("s", {key: ("u", key) for key in keys})
    repo = "/".join(repository)
    expected = [
        f"quay.io/{ns}".rstrip("/")
        for ns in reversed(namespaces)
        if f"quay.io/{ns}".rstrip("/") in keys
    ]
    login = auth_file.lookup("quay.io", repo)
    if not expected:
        assert login is None
    else:
        assert login is not None
        assert login.key == expected[0]
        assert login.credentials.password == expected[0]
        namespace = login.key.partition("/")[2]
        assert namespace in ("", repo) or repo.startswith(namespace + "/")


_PLACEHOLDER = repr(Login("s", "quay.io", BasicCredentials("u", "x")))


@given(
    password=st.text(
        st.characters(min_codepoint=0x20, max_codepoint=0x2FF, exclude_categories=["Cc", "Cs"]),
        min_size=8,
    )
)
def test_any_password_stays_out_of_reprs(password: str) -> None:
    assume(password not in _PLACEHOLDER)
    logins = Keyring((_file("s", {"quay.io": ("u", password)}),)).candidates("quay.io", "a/b")
    assert [login.credentials.password for login in logins] == [password]
    assert password not in repr(logins)
