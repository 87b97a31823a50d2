"""The mirror policy: registries.conf v2 and OpenShift's mirror sets, to the places a pull tries."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from provisioners.errors import InvalidSourceError, MirrorConfigError, RegistryBlockedError
from provisioners.registries.mirrors import (
    MAX_REGISTRIES_CONF_BYTES,
    Mirror,
    MirrorPolicy,
    PullFrom,
    PullPlace,
    RegistryRule,
    from_mirror_sets,
    parse_registries_conf,
)
from provisioners.registries.reference import ImageReference, parse_reference

DIGEST = "sha256:" + "a" * 64
ETC = "registries.conf /etc/containers/registries.conf"

# The example of containers-registries.conf(5).
MAN_PAGE = """
unqualified-search-registries = ["example.com"]

[[registry]]
prefix = "example.com/foo"
insecure = false
blocked = false
location = "internal-registry-for-example.com/bar"

[[registry.mirror]]
location = "example-mirror-0.local/mirror-for-foo"

[[registry.mirror]]
location = "example-mirror-1.local/mirrors/foo"
insecure = true
"""

# As the machine-config operator renders a disconnected cluster's mirrors (prefix = "").
RENDERED = """
unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""

[[registry]]
  prefix = ""
  location = "registry.redhat.io/redhat"
  blocked = true

  [[registry.mirror]]
    location = "mirror.example.com:5000/redhat"
    pull-from-mirror = "digest-only"

[[registry]]
  prefix = ""
  location = "quay.io/openshift-release-dev/ocp-release"
  mirror-by-digest-only = true

  [[registry.mirror]]
    location = "mirror.example.com:5000/ocp/release"

[[registry]]
  prefix = ""
  location = "registry.access.redhat.com/ubi8"

  [[registry.mirror]]
    location = "mirror.example.com:5000/ubi8"
    pull-from-mirror = "tag-only"
"""

# Wildcards, an exact host inside one, Docker Hub and one of its official images.
HOSTS = """
credential-helpers = ["containers-auth.json"]

[aliases]
"busybox" = "docker.io/library/busybox"

[[registry]]
prefix = "*.example.com"
insecure = true

[[registry.mirror]]
location = "wild-mirror.local/any"

[[registry]]
prefix = "*.b.example.com"

[[registry.mirror]]
location = "b-mirror.local/b"

[[registry]]
prefix = "a.example.com"
location = "a.example.com"

[[registry.mirror]]
location = "exact-mirror.local/a"

[[registry]]
location = "docker.io"

[[registry.mirror]]
location = "mirror.local/hub"

[[registry]]
prefix = "docker.io/library/busybox"
location = "docker.io/library/busybox"

[[registry.mirror]]
location = "mirror.local/busybox-only"
"""

# As oc-mirror v2 writes working-dir/cluster-resources/idms-oc-mirror.yaml.
IDMS_YAML = """
---
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  creationTimestamp: null
  name: idms-operator-0
spec:
  imageDigestMirrors:
  - mirrors:
    - mirror.example.com:5000/redhat
    source: registry.redhat.io/redhat
  - mirrors:
    - mirror.example.com:5000/openshift4
    source: registry.redhat.io/openshift4
status: {}
---
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  creationTimestamp: null
  name: idms-release-0
spec:
  imageDigestMirrors:
  - mirrors:
    - mirror.example.com:5000/openshift/release
    source: quay.io/openshift-release-dev/ocp-v4.0-art-dev
  - mirrors:
    - mirror.example.com:5000/openshift/release-images
    source: quay.io/openshift-release-dev/ocp-release
status: {}
"""

# ... and itms-oc-mirror.yaml.
ITMS_YAML = """
---
apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata:
  creationTimestamp: null
  name: itms-generic-0
spec:
  imageTagMirrors:
  - mirrors:
    - mirror.example.com:5000/ubi9
    source: registry.redhat.io/ubi9
status: {}
"""

ICSP_YAML = """
apiVersion: operator.openshift.io/v1alpha1
kind: ImageContentSourcePolicy
metadata:
  name: operator-0
spec:
  repositoryDigestMirrors:
  - mirrors:
    - mirror.example.com:5000/olm
    source: registry.redhat.io/olm
