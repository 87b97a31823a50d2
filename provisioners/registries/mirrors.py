"""Where an image may be pulled from: registry mirrors, as containers/image and OpenShift say.

A disconnected cluster cannot reach ``registry.redhat.io``; its images are copied to a registry
inside (``mirror.example.com:5000/redhat``) and every pull is redirected there. The node's
runtimes read the redirection from ``registries.conf`` (containers-registries.conf(5), version 2);
an OpenShift cluster declares it as ``ImageDigestMirrorSet`` / ``ImageTagMirrorSet`` objects (and
the older ``ImageContentSourcePolicy``), which the machine-config operator renders into that file.
pivoter pulls catalogs and bundles itself, so it reads the same declarations and honours them the
same way, or a catalog that the nodes can run would be one pivoter cannot fetch.

A :class:`MirrorPolicy` holds :class:`RegistryRule` s (one ``[[registry]]`` table each) and
answers one question, :meth:`MirrorPolicy.places`: the ordered places to try for a reference.

- The rule whose ``prefix`` matches ``registry/repository`` longest applies, whole path
  components only (``example.com/foo`` covers ``example.com/foo/bar``, not
  ``example.com/foobar``); an exact prefix beats a ``*.example.com`` wildcard, which matches any
  subdomain's host (any port), never ``example.com`` itself. Matching uses the normalized name,
  so Docker Hub's official images are ``docker.io/library/<name>``, as upstream documents.
- The matched part of the name is replaced by each mirror's location (then by the rule's own
  location), keeping the tag and digest; the result is parsed again so it is a valid reference.
- Mirrors come first, in order, and only those that serve this kind of reference: a
  digest reference uses ``all`` and ``digest-only`` mirrors; a tag reference uses ``all`` and
  ``tag-only`` mirrors, and none when the rule is ``mirror-by-digest-only``. The source location
  comes last unless the rule is ``blocked``. Mirrors are never looked up again in the rules.
- When nothing is left, :class:`~provisioners.errors.RegistryBlockedError` names the rule's
  origin and why no mirror applies, so the message says what to change.

OpenShift's objects become rules as the machine-config operator renders them
(openshift/runtime-utils): an ImageDigestMirrorSet's mirrors are ``digest-only``, an
ImageTagMirrorSet's ``tag-only``, an ImageContentSourcePolicy's ``digest-only``;
``mirrorSourcePolicy: NeverContactSource`` blocks the source while its mirrors still serve, and
entries for the same source merge (mirrors concatenated in order, duplicates dropped, blocked if
any blocks). One malformed object is skipped and described in :attr:`MirrorPolicy.problems`; the
others still apply, as one bad object must not take every pull of a cluster down with it. A
malformed registries.conf, in contrast, is refused whole (:class:`~provisioners.errors.
MirrorConfigError`): it is one file an administrator edits, and half of it is a policy nobody
wrote.

Pure: the caller reads the file or lists the objects and passes bytes or dicts.
"""

from __future__ import annotations

import contextlib
import enum
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from provisioners.errors import InvalidSourceError, MirrorConfigError, RegistryBlockedError
from provisioners.registries.reference import ImageReference, parse_reference

__all__ = [
    "MAX_REGISTRIES_CONF_BYTES",
    "Mirror",
    "MirrorPolicy",
    "PullFrom",
    "PullPlace",
    "RegistryRule",
    "from_mirror_sets",
    "parse_registries_conf",
]

MAX_REGISTRIES_CONF_BYTES = 1024 * 1024
"""A registries.conf larger than this is refused: real ones are a few kilobytes."""

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = re.compile(rf"^(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:]+\])(?::[0-9]+)?\Z")
_WILDCARD = re.compile(rf"^\*(?:\.{_LABEL})+\Z")
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
# Each ends in \Z, not $: a $ also matches before a final newline.

_NO_ORIGIN = "the mirror policy"
"""How a message names a rule built without an origin (tests, direct construction)."""