"""


def _docs(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _texts(policy: MirrorPolicy, reference: str) -> list[str]:
    return [str(place) for place in policy.places(parse_reference(reference))]


def _idms(name: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ImageDigestMirrorSet",
        "metadata": {"name": name},
        "spec": {"imageDigestMirrors": list(entries)},
    }


def _itms(name: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ImageTagMirrorSet",
        "metadata": {"name": name},
        "spec": {"imageTagMirrors": list(entries)},
    }


# -- registries.conf -----------------------------------------------------------------------------


def test_the_man_page_example_tries_mirrors_in_order_then_the_location() -> None:
    policy = parse_registries_conf(MAN_PAGE, ETC)
    places = policy.places(parse_reference("example.com/foo/image:latest"))
    assert places == [
        PullPlace(
            parse_reference("example-mirror-0.local/mirror-for-foo/image:latest"), False, True, ETC
        ),
        PullPlace(
            parse_reference("example-mirror-1.local/mirrors/foo/image:latest"), True, True, ETC
        ),
        PullPlace(
            parse_reference("internal-registry-for-example.com/bar/image:latest"), False, False, ETC
        ),
    ]
    assert str(places[0]) == "example-mirror-0.local/mirror-for-foo/image:latest"
    assert policy.problems == ()


def test_a_reference_no_rule_covers_is_pulled_directly() -> None:
    policy = parse_registries_conf(MAN_PAGE, ETC)
    reference = parse_reference("quay.io/org/app@" + DIGEST)
    assert policy.rule_for(reference) is None
    assert policy.places(reference) == [
        PullPlace(reference, insecure=False, mirror=False, origin="")
    ]
    assert MirrorPolicy().places(reference) == [PullPlace(reference, False, False, "")]


@pytest.mark.parametrize(
    ("reference", "covered"),
    [
        ("example.com/foo", True),
        ("example.com/foo/image", True),
        ("example.com/foo/deep/image:v1", True),
        ("example.com/foobar/image", False),
        ("example.com/fo/image", False),
        ("example.com/image", False),
        ("example.com:5000/foo/image", False),
    ],
)
def test_prefixes_match_whole_path_components(reference: str, covered: bool) -> None:
    policy = parse_registries_conf(MAN_PAGE, ETC)
    assert (policy.rule_for(parse_reference(reference)) is not None) is covered


def test_the_longest_prefix_wins_and_docker_hub_names_keep_library() -> None:
    policy = parse_registries_conf(HOSTS, ETC)
    assert _texts(policy, "nginx") == [
        "mirror.local/hub/library/nginx:latest",
        "docker.io/library/nginx:latest",
    ]
    assert _texts(policy, "docker.io/bitnami/redis:7") == [
        "mirror.local/hub/bitnami/redis:7",
        "docker.io/bitnami/redis:7",
    ]
    assert _texts(policy, "busybox@" + DIGEST) == [
        f"mirror.local/busybox-only@{DIGEST}",
        f"docker.io/library/busybox@{DIGEST}",
    ]


@pytest.mark.parametrize(
    ("reference", "prefix"),
    [
        ("a.example.com/app", "a.example.com"),
        ("c.example.com/app", "*.example.com"),
        ("c.example.com:5000/app", "*.example.com"),
        ("x.a.example.com/app", "*.example.com"),
        ("x.b.example.com/app", "*.b.example.com"),
        ("deep.x.b.example.com/app", "*.b.example.com"),
        ("example.com/app", None),
        ("notexample.com/app", None),
        ("b.example.com.evil.io/app", None),
    ],
)
def test_wildcards_match_subdomain_hosts_and_exact_prefixes_win(
    reference: str, prefix: str | None
) -> None:
    rule = parse_registries_conf(HOSTS, ETC).rule_for(parse_reference(reference))
    assert (rule.prefix if rule else None) == prefix


def test_an_exact_prefix_beats_a_wildcard_of_the_same_length() -> None:
    wildcard = RegistryRule("*.example.com", "", (Mirror("w.local/x"),))
    exact = RegistryRule("a.example.com", "", (Mirror("e.local/x"),))
    for rules in ((wildcard, exact), (exact, wildcard)):
        rule = MirrorPolicy(rules).rule_for(parse_reference("a.example.com/app"))
        assert rule is exact


def test_a_wildcard_keeps_the_name_and_its_mirrors_replace_the_host() -> None:
    policy = parse_registries_conf(HOSTS, ETC)
    places = policy.places(parse_reference("c.example.com:5000/team/app:v2"))
    assert [(str(p), p.insecure, p.mirror) for p in places] == [
        ("wild-mirror.local/any/team/app:v2", False, True),
        ("c.example.com:5000/team/app:v2", True, False),
    ]


def test_digest_only_and_tag_only_mirrors_and_the_blocked_source() -> None:
    policy = parse_registries_conf(RENDERED, ETC)
    assert _texts(policy, f"registry.redhat.io/redhat/redhat-operator-index@{DIGEST}") == [
        f"mirror.example.com:5000/redhat/redhat-operator-index@{DIGEST}"
    ]
    assert _texts(policy, "registry.access.redhat.com/ubi8/ubi:8.9") == [
        "mirror.example.com:5000/ubi8/ubi:8.9",
        "registry.access.redhat.com/ubi8/ubi:8.9",
    ]
    assert _texts(policy, f"registry.access.redhat.com/ubi8/ubi@{DIGEST}") == [
        f"registry.access.redhat.com/ubi8/ubi@{DIGEST}"
    ]


def test_mirror_by_digest_only_keeps_tag_pulls_on_the_source() -> None:
    policy = parse_registries_conf(RENDERED, ETC)
    assert _texts(policy, "quay.io/openshift-release-dev/ocp-release:4.15.0-x86_64") == [
        "quay.io/openshift-release-dev/ocp-release:4.15.0-x86_64"
    ]
    assert _texts(policy, f"quay.io/openshift-release-dev/ocp-release@{DIGEST}") == [
        f"mirror.example.com:5000/ocp/release@{DIGEST}",
        f"quay.io/openshift-release-dev/ocp-release@{DIGEST}",
    ]


def test_a_reference_with_tag_and_digest_is_a_digest_pull_and_keeps_both() -> None:
    policy = parse_registries_conf(RENDERED, ETC)
    (place,) = policy.places(parse_reference(f"registry.redhat.io/redhat/index:v4.15@{DIGEST}"))
    assert (place.reference.tag, place.reference.digest) == ("v4.15", DIGEST)


def test_a_blocked_tag_pull_names_the_rule_and_says_to_pin_a_digest() -> None:
    policy = parse_registries_conf(RENDERED, ETC)
    with pytest.raises(RegistryBlockedError) as caught:
        policy.places(parse_reference("registry.redhat.io/redhat/redhat-operator-index:v4.15"))
    message = str(caught.value)
    assert "registry.redhat.io/redhat/redhat-operator-index:v4.15" in message
    assert f"blocked by {ETC}" in message
    assert "pin the image by digest" in message
    assert "\n" not in message


def test_a_blocked_registry_without_mirrors_says_so() -> None:
    policy = parse_registries_conf('[[registry]]\nlocation = "ghcr.io"\nblocked = true\n', ETC)
    with pytest.raises(RegistryBlockedError, match=r"blocked by .*it has no mirrors"):
        policy.places(parse_reference(f"ghcr.io/org/app@{DIGEST}"))


def test_a_blocked_digest_pull_with_tag_only_mirrors_says_so() -> None:
    rule = RegistryRule(
        "quay.io/org", "", (Mirror("m.local/org", pull_from=PullFrom.TAG_ONLY),), blocked=True
    )
    with pytest.raises(RegistryBlockedError, match="mirrors serve tags only"):
        MirrorPolicy((rule,)).places(parse_reference(f"quay.io/org/app@{DIGEST}"))


def test_a_mirror_that_is_its_own_source_is_dropped_and_reported() -> None:
    conf = """