_GLOBAL_KEYS = frozenset(
    {
        "registry",
        "unqualified-search-registries",
        "short-name-mode",
        "credential-helpers",
        "additional-layer-store-auth-helper",
        "aliases",
    }
)
"""Top-level keys of a v2 file; all but ``registry`` concern other things than mirrors."""
_REGISTRY_KEYS = frozenset(
    {"prefix", "location", "insecure", "blocked", "mirror-by-digest-only", "mirror"}
)
_MIRROR_KEYS = frozenset({"location", "insecure", "pull-from-mirror"})


class PullFrom(enum.Enum):
    """Which references a mirror serves (``pull-from-mirror`` of registries.conf)."""

    ALL = "all"
    DIGEST_ONLY = "digest-only"
    TAG_ONLY = "tag-only"

    def serves(self, *, digest: bool) -> bool:
        """Whether a mirror of this kind may serve a digest (or, if not ``digest``, a tag) pull."""
        if digest:
            return self is not PullFrom.TAG_ONLY
        return self is not PullFrom.DIGEST_ONLY


@dataclass(frozen=True)
class Mirror:
    """One mirror of a rule: ``location`` is ``host[:port][/path]`` and replaces the prefix."""

    location: str
    insecure: bool = False
    pull_from: PullFrom = PullFrom.ALL


@dataclass(frozen=True)
class RegistryRule:
    """One ``[[registry]]`` table: where names under ``prefix`` are, and what mirrors them."""

    prefix: str
    """``host[:port][/path]``, or ``*.domain`` for every subdomain's host."""
    location: str
    """Where the prefix really is; "" means the prefix itself (as written, for a wildcard)."""
    mirrors: tuple[Mirror, ...] = ()
    blocked: bool = False
    """Never contact ``location``; the mirrors still serve."""
    insecure: bool = False
    mirror_by_digest_only: bool = False
    origin: str = ""
    """Who declared it, for messages: ``registries.conf /etc/x.conf``,
    ``ImageDigestMirrorSet foo`` (several, comma-separated, after a merge)."""

    @property
    def wildcard(self) -> bool:
        """Whether the prefix is ``*.domain``."""
        return self.prefix.startswith("*.")

    @property
    def source(self) -> str:
        """The location of the source itself ("" for a wildcard rule that keeps the name)."""
        if self.location:
            return self.location
        return "" if self.wildcard else self.prefix

    def matched_length(self, name: str, host: str) -> int:
        """How many leading characters of ``name`` (``registry/repository``) this rule's prefix
        covers, or -1 when it does not match; ``host`` is the registry without its port."""
        if self.wildcard:
            return len(name.split("/", 1)[0]) if host.endswith(self.prefix[1:]) else -1
        if name == self.prefix or name.startswith(self.prefix + "/"):
            return len(self.prefix)
        return -1

    def uses(self, mirror: Mirror, *, digest: bool) -> bool:
        """Whether ``mirror`` may serve a digest (or, if not ``digest``, a tag) reference."""
        if not digest and self.mirror_by_digest_only:
            return False
        return mirror.pull_from.serves(digest=digest)


@dataclass(frozen=True)
class PullPlace:
    """One place to try for a reference: the reference rewritten to it, and how to reach it."""

    reference: ImageReference
    insecure: bool
    """Plain http or an unverified certificate may be used here."""
    mirror: bool
    """False: the source location itself."""
    origin: str
    """The rule that made it ("" for a direct pull)."""

    def __str__(self) -> str:
        return str(self.reference)