[[registry]]
prefix = "example.com/foo"
location = "internal.example.net/bar"

[[registry.mirror]]
location = "internal.example.net/bar"

[[registry.mirror]]
location = "mirror.local/foo"
"""
    policy = parse_registries_conf(conf, ETC)
    assert _texts(policy, "example.com/foo/app:1") == [
        "mirror.local/foo/app:1",
        "internal.example.net/bar/app:1",
    ]
    (problem,) = policy.problems
    assert "'internal.example.net/bar'" in problem
    assert "is the source itself" in problem
    assert problem.startswith(ETC)


def test_places_that_rewrite_to_the_same_reference_appear_once() -> None:
    rule = RegistryRule(
        "quay.io/org",
        "",
        (Mirror("m.local/org"), Mirror("m.local/org", insecure=True), Mirror("n.local/org")),
    )
    places = MirrorPolicy((rule,)).places(parse_reference("quay.io/org/app:1"))
    assert [(str(p), p.insecure) for p in places] == [
        ("m.local/org/app:1", False),
        ("n.local/org/app:1", False),
        ("quay.io/org/app:1", False),
    ]


def test_a_hand_built_mirror_back_to_a_blocked_source_is_not_contacted() -> None:
    rule = RegistryRule(
        "quay.io/org", "", (Mirror("quay.io/org"), Mirror("m.local/org")), blocked=True
    )
    assert _texts(MirrorPolicy((rule,)), "quay.io/org/app:1") == ["m.local/org/app:1"]


def test_mirrors_are_never_chained_through_other_rules() -> None:
    conf = """