@dataclass(frozen=True)
class MirrorPolicy:
    """The rules that redirect pulls, and the configuration problems met while building them."""

    rules: tuple[RegistryRule, ...] = ()
    problems: tuple[str, ...] = ()
    """One line each, for status and Events: a mirror that is its own source, a skipped object,
    an ignored key."""

    def rule_for(self, reference: ImageReference) -> RegistryRule | None:
        """The rule that applies to ``reference``: the longest exact prefix, else the longest
        wildcard, else None (the first rule wins a tie, as in containers/image)."""
        name = f"{reference.registry}/{reference.repository}"
        host = _hostname(reference.registry)
        best: RegistryRule | None = None
        best_rank = (False, -1)
        for rule in self.rules:
            if rule.matched_length(name, host) < 0:
                continue
            rank = (not rule.wildcard, len(rule.prefix))
            if rank > best_rank:
                best, best_rank = rule, rank
        return best

    def places(self, reference: ImageReference) -> list[PullPlace]:
        """The places to try for ``reference``, in order (see the module docstring).

        Raises :class:`~provisioners.errors.RegistryBlockedError` when the rule blocks the source
        and no mirror serves this kind of reference, and :class:`~provisioners.errors.
        MirrorConfigError` when a location makes the reference invalid.
        """
        rule = self.rule_for(reference)
        if rule is None:
            return [PullPlace(reference, insecure=False, mirror=False, origin="")]
        digest = reference.digest is not None
        places: list[PullPlace] = []
        seen: set[str] = set()
        if rule.blocked:
            # A mirror that leads back to the blocked source (possible in a rule built by hand;
            # the parsers drop such mirrors) must not contact it.
            with contextlib.suppress(MirrorConfigError):
                seen.add(str(_rewrite(reference, rule, rule.source)))

        def add(location: str, *, insecure: bool, mirror: bool) -> None:
            rewritten = _rewrite(reference, rule, location)
            key = str(rewritten)
            if key not in seen:
                seen.add(key)
                places.append(PullPlace(rewritten, insecure, mirror, rule.origin))

        for mirror in rule.mirrors:
            if rule.uses(mirror, digest=digest):
                add(mirror.location, insecure=mirror.insecure, mirror=True)
        if not rule.blocked:
            add(rule.source, insecure=rule.insecure, mirror=False)
        if not places:
            raise RegistryBlockedError(
                f"cannot pull {reference}: its registry ({rule.prefix}) is blocked by "
                f"{rule.origin or _NO_ORIGIN} and {_why_no_mirror(rule, digest=digest)}"
            )
        return places

    @staticmethod
    def merge(*policies: MirrorPolicy) -> MirrorPolicy:
        """One policy from several (the file and the cluster's objects): rules with the same
        prefix merge, mirrors concatenated in order with duplicates dropped, blocked if any
        blocks; the first location wins a conflict, which is reported in ``problems``."""
        problems: list[str] = []
        for policy in policies:
            problems.extend(policy.problems)
        rules = [rule for policy in policies for rule in policy.rules]
        return _assemble(rules, problems)


def _hostname(registry: str) -> str:
    """The registry without its port ("" for a bracketed IPv6 address, which no wildcard
    matches)."""
    if registry.startswith("["):
        return ""
    return registry.split(":", 1)[0]


def _rewrite(reference: ImageReference, rule: RegistryRule, location: str) -> ImageReference:
    """``reference`` with the part the rule's prefix matched replaced by ``location``."""
    if not location:
        return reference  # a wildcard rule without a location keeps the name as it is
    name = f"{reference.registry}/{reference.repository}"
    rest = name[rule.matched_length(name, _hostname(reference.registry)) :]
    if "/" not in location and not rest:
        raise MirrorConfigError(
            f"{rule.origin or _NO_ORIGIN}: rewriting {reference} to {location!r} "
            "leaves no repository; give the location a path or make the prefix shorter"
        )
    text = location + rest
    if reference.tag:
        text += f":{reference.tag}"
    if reference.digest:
        text += f"@{reference.digest}"
    try:
        rewritten = parse_reference(text)
    except InvalidSourceError as exc:
        raise MirrorConfigError(
            f"{rule.origin or _NO_ORIGIN}: rewriting {reference} to {location!r} gives an "
            f"invalid reference: {exc}"
        ) from exc
    if rewritten.registry != location.split("/", 1)[0]:
        raise MirrorConfigError(
            f"{rule.origin or _NO_ORIGIN}: rewriting {reference} to {location!r} gives "
            f"{text!r}, which does not name a registry host"
        )
    return rewritten