[[registry]]
location = "quay.io/org"
[[registry.mirror]]
location = "mirror.local/org"

[[registry]]
location = "mirror.local"
blocked = true
[[registry.mirror]]
location = "second.local"
"""
    policy = parse_registries_conf(conf, ETC)
    assert _texts(policy, "quay.io/org/app:1") == ["mirror.local/org/app:1", "quay.io/org/app:1"]


def test_a_location_that_leaves_no_repository_is_a_config_error() -> None:
    conf = '[[registry]]\nprefix = "quay.io/org/app"\nlocation = "mirror.local"\n'
    policy = parse_registries_conf(conf, ETC)
    with pytest.raises(MirrorConfigError, match="leaves no repository"):
        policy.places(parse_reference("quay.io/org/app:1"))


def test_unknown_keys_are_ignored_and_listed_other_settings_silently() -> None:
    conf = """
unqualified-search-registries = ["quay.io"]
short-name-mode = "enforcing"
surprise = 1

[[registry]]
location = "quay.io"
mirrors = ["wrong.local"]

[[registry.mirror]]
location = "m.local/q"
weight = 3
"""
    policy = parse_registries_conf(conf, ETC)
    assert len(policy.problems) == 3
    assert any("'surprise'" in p for p in policy.problems)
    assert any("'mirrors'" in p and "[[registry]] #1" in p for p in policy.problems)
    assert any("'weight'" in p and "mirror #1" in p for p in policy.problems)
    assert _texts(policy, "quay.io/a/b:1") == ["m.local/q/a/b:1", "quay.io/a/b:1"]


def test_an_empty_file_is_an_empty_policy() -> None:
    assert parse_registries_conf(b"", ETC) == MirrorPolicy()


@pytest.mark.parametrize(
    ("conf", "words"),
    [
        ("[[registry]\nlocation = 1", "not valid TOML"),
        ('[[registry]]\nlocation = "quay.io"\ninsecure = "yes"\n', "'insecure' must be a boolean"),
        ('[[registry]]\nlocation = "quay.io"\nblocked = 1\n', "'blocked' must be a boolean"),
        ('[registry]\nlocation = "quay.io"\n', "must be an array of tables"),
        ('[[registry]]\nlocation = "quay.io"\nmirror = "m.local"\n', "'mirror' must be an array"),
        ("[[registry]]\nlocation = 5\n", "'location' must be a string"),
        ('[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\nlocation = 5\n', "string"),
        ("[registries.search]\nregistries = ['quay.io']\n", "version 1 format"),
        (
            "[registries.block]\nregistries = ['x.io']\n[[registry]]\nlocation = 'quay.io'\n",
            "version 1 format",
        ),
        ('[[registry]]\nprefix = "*.example.com/foo"\n', "is not *.domain"),
        ('[[registry]]\nprefix = "ex*.example.com"\n', "invalid host"),
        ('[[registry]]\nprefix = "registry/foo"\nlocation = "quay.io"\n', "no registry host"),
        ('[[registry]]\nprefix = "quay.io/Org"\n', "invalid path component 'Org'"),
        ('[[registry]]\nprefix = "quay.io/org/app:v1"\n', "names a tag or digest"),
        ('[[registry]]\nlocation = "https://quay.io"\n', "has a URL scheme"),
        ('[[registry]]\nlocation = "*.quay.io"\n', "only a prefix"),
        (
            '[[registry]]\nlocation = "quay.io"\n'
            '[[registry.mirror]]\nlocation = "http://m.local"\n',
            "has a URL scheme",
        ),
        ('[[registry]]\nlocation = "quay.io"\n[[registry]]\nprefix = "quay.io"\n', "#1 and #2"),
        (
            '[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\nlocation = "m.local/q"\n'
            'pull-from-mirror = "sometimes"\n',
            "'pull-from-mirror' is 'sometimes'; it must be one of 'all', 'digest-only', 'tag-only'",
        ),
        (
            '[[registry]]\nlocation = "quay.io"\npull-from-mirror = "digest-only"\n',
            "belongs in a [[registry.mirror]]",
        ),
        (
            '[[registry]]\nlocation = "quay.io"\nmirror-by-digest-only = true\n'
            '[[registry.mirror]]\nlocation = "m.local/q"\npull-from-mirror = "all"\n',
            "use one or the other",
        ),
        ("[[registry]]\ninsecure = true\n", "needs a 'prefix' or a 'location'"),
        ('[[registry]]\nlocation = "quay.io"\n[[registry.mirror]]\ninsecure = true\n', "required"),
    ],
)
def test_malformed_files_are_refused_in_one_line_naming_the_file(conf: str, words: str) -> None:
    with pytest.raises(MirrorConfigError) as caught:
        parse_registries_conf(conf, ETC)
    message = str(caught.value)
    assert words in message
    assert message.startswith(ETC)
    assert "\n" not in message
    assert isinstance(caught.value, InvalidSourceError)


def test_an_oversized_or_binary_file_is_refused() -> None:
    big = b"# " + b"x" * MAX_REGISTRIES_CONF_BYTES
    with pytest.raises(MirrorConfigError, match="more than the 1048576"):
        parse_registries_conf(big, ETC)
    with pytest.raises(MirrorConfigError, match="more than the 1048576"):
        parse_registries_conf(big.decode(), ETC)
    with pytest.raises(MirrorConfigError, match="not UTF-8"):
        parse_registries_conf(b"\xff\xfe[[registry]]", ETC)


def test_a_trailing_slash_on_a_location_is_dropped() -> None:
    policy = parse_registries_conf(
        '[[registry]]\nlocation = "quay.io/org/"\n[[registry.mirror]]\nlocation = "m.local/o/"\n',
        ETC,
    )
    assert _texts(policy, "quay.io/org/app:1") == ["m.local/o/app:1", "quay.io/org/app:1"]


# -- OpenShift's mirror sets ---------------------------------------------------------------------


def test_oc_mirror_digest_and_tag_sets() -> None:
    policy = from_mirror_sets(digest_sets=_docs(IDMS_YAML), tag_sets=_docs(ITMS_YAML))
    assert policy.problems == ()
    index = f"registry.redhat.io/redhat/redhat-operator-index@{DIGEST}"
    places = policy.places(parse_reference(index))
    assert [(str(p), p.mirror, p.origin) for p in places] == [
        (
            f"mirror.example.com:5000/redhat/redhat-operator-index@{DIGEST}",
            True,
            "ImageDigestMirrorSet idms-operator-0",
        ),
        (index, False, "ImageDigestMirrorSet idms-operator-0"),
    ]
    # An IDMS does not mirror tag pulls; an ITMS does not mirror digest pulls.
    assert _texts(policy, "registry.redhat.io/redhat/redhat-operator-index:v4.15") == [
        "registry.redhat.io/redhat/redhat-operator-index:v4.15"
    ]
    assert _texts(policy, "registry.redhat.io/ubi9/ubi:latest") == [
        "mirror.example.com:5000/ubi9/ubi:latest",
        "registry.redhat.io/ubi9/ubi:latest",
    ]
    assert _texts(policy, f"registry.redhat.io/ubi9/ubi@{DIGEST}") == [
        f"registry.redhat.io/ubi9/ubi@{DIGEST}"
    ]
    assert _texts(policy, f"quay.io/openshift-release-dev/ocp-release@{DIGEST}")[0] == (
        f"mirror.example.com:5000/openshift/release-images@{DIGEST}"
    )


def test_never_contact_source_serves_from_mirrors_only() -> None:
    idms = _idms(
        "idms-never",
        {
            "source": "registry.redhat.io/redhat",
            "mirrors": ["mirror.example.com:5000/redhat"],
            "mirrorSourcePolicy": "NeverContactSource",
        },
    )
    policy = from_mirror_sets(digest_sets=[idms])
    assert _texts(policy, f"registry.redhat.io/redhat/index@{DIGEST}") == [
        f"mirror.example.com:5000/redhat/index@{DIGEST}"
    ]
    with pytest.raises(RegistryBlockedError) as caught:
        policy.places(parse_reference("registry.redhat.io/redhat/index:v4.15"))
    assert "blocked by ImageDigestMirrorSet idms-never" in str(caught.value)
    assert "pin the image by digest" in str(caught.value)


def test_a_tag_set_serves_tags_of_a_source_a_digest_set_blocks() -> None:
    idms = _idms(
        "idms-never",
        {
            "source": "registry.redhat.io/redhat",
            "mirrors": ["mirror.example.com:5000/redhat"],
            "mirrorSourcePolicy": "NeverContactSource",
        },
    )
    itms = _itms(
        "itms-tags",
        {"source": "registry.redhat.io/redhat", "mirrors": ["tags.example.com/redhat"]},
    )
    policy = from_mirror_sets(digest_sets=[idms], tag_sets=[itms])
    assert _texts(policy, "registry.redhat.io/redhat/index:v4.15") == [
        "tags.example.com/redhat/index:v4.15"
    ]
    (rule,) = policy.rules
    assert rule.origin == "ImageDigestMirrorSet idms-never, ImageTagMirrorSet itms-tags"


def test_an_image_content_source_policy_is_a_digest_set_that_allows_the_source() -> None:
    policy = from_mirror_sets(content_source_policies=_docs(ICSP_YAML))
    assert _texts(policy, f"registry.redhat.io/olm/catalog@{DIGEST}") == [
        f"mirror.example.com:5000/olm/catalog@{DIGEST}",
        f"registry.redhat.io/olm/catalog@{DIGEST}",
    ]
    assert _texts(policy, "registry.redhat.io/olm/catalog:v1") == [
        "registry.redhat.io/olm/catalog:v1"
    ]
    (place, _) = policy.places(parse_reference(f"registry.redhat.io/olm/catalog@{DIGEST}"))
    assert place.origin == "ImageContentSourcePolicy operator-0"


def test_a_wildcard_source_replaces_the_host() -> None:
    idms = _idms("wild", {"source": "*.redhat.io", "mirrors": ["mirror.local/redhat"]})
    policy = from_mirror_sets(digest_sets=[idms])
    assert _texts(policy, f"registry.redhat.io/product/repo@{DIGEST}") == [
        f"mirror.local/redhat/product/repo@{DIGEST}",
        f"registry.redhat.io/product/repo@{DIGEST}",
    ]


def test_sets_for_one_source_merge_in_order_without_duplicates() -> None:
    first = _idms("a", {"source": "quay.io/org", "mirrors": ["m1.local/org", "m2.local/org"]})
    second = _idms("b", {"source": "quay.io/org", "mirrors": ["m2.local/org", "m3.local/org"]})
    policy = from_mirror_sets(digest_sets=[first, second])
    assert _texts(policy, f"quay.io/org/app@{DIGEST}") == [
        f"m1.local/org/app@{DIGEST}",
        f"m2.local/org/app@{DIGEST}",
        f"m3.local/org/app@{DIGEST}",
        f"quay.io/org/app@{DIGEST}",
    ]
    (rule,) = policy.rules
    assert len(rule.mirrors) == 3


def test_a_set_mirror_that_is_its_source_is_dropped_and_reported() -> None:
    idms = _idms("self", {"source": "quay.io/org", "mirrors": ["quay.io/org", "m.local/org"]})
    policy = from_mirror_sets(digest_sets=[idms])
    assert _texts(policy, f"quay.io/org/app@{DIGEST}") == [
        f"m.local/org/app@{DIGEST}",
        f"quay.io/org/app@{DIGEST}",
    ]
    (problem,) = policy.problems
    assert problem.startswith("ImageDigestMirrorSet self: mirror 'quay.io/org'")


def test_an_entry_without_mirrors_changes_nothing() -> None:
    policy = from_mirror_sets(digest_sets=[_idms("empty", {"source": "quay.io/org"})])
    assert policy == MirrorPolicy()


def test_a_malformed_object_is_skipped_with_a_problem_and_the_others_apply() -> None:
    good = _docs(IDMS_YAML)
    bad_source = _idms("bad-source", {"source": "Quay.io/Org", "mirrors": ["m.local/x"]})
    bad_mirror = _idms("bad-mirror", {"source": "quay.io/x", "mirrors": ["https://m.local/x"]})
    bad_policy = _idms(
        "bad-policy",
        {"source": "quay.io/y", "mirrors": ["m.local/y"], "mirrorSourcePolicy": "Sometimes"},
    )
    never_alone = _idms(
        "never-alone", {"source": "quay.io/z", "mirrorSourcePolicy": "NeverContactSource"}
    )
    no_spec: dict[str, Any] = {"kind": "ImageDigestMirrorSet", "metadata": {"name": "no-spec"}}
    wrong_kind = {**_itms("tagged", {"source": "quay.io/w", "mirrors": ["m.local/w"]})}
    not_a_list = _itms("not-a-list", {"source": "quay.io/v", "mirrors": "m.local/v"})
    policy = from_mirror_sets(
        digest_sets=[*good, bad_source, bad_mirror, bad_policy, never_alone, no_spec, wrong_kind],
        tag_sets=[not_a_list],
    )
    problems = "\n".join(policy.problems)
    assert len(policy.problems) == 7
    for expected in (
        "ImageDigestMirrorSet bad-source: spec.imageDigestMirrors[0].source: 'Quay.io/Org'",
        "ImageDigestMirrorSet bad-mirror: spec.imageDigestMirrors[0].mirrors[0]: "
        "'https://m.local/x' has a URL scheme",
        "ImageDigestMirrorSet bad-policy: spec.imageDigestMirrors[0].mirrorSourcePolicy: "
        "'Sometimes'",
        "ImageDigestMirrorSet never-alone: spec.imageDigestMirrors[0]: mirrorSourcePolicy "
        "NeverContactSource needs at least one mirror",
        "ImageDigestMirrorSet no-spec: spec: missing",
        "ImageDigestMirrorSet tagged: kind: 'ImageTagMirrorSet'",
        "ImageTagMirrorSet not-a-list: spec.imageTagMirrors[0].mirrors: must be a list",
    ):
        assert expected in problems
    assert all(p.endswith("the object is ignored") for p in policy.problems)
    # The good objects still apply; the bad ones add nothing.
    assert {rule.prefix for rule in policy.rules} == {
        "registry.redhat.io/redhat",
        "registry.redhat.io/openshift4",
        "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
        "quay.io/openshift-release-dev/ocp-release",
    }


def test_an_object_that_is_not_a_mapping_or_has_no_name_is_a_problem() -> None:
    unnamed = {"kind": "ImageTagMirrorSet", "spec": {"imageTagMirrors": []}}
    policy = from_mirror_sets(tag_sets=[unnamed, "text"])  # type: ignore[list-item]
    assert policy.problems == (
        "ImageTagMirrorSet <unnamed>: metadata.name: missing; the object is ignored",
        "ImageTagMirrorSet <unnamed>: the object is not a mapping; the object is ignored",
    )


# -- merging the file with the cluster's objects -------------------------------------------------


def test_merge_of_a_file_and_objects_concatenates_mirrors_and_blocks_if_either_blocks() -> None:
    conf = """