def _why_no_mirror(rule: RegistryRule, *, digest: bool) -> str:
    if not rule.mirrors:
        return "it has no mirrors"
    if digest:
        return (
            'its mirrors serve tags only (ImageTagMirrorSet or pull-from-mirror = "tag-only"); '
            "refer to the image by tag or add a mirror that serves digests"
        )
    return "its mirrors serve digests only; pin the image by digest"


# -- building and merging rules ------------------------------------------------------------------


def _without_self_mirrors(rule: RegistryRule, problems: list[str]) -> RegistryRule:
    """``rule`` without mirrors that point back at its own source, or that repeat one."""
    kept: list[Mirror] = []
    for mirror in rule.mirrors:
        if rule.source and mirror.location == rule.source:
            problems.append(
                f"{rule.origin or _NO_ORIGIN}: mirror {mirror.location!r} of "
                f"{rule.prefix!r} is the source itself and is dropped (the source is tried after "
                "the mirrors unless it is blocked)"
            )
        elif mirror not in kept:
            kept.append(mirror)
    return rule if len(kept) == len(rule.mirrors) else replace(rule, mirrors=tuple(kept))


def _digest_only_mirrors(rule: RegistryRule) -> tuple[Mirror, ...]:
    """The rule's mirrors with ``mirror-by-digest-only`` moved onto each of them, so that a
    merge with a rule without it keeps the meaning of both."""
    if not rule.mirror_by_digest_only:
        return rule.mirrors
    return tuple(
        replace(m, pull_from=PullFrom.DIGEST_ONLY)
        for m in rule.mirrors
        if m.pull_from is not PullFrom.TAG_ONLY
    )


def _merge_two(first: RegistryRule, second: RegistryRule, problems: list[str]) -> RegistryRule:
    if first.source != second.source:
        problems.append(
            f"prefix {first.prefix!r}: {second.origin or _NO_ORIGIN} says its location is "
            f"{second.source or 'the name itself'!r}, {first.origin or _NO_ORIGIN} says "
            f"{first.source or 'the name itself'!r}; the first is used"
        )
    both_digest_only = first.mirror_by_digest_only and second.mirror_by_digest_only
    if both_digest_only:
        mirrors = first.mirrors + second.mirrors
    else:
        mirrors = _digest_only_mirrors(first) + _digest_only_mirrors(second)
    origins = [o for o in (*first.origin.split(", "), *second.origin.split(", ")) if o]
    return replace(
        first,
        mirrors=tuple(dict.fromkeys(mirrors)),
        blocked=first.blocked or second.blocked,
        insecure=first.insecure or second.insecure,
        mirror_by_digest_only=both_digest_only,
        origin=", ".join(dict.fromkeys(origins)),
    )


def _assemble(rules: Iterable[RegistryRule], problems: list[str]) -> MirrorPolicy:
    """A policy of ``rules``, those of one prefix merged in order, mirrors that are their own
    source dropped; every problem met is added to ``problems``."""
    by_prefix: dict[str, RegistryRule] = {}
    for rule in rules:
        earlier = by_prefix.get(rule.prefix)
        by_prefix[rule.prefix] = rule if earlier is None else _merge_two(earlier, rule, problems)
    merged = tuple(_without_self_mirrors(rule, problems) for rule in by_prefix.values())
    return MirrorPolicy(rules=merged, problems=tuple(dict.fromkeys(problems)))


def _scope_problem(text: str, *, wildcard: bool) -> str | None:
    """Why ``text`` is not ``host[:port][/path]`` (or, if ``wildcard``, ``*.domain``), or None."""
    if not text:
        return "is empty"
    if "://" in text:
        return "has a URL scheme; write host[:port][/path]"
    if text.startswith("*"):
        if not wildcard:
            return "is a wildcard, which only a prefix (source) may be"
        if _WILDCARD.match(text) is None:
            return "is not *.domain (a wildcard has no port, path or other '*')"
        return None
    host, _, path = text.partition("/")
    if _HOST.match(host) is None:
        return f"has an invalid host {host!r}"
    if not ("." in host or ":" in host or host == "localhost" or host.startswith("[")):
        return (
            f"starts with {host!r}, which is no registry host (a name with a dot or a port, "
            "or localhost); image names without one are docker.io's"
        )
    for component in path.split("/") if path else ():
        if "@" in component or ":" in component:
            return "names a tag or digest; write host[:port][/path]"
        if _COMPONENT.match(component) is None:
            return (
                f"has an invalid path component {component!r} (lowercase letters, digits and "
                "separators)"
            )
    return None


def _scope(text: str, where: str, *, wildcard: bool) -> str:
    """``text`` without trailing slashes, or a :class:`MirrorConfigError` naming ``where``."""
    trimmed = text.rstrip("/")
    problem = _scope_problem(trimmed, wildcard=wildcard)
    if problem is not None:
        raise MirrorConfigError(f"{where} {text!r} {problem}")
    return trimmed


# -- registries.conf -----------------------------------------------------------------------------


def _typed(table: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = table.get(key)
    if value is not None and not isinstance(value, kind):
        raise MirrorConfigError(
            f"{where}: {key!r} must be {_TYPE_WORDS[kind]}, not {type(value).__name__}"
        )
    return value


_TYPE_WORDS: dict[type, str] = {
    str: "a string",
    bool: "a boolean (true or false)",
    list: "an array of tables",
}


def _conf_mirror(table: object, where: str, *, digest_only: bool, problems: list[str]) -> Mirror:
    if not isinstance(table, dict):
        raise MirrorConfigError(f"{where}: must be a table ([[registry.mirror]])")
    for key in sorted(set(table) - _MIRROR_KEYS):
        problems.append(f"{where}: unknown key {key!r} ignored")
    location = _typed(table, "location", str, where)
    if location is None:
        raise MirrorConfigError(f"{where}: 'location' is required")
    location = _scope(location, f"{where}: location", wildcard=False)
    pull_from_text = _typed(table, "pull-from-mirror", str, where) or ""
    if pull_from_text and digest_only:
        raise MirrorConfigError(
            f"{where}: 'pull-from-mirror' cannot be set when the registry sets "
            "'mirror-by-digest-only'; use one or the other"
        )
    try:
        pull_from = PullFrom(pull_from_text) if pull_from_text else PullFrom.ALL
    except ValueError:
        raise MirrorConfigError(
            f"{where}: 'pull-from-mirror' is {pull_from_text!r}; it must be one of "
            + ", ".join(repr(p.value) for p in PullFrom)
        ) from None
    insecure = bool(_typed(table, "insecure", bool, where))
    return Mirror(location=location, insecure=insecure, pull_from=pull_from)


def _conf_rule(table: object, where: str, origin: str, problems: list[str]) -> RegistryRule:
    if not isinstance(table, dict):
        raise MirrorConfigError(f"{where}: must be a table ([[registry]])")
    if "pull-from-mirror" in table:
        raise MirrorConfigError(
            f"{where}: 'pull-from-mirror' belongs in a [[registry.mirror]] table, not in "
            "[[registry]]"
        )
    for key in sorted(set(table) - _REGISTRY_KEYS):
        problems.append(f"{where}: unknown key {key!r} ignored")
    prefix_text = _typed(table, "prefix", str, where)
    location_text = _typed(table, "location", str, where)
    if not prefix_text and not location_text:
        raise MirrorConfigError(f"{where}: needs a 'prefix' or a 'location'")
    location = ""
    if location_text:
        location = _scope(location_text, f"{where}: location", wildcard=False)
    prefix = _scope(prefix_text, f"{where}: prefix", wildcard=True) if prefix_text else location
    where = f"{where} ({prefix})"
    digest_only = bool(_typed(table, "mirror-by-digest-only", bool, where))
    mirror_tables = _typed(table, "mirror", list, where) or []
    mirrors = tuple(
        _conf_mirror(m, f"{where} mirror #{n}", digest_only=digest_only, problems=problems)
        for n, m in enumerate(mirror_tables, 1)
    )
    return RegistryRule(
        prefix=prefix,
        location=location,
        mirrors=mirrors,
        blocked=bool(_typed(table, "blocked", bool, where)),
        insecure=bool(_typed(table, "insecure", bool, where)),
        mirror_by_digest_only=digest_only,
        origin=origin,
    )


def parse_registries_conf(data: bytes | str, origin: str) -> MirrorPolicy:
    """The mirror policy of a registries.conf (version 2), ``origin`` naming it in messages
    (``registries.conf /etc/containers/registries.conf``).

    Raises :class:`~provisioners.errors.MirrorConfigError` on a file over
    :data:`MAX_REGISTRIES_CONF_BYTES`, malformed TOML, the version 1 format, a value of the wrong
    type, a prefix or location that is not ``host[:port][/path]`` (or ``*.domain`` for a prefix),
    a URL scheme, a prefix declared twice, or an unknown ``pull-from-mirror``. Keys it does not
    know are ignored and listed in ``problems``; top-level settings that concern other things
    than mirrors (search registries, aliases, credential helpers) are ignored silently.
    """
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > MAX_REGISTRIES_CONF_BYTES:
        raise MirrorConfigError(
            f"{origin}: {size} bytes is more than the {MAX_REGISTRIES_CONF_BYTES} a "
            "registries.conf may have"
        )
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MirrorConfigError(f"{origin}: not UTF-8 text (byte {exc.start})") from None
    try:
        document = tomllib.loads(data)
    except tomllib.TOMLDecodeError as exc:
        raise MirrorConfigError(f"{origin}: not valid TOML: {exc}") from None
    if "registries" in document:
        raise MirrorConfigError(
            f"{origin}: the version 1 format ([registries.search], [registries.insecure], "
            "[registries.block]) is not supported; write [[registry]] tables (version 2, "
            "containers-registries.conf(5))"
        )
    problems = [
        f"{origin}: unknown key {key!r} ignored" for key in sorted(set(document) - _GLOBAL_KEYS)
    ]
    tables = document.get("registry", [])
    if not isinstance(tables, list):
        raise MirrorConfigError(
            f"{origin}: 'registry' must be an array of tables ([[registry]]), not "
            f"{type(tables).__name__}"
        )
    rules: list[RegistryRule] = []
    first_table: dict[str, int] = {}
    for n, table in enumerate(tables, 1):
        rule = _conf_rule(table, f"{origin}: [[registry]] #{n}", origin, problems)
        if rule.prefix in first_table:
            raise MirrorConfigError(
                f"{origin}: prefix {rule.prefix!r} is declared by [[registry]] "
                f"#{first_table[rule.prefix]} and #{n}; merge them into one table"
            )
        first_table[rule.prefix] = n
        rules.append(rule)
    return _assemble(rules, problems)


# -- OpenShift mirror sets -------------------------------------------------------------------------


class _Malformed(Exception):
    """One object's field is wrong; the object is skipped and the message becomes a problem."""


@dataclass(frozen=True)
class _SetKind:
    kind: str
    entries: str
    """The spec field that lists the entries."""
    pull_from: PullFrom
    wildcard_sources: bool
    source_policy: bool
    """Whether the entries may say ``mirrorSourcePolicy``."""


_DIGEST_SET = _SetKind(
    "ImageDigestMirrorSet", "imageDigestMirrors", PullFrom.DIGEST_ONLY, True, True
)
_TAG_SET = _SetKind("ImageTagMirrorSet", "imageTagMirrors", PullFrom.TAG_ONLY, True, True)
_CONTENT_POLICY = _SetKind(
    "ImageContentSourcePolicy", "repositoryDigestMirrors", PullFrom.DIGEST_ONLY, False, False
)
_ALLOW, _NEVER = "AllowContactingSource", "NeverContactSource"


def _object_name(obj: object) -> str:
    if isinstance(obj, Mapping):
        metadata = obj.get("metadata")
        if isinstance(metadata, Mapping) and isinstance(metadata.get("name"), str):
            return str(metadata["name"]) or "<unnamed>"
    return "<unnamed>"


def _set_entry(entry: object, field: str, kind: _SetKind, origin: str) -> RegistryRule | None:
    if not isinstance(entry, Mapping):
        raise _Malformed(f"{field}: must be an object with source and mirrors")
    source_text = entry.get("source")
    if not isinstance(source_text, str):
        raise _Malformed(f"{field}.source: must be a string")
    problem = _scope_problem(source_text, wildcard=kind.wildcard_sources)
    if problem is not None:
        raise _Malformed(f"{field}.source: {source_text!r} {problem}")
    mirror_texts = entry.get("mirrors") or []
    if not isinstance(mirror_texts, list):
        raise _Malformed(f"{field}.mirrors: must be a list of locations")
    mirrors: list[Mirror] = []
    for n, text in enumerate(mirror_texts):
        if not isinstance(text, str):
            raise _Malformed(f"{field}.mirrors[{n}]: must be a string")
        problem = _scope_problem(text, wildcard=False)
        if problem is not None:
            raise _Malformed(f"{field}.mirrors[{n}]: {text!r} {problem}")
        mirrors.append(Mirror(location=text, pull_from=kind.pull_from))
    policy = entry.get("mirrorSourcePolicy") if kind.source_policy else None
    if policy not in (None, "", _ALLOW, _NEVER):
        raise _Malformed(f"{field}.mirrorSourcePolicy: {policy!r} is not {_ALLOW} or {_NEVER}")
    wildcard = source_text.startswith("*.")
    if not any(m.location != source_text for m in mirrors):
        if policy == _NEVER:
            raise _Malformed(
                f"{field}: mirrorSourcePolicy {_NEVER} needs at least one mirror other than "
                "the source"
            )
        return None  # no mirror: the entry changes nothing, as OpenShift renders it
    return RegistryRule(
        prefix=source_text,
        location="" if wildcard else source_text,
        mirrors=tuple(mirrors),
        blocked=policy == _NEVER,
        origin=origin,
    )


def _set_rules(obj: object, kind: _SetKind) -> list[RegistryRule]:
    name = _object_name(obj)
    if not isinstance(obj, Mapping):
        raise _Malformed("the object is not a mapping")
    if obj.get("kind") not in (None, kind.kind):
        raise _Malformed(f"kind: {obj.get('kind')!r} where {kind.kind} was expected")
    if _object_name(obj) == "<unnamed>":
        raise _Malformed("metadata.name: missing")
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise _Malformed("spec: missing or not an object")
    entries = spec.get(kind.entries) or []
    if not isinstance(entries, list):
        raise _Malformed(f"spec.{kind.entries}: must be a list")
    rules = []
    for n, entry in enumerate(entries):
        rule = _set_entry(entry, f"spec.{kind.entries}[{n}]", kind, f"{kind.kind} {name}")
        if rule is not None:
            rules.append(rule)
    return rules


def from_mirror_sets(
    *,
    digest_sets: Iterable[Mapping[str, Any]] = (),
    tag_sets: Iterable[Mapping[str, Any]] = (),
    content_source_policies: Iterable[Mapping[str, Any]] = (),
) -> MirrorPolicy:
    """The mirror policy of a cluster's ImageDigestMirrorSets, ImageTagMirrorSets and
    ImageContentSourcePolicies (each a dict as the API server serves it).

    Entries for the same source merge in the order given (digest sets, then tag sets, then
    content source policies); a malformed object is skipped and described in ``problems``
    (``ImageDigestMirrorSet bad: spec.imageDigestMirrors[0].source: ...``), the others apply.
    """
    rules: list[RegistryRule] = []
    problems: list[str] = []
    groups: Sequence[tuple[_SetKind, Iterable[Mapping[str, Any]]]] = (
        (_DIGEST_SET, digest_sets),
        (_TAG_SET, tag_sets),
        (_CONTENT_POLICY, content_source_policies),
    )
    for kind, objects in groups:
        for obj in objects:
            try:
                rules.extend(_set_rules(obj, kind))
            except _Malformed as exc:
                problems.append(f"{kind.kind} {_object_name(obj)}: {exc}; the object is ignored")
    return _assemble(rules, problems)