[[registry]]
location = "registry.redhat.io/redhat"
[[registry.mirror]]
location = "file-mirror.local/redhat"
"""
    idms = _idms(
        "idms-never",
        {
            "source": "registry.redhat.io/redhat",
            "mirrors": ["file-mirror.local/redhat", "mirror.example.com:5000/redhat"],
            "mirrorSourcePolicy": "NeverContactSource",
        },
    )
    policy = MirrorPolicy.merge(
        parse_registries_conf(conf, ETC), from_mirror_sets(digest_sets=[idms])
    )
    (rule,) = policy.rules
    assert rule.blocked
    assert rule.origin == f"{ETC}, ImageDigestMirrorSet idms-never"
    assert _texts(policy, f"registry.redhat.io/redhat/index@{DIGEST}") == [
        f"file-mirror.local/redhat/index@{DIGEST}",
        f"mirror.example.com:5000/redhat/index@{DIGEST}",
    ]
    assert _texts(policy, "registry.redhat.io/redhat/index:v1") == [
        "file-mirror.local/redhat/index:v1"
    ]


def test_merge_keeps_mirror_by_digest_only_to_the_mirrors_it_was_written_for() -> None:
    conf = """
[[registry]]
location = "quay.io/org"
mirror-by-digest-only = true
[[registry.mirror]]
location = "digests.local/org"
"""
    itms = _itms("tags", {"source": "quay.io/org", "mirrors": ["tags.local/org"]})
    policy = MirrorPolicy.merge(parse_registries_conf(conf, ETC), from_mirror_sets(tag_sets=[itms]))
    assert _texts(policy, "quay.io/org/app:1") == ["tags.local/org/app:1", "quay.io/org/app:1"]
    assert _texts(policy, f"quay.io/org/app@{DIGEST}") == [
        f"digests.local/org/app@{DIGEST}",
        f"quay.io/org/app@{DIGEST}",
    ]


def test_merge_keeps_the_first_location_and_reports_a_conflict_and_earlier_problems() -> None:
    file_policy = parse_registries_conf(
        '[[registry]]\nprefix = "quay.io/org"\nlocation = "internal.local/org"\nodd = 1\n', ETC
    )
    objects = from_mirror_sets(
        digest_sets=[_idms("a", {"source": "quay.io/org", "mirrors": ["m.local/org"]})]
    )
    policy = MirrorPolicy.merge(file_policy, objects)
    assert _texts(policy, f"quay.io/org/app@{DIGEST}") == [
        f"m.local/org/app@{DIGEST}",
        f"internal.local/org/app@{DIGEST}",
    ]
    assert len(policy.problems) == 2
    assert "'odd'" in policy.problems[0]
    assert "the first is used" in policy.problems[1]
    assert MirrorPolicy.merge() == MirrorPolicy()


# -- properties ----------------------------------------------------------------------------------

_PREFIXES = st.sampled_from(
    [
        "quay.io",
        "quay.io/org",
        "quay.io/org/app",
        "registry.redhat.io/redhat",
        "*.redhat.io",
        "*.example.com",
        "a.example.com",
        "docker.io",
        "docker.io/library",
        "localhost:5000/ns",
    ]
)
_MIRRORS = st.builds(
    Mirror,
    location=st.sampled_from(["m1.local/x", "m2.local:5000/y/z", "quay.io/org", "m3.local/q"]),
    insecure=st.booleans(),
    pull_from=st.sampled_from(list(PullFrom)),
)
_RULES = st.builds(
    RegistryRule,
    prefix=_PREFIXES,
    location=st.sampled_from(["", "internal.local/src"]),
    mirrors=st.lists(_MIRRORS, max_size=4).map(tuple),
    blocked=st.booleans(),
    insecure=st.booleans(),
    mirror_by_digest_only=st.booleans(),
    origin=st.sampled_from(["", "registries.conf x", "ImageDigestMirrorSet y"]),
)
_NAMES = st.builds(
    "{}/{}".format,
    st.sampled_from(
        ["quay.io", "registry.redhat.io", "a.example.com", "b.a.example.com", "docker.io"]
    ),
    st.lists(
        st.sampled_from(["org", "app", "redhat", "library", "x-y"]), min_size=1, max_size=3
    ).map("/".join),
)


def _check(policy: MirrorPolicy, reference: ImageReference) -> list[PullPlace]:
    rule = policy.rule_for(reference)
    try:
        places = policy.places(reference)
    except RegistryBlockedError:
        assert rule is not None
        assert rule.blocked
        return []
    texts = [str(p) for p in places]
    assert len(texts) == len(set(texts))
    sources = [p for p in places if not p.mirror]
    assert len(sources) <= 1
    assert all(not p.mirror for p in places[len(places) - len(sources) :])
    if rule is None:
        assert places == [PullPlace(reference, False, False, "")]
    elif rule.blocked:
        assert not sources
        blocked = MirrorPolicy((replace(rule, blocked=False, mirrors=()),)).places(reference)
        assert str(blocked[0]) not in texts
    return places


@settings(max_examples=300, deadline=None)
@given(rules=st.lists(_RULES, max_size=5), name=_NAMES)
def test_every_place_of_a_digest_reference_keeps_the_digest_and_none_is_blocked(
    rules: list[RegistryRule], name: str
) -> None:
    policy = MirrorPolicy(rules=tuple(rules))  # as built by hand: duplicates, self mirrors
    reference = parse_reference(f"{name}@{DIGEST}")
    for place in _check(policy, reference):
        assert place.reference.digest == DIGEST
        assert place.reference.tag is None


@settings(max_examples=300, deadline=None)
@given(rules=st.lists(_RULES, max_size=5), name=_NAMES)
def test_every_place_of_a_tag_reference_keeps_the_tag_and_skips_digest_only_mirrors(
    rules: list[RegistryRule], name: str
) -> None:
    policy = MirrorPolicy.merge(MirrorPolicy(rules=tuple(rules)))
    reference = parse_reference(f"{name}:v1.2")
    places = _check(policy, reference)
    rule = policy.rule_for(reference)
    for place in places:
        assert (place.reference.tag, place.reference.digest) == ("v1.2", None)
    if rule is not None and (
        rule.mirror_by_digest_only or all(m.pull_from is PullFrom.DIGEST_ONLY for m in rule.mirrors)
    ):
        assert all(not p.mirror for p in places)
