"""Semantic versions and version ranges, in the two range dialects the resolver meets.

* ``blang``: the syntax of catalogs (``olm.package.required`` ranges, ``olm.skipRange``), as parsed
  by operator-registry with github.com/blang/semver/v4 ``ParseRange``: space-separated comparators
  are ANDed, ``||`` ORs, ``!=``/``!`` exclude, ``1.x``/``1.2.x`` wildcards, and a space between
  an operator and its version is tolerated (``>=1.22.8 < 1.23.0``). Prereleases get no special
  treatment: ``>=4.1.0-0 <4.2.0-0`` is plain version ordering.
* ``masterminds``: the syntax users write (OLM v1's ``versionRange``), as parsed by
  github.com/Masterminds/semver/v3 ``NewConstraint``: ``^1.2``, ``~1.2.3``, ``1.x``, ``*``, partial
  versions, hyphen ranges ``1.2 - 1.4``, comma- or space-separated AND, ``||`` OR. A comparator
  whose version has no prerelease never matches a prerelease version (Masterminds issue 21).

Used by the catalog validator, the resolver's rules (ranges, skipRange, successor checks), the CEL
``semver_compare`` function and the CLI's ``--package NAME@RANGE``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import semver

Version = semver.Version
"""A semantic version (semver 2.0); ordering ignores build metadata, as blang and Masterminds do."""

Syntax = Literal["blang", "masterminds"]
"""The dialect of a range string."""

_TOLERANT = re.compile(
    r"^[vV]?(?P<major>\d+)(?:\.(?P<minor>\d+))?(?:\.(?P<patch>\d+))?"
    r"(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+(?P<build>[0-9A-Za-z.-]+))?$"
)
_STRICT = re.compile(
    r"^(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)\.(?P<patch>0|[1-9]\d*)"
    r"(?:-(?P<pre>(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


class VersionSyntaxError(ValueError):
    """A version string that is not a semantic version, even tolerantly read."""


class RangeSyntaxError(ValueError):
    """A range string that cannot be parsed; the message names the offending token."""


_UINT64_MAX = 2**64 - 1


def _uint(digits: str, text: str, error: type[ValueError] = VersionSyntaxError) -> int:
    """A numeric part of a version: refused past 2^64-1, as blang and Masterminds (uint64) refuse
    it, and so before Python's ``int()`` would raise on 4300+ digits."""
    significant = digits.lstrip("0") or "0"
    if len(significant) > 20 or int(significant) > _UINT64_MAX:
        raise error(f"version {text[:60]!r}: the number {significant[:12]}... is above 2^64-1")
    return int(significant)


def _check_numbers(match: re.Match[str], text: str) -> None:
    """Refuse numeric parts (and numeric prerelease identifiers) that do not fit a uint64."""
    for name in ("major", "minor", "patch"):
        if match[name]:
            _uint(match[name], text)
    for ident in (match["pre"] or "").split("."):
        if ident.isdigit():
            _uint(ident, text)


def parse_version(text: str) -> Version:
    """Parse ``text`` as a semantic version, tolerating what catalogs contain.

    Tolerated (as blang's ``ParseTolerant``): surrounding spaces, a leading ``v``, a missing minor
    or patch (``1.2`` is ``1.2.0``) and leading zeros in numeric parts.
    """
    stripped = text.strip()
    strict = _STRICT.match(stripped)
    if strict:
        _check_numbers(strict, text)
        return Version.parse(stripped)
    match = _TOLERANT.match(stripped)
    if match is None:
        raise VersionSyntaxError(f"invalid version {text!r}: not a semantic version")
    _check_numbers(match, text)
    pre = match["pre"]
    if pre is not None and any(not ident for ident in pre.split(".")):
        raise VersionSyntaxError(f"invalid version {text!r}: empty prerelease identifier")
    build = match["build"]
    if build is not None and any(not ident for ident in build.split(".")):
        raise VersionSyntaxError(f"invalid version {text!r}: empty build identifier")
    if pre is not None:
        # A numeric identifier with leading zeros is ambiguous; normalise it like ParseTolerant.
        pre = ".".join(str(int(i)) if i.isdigit() else i for i in pre.split("."))
    return Version(
        int(match["major"]),
        int(match["minor"] or 0),
        int(match["patch"] or 0),
        pre,
        build,
    )


def parse_strict_version(text: str) -> Version:
    """Parse ``text`` as an exact semver 2.0 version (no ``v``, no partial versions)."""
    match = _STRICT.match(text)
    if not match:
        raise VersionSyntaxError(f"invalid version {text!r}: not a semver 2.0 version")
    _check_numbers(match, text)
    return Version.parse(text)


PrecedenceKey = tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]


@functools.lru_cache(maxsize=1 << 16)
def precedence_key(version: Version) -> PrecedenceKey:
    """A tuple that sorts as ``semver`` compares (build metadata ignored): equal keys exactly
    when ``version.compare`` says 0. Sorting on it avoids semver's Python-level ``compare`` in
    every comparison (the resolver sorts thousands of candidates per resolution)."""
    prerelease = version.prerelease
    if not prerelease:  # a release sorts above its prereleases
        return (version.major, version.minor, version.patch, 1, ())
    return (
        version.major,
        version.minor,
        version.patch,
        0,
        tuple(_identifier_key(part) for part in prerelease.split(".")),
    )


def _identifier_key(identifier: str) -> tuple[int, int, str]:
    """One prerelease identifier: numeric ones (by value) below alphanumeric ones (ASCII order)."""
    if not identifier.isdigit():
        return (1, 0, identifier)
    if not identifier.isascii():
        identifier = str(int(identifier))
    digits = identifier.lstrip("0") or "0"
    return (0, len(digits), digits)


def _floor(major: int, minor: int = 0, patch: int = 0) -> Version:
    """The lowest version of ``major.minor.patch`` (its ``-0`` prerelease): an exclusive bound."""
    return Version(major, minor, patch, "0")


_Compare = Callable[[Version, Version], bool]
_OPS: dict[str, _Compare] = {
    "==": lambda a, b: a.compare(b) == 0,
    "!=": lambda a, b: a.compare(b) != 0,
    "<": lambda a, b: a.compare(b) < 0,
    "<=": lambda a, b: a.compare(b) <= 0,
    ">": lambda a, b: a.compare(b) > 0,
    ">=": lambda a, b: a.compare(b) >= 0,
}


@dataclass(frozen=True, slots=True)
class Comparator:
    """One primitive comparison ``<op> <version>`` (op among ``== != < <= > >=``)."""

    op: str
    version: Version

    def matches(self, version: Version) -> bool:
        """Return whether ``version`` satisfies this comparison."""
        return _OPS[self.op](version, self.version)

    def __str__(self) -> str:
        return f"{self.op}{self.version}"


@dataclass(frozen=True, slots=True)
class Term:
    """One token of a range (``^1.2``, ``>=1.0.0``), expanded to an OR of ANDs of comparisons.

    ``exclude_prereleases`` is Masterminds' rule: a prerelease version never matches a term whose
    own version has no prerelease.
    """

    text: str
    any_of: tuple[tuple[Comparator, ...], ...]
    exclude_prereleases: bool = False

    def matches(self, version: Version) -> bool:
        """Return whether ``version`` satisfies this term."""
        if self.exclude_prereleases and version.prerelease:
            return False
        return any(all(c.matches(version) for c in conj) for conj in self.any_of)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A parsed range: an OR (``||``) of ANDs of terms."""

    text: str
    syntax: Syntax
    alternatives: tuple[tuple[Term, ...], ...]

    def contains(self, version: Version | str) -> bool:
        """Return whether ``version`` (a Version or a string read tolerantly) is in the range."""
        if isinstance(version, str):
            version = parse_version(version)
        return any(all(t.matches(version) for t in alt) for alt in self.alternatives)

    def __str__(self) -> str:
        return self.text


def parse_range(text: str, syntax: Syntax = "blang", *, strict: bool = False) -> VersionRange:
    """Parse ``text`` as a range in ``syntax``; raise :class:`RangeSyntaxError` naming the token.

    ``strict`` (blang only) rejects what blang rejects; by default a leading ``v`` and partial
    versions are tolerated in blang ranges too, because real catalogs contain ``<v2.4.0``.
    """
    if syntax == "blang":
        return VersionRange(text, syntax, _parse_blang(text, strict))
    if syntax == "masterminds":
        return VersionRange(text, syntax, _parse_masterminds(text))
    raise ValueError(f"unknown range syntax {syntax!r}")


# ---------------------------------------------------------------- blang/semver v4


def _blang_split(text: str) -> list[str]:
    """Split on spaces, except a space right after ``>``, ``<`` or ``=`` (blang's splitAndTrim)."""
    tokens: list[str] = []
    current = ""
    last = ""
    for ch in text:
        if ch.isspace():
            if last in (">", "<", "=") and current:
                continue
            if current:
                tokens.append(current)
            current = ""
            last = ""
            continue
        current += ch
        last = ch
    if current:
        tokens.append(current)
    return tokens


_BLANG_OPS = {"": "==", "=": "==", "==": "==", "!": "!=", "!=": "!=", "<": "<", "<=": "<="}
_BLANG_OPS.update({">": ">", ">=": ">="})


def _parse_blang(text: str, strict: bool) -> tuple[tuple[Term, ...], ...]:
    tokens = _blang_split(text)
    if not tokens:
        raise RangeSyntaxError(f"empty range {text!r}")
    groups: list[list[str]] = [[]]
    for i, token in enumerate(tokens):
        if token == "||":
            if i == 0:
                raise RangeSyntaxError(f"range {text!r}: '||' cannot come first")
            if not groups[-1]:
                raise RangeSyntaxError(f"range {text!r}: empty alternative before '||'")
            groups.append([])
        else:
            groups[-1].append(token)
    if not groups[-1]:
        raise RangeSyntaxError(f"range {text!r}: '||' cannot come last")
    return tuple(tuple(_blang_term(text, token, strict) for token in group) for group in groups)


def _blang_term(text: str, token: str, strict: bool) -> Term:
    digit = next((i for i, ch in enumerate(token) if ch.isdigit()), -1)
    if digit < 0:
        raise RangeSyntaxError(f"range {text!r}: no version in token {token!r}")
    op_text, version_text = token[:digit], token[digit:]
    if not strict and op_text[-1:] in ("v", "V"):
        op_text = op_text[:-1]
    if op_text not in _BLANG_OPS:
        raise RangeSyntaxError(f"range {text!r}: unknown operator {op_text!r} in token {token!r}")
    op = _BLANG_OPS[op_text]
    # Only the release part can hold a wildcard ("1.0.0-0.x" is a prerelease, not a wildcard).
    if ".x" in re.split(r"[-+]", version_text, maxsplit=1)[0]:
        return Term(token, _blang_wildcard(text, token, op, version_text))
    try:
        version = parse_strict_version(version_text) if strict else parse_version(version_text)
    except VersionSyntaxError as err:
        raise RangeSyntaxError(f"range {text!r}: bad version in token {token!r}: {err}") from None
    return Term(token, ((Comparator(op, version),),))


def _blang_wildcard(
    text: str, token: str, op: str, version_text: str
) -> tuple[tuple[Comparator, ...], ...]:
    parts = version_text.split(".")
    numbers: list[int] = []
    for part in parts:
        if part == "x":
            break
        if not part.isdigit():
            raise RangeSyntaxError(f"range {text!r}: bad wildcard in token {token!r}")
        numbers.append(_uint(part, text, RangeSyntaxError))
    if not numbers or len(numbers) > 2 or any(p != "x" for p in parts[len(numbers) :]):
        raise RangeSyntaxError(f"range {text!r}: bad wildcard in token {token!r}")
    low = Version(numbers[0], numbers[1] if len(numbers) > 1 else 0, 0)
    # blang increments the first wildcard's parent part; its bounds are plain versions, so
    # prereleases of the upper bound fall inside (blang has no prerelease rule).
    high = Version(low.major, low.minor + 1, 0) if len(numbers) == 2 else Version(low.major + 1)
    if op == "==":
        return ((Comparator(">=", low), Comparator("<", high)),)
    if op == "!=":
        return ((Comparator("<", low),), (Comparator(">=", high),))
    if op == ">":
        return ((Comparator(">=", high),),)
    if op == ">=":
        return ((Comparator(">=", low),),)
    if op == "<":
        return ((Comparator("<", low),),)
    return ((Comparator("<", high),),)  # "<="


# ---------------------------------------------------------------- Masterminds/semver v3

_MM_VERSION = (
    r"v?(?P<major>[0-9xX*]+)(?P<minor>\.[0-9xX*]+)?(?P<patch>\.[0-9xX*]+)?"
    r"(?:-(?P<pre>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
    r"(?:\+(?P<build>[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)
_MM_OPS = r"!=|>=|=>|<=|=<|~>|>|<|=|~|\^"
_MM_NOGROUP = (
    r"v?[0-9xX*]+(?:\.[0-9xX*]+)?(?:\.[0-9xX*]+)?"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
)
_MM_HYPHEN = re.compile(rf"(?<![0-9A-Za-z.+*-])({_MM_NOGROUP})\s+-\s+({_MM_NOGROUP})")
"""``A - B``. A starts where a token starts (the look-behind): unanchored, the search tried every
digit of a long number as a start and scanned the rest of it each time, quadratic in its length
(20,000 digits took 21 s); a version glued to a letter or a dot is not a valid term either way."""
_MM_TERM = re.compile(rf"^(?P<op>{_MM_OPS})?\s*{_MM_VERSION}$")


def _is_x(part: str) -> bool:
    return part in ("x", "X", "*")


def _parse_masterminds(text: str) -> tuple[tuple[Term, ...], ...]:
    if not text.strip():
        raise RangeSyntaxError(f"empty range {text!r}")
    alternatives: list[tuple[Term, ...]] = []
    for alt in text.split("||"):
        if not alt.strip():
            raise RangeSyntaxError(f"range {text!r}: empty alternative around '||'")
        alternatives.append(tuple(_mm_terms(text, alt)))
    return tuple(alternatives)


def _mm_tokens(text: str, alt: str) -> list[str]:
    """Split one AND group into tokens, joining an operator to a version after a space."""
    pieces = [p for p in re.split(r"[\s,]+", alt.strip()) if p]
    tokens: list[str] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        if re.fullmatch(_MM_OPS, piece):
            if i + 1 >= len(pieces):
                raise RangeSyntaxError(f"range {text!r}: operator {piece!r} without a version")
            piece += pieces[i + 1]
            i += 1
        tokens.append(piece)
        i += 1
    return tokens


def _mm_terms(text: str, alt: str) -> list[Term]:
    stripped = alt.strip()
    terms: list[Term] = []
    # Hyphen ranges "A - B" become ">= A, <= B" (Masterminds rewriteRange).
    stripped = _MM_HYPHEN.sub(lambda m: f">={m[1]},<={m[2]}", stripped)
    for token in _mm_tokens(text, stripped):
        terms.append(_mm_term(text, token))
    return terms


def _mm_term(text: str, token: str) -> Term:
    match = _MM_TERM.match(token)
    if match is None:
        raise RangeSyntaxError(f"range {text!r}: improper constraint {token!r}")
    op = match["op"] or "="
    major_t = match["major"]
    minor_t = (match["minor"] or "").lstrip(".")
    patch_t = (match["patch"] or "").lstrip(".")
    pre = match["pre"]
    minor_dirty = patch_dirty = dirty = False
    if _is_x(major_t) or major_t == "":
        major, minor, patch, dirty = 0, 0, 0, True
    elif _is_x(minor_t) or minor_t == "":
        major, minor, patch = _uint(major_t, text, RangeSyntaxError), 0, 0
        minor_dirty = dirty = True
    elif _is_x(patch_t) or patch_t == "":
        major, minor = (
            _uint(major_t, text, RangeSyntaxError),
            _uint(minor_t, text, RangeSyntaxError),
        )
        patch = 0
        patch_dirty = dirty = True
    else:
        if not patch_t.isdigit() or not minor_t.isdigit():
            raise RangeSyntaxError(f"range {text!r}: improper constraint {token!r}")
        major, minor, patch = (
            _uint(t, text, RangeSyntaxError) for t in (major_t, minor_t, patch_t)
        )
    if any(not p.isdigit() and not _is_x(p) for p in (major_t, minor_t, patch_t) if p):
        raise RangeSyntaxError(f"range {text!r}: improper constraint {token!r}")
    for ident in (pre or "").split("."):
        if ident.isdigit():
            _uint(ident, text, RangeSyntaxError)
    con = Version(major, minor, patch, pre)
    guard = not pre
    wild = _Wild(con, dirty, minor_dirty, patch_dirty)
    return Term(token, _mm_expand(op, wild), exclude_prereleases=guard)


@dataclass(frozen=True, slots=True)
class _Wild:
    con: Version
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool


def _mm_tilde(w: _Wild) -> tuple[tuple[Comparator, ...], ...]:
    con = w.con
    if (con.major, con.minor, con.patch) == (0, 0, 0) and not w.minor_dirty and not w.patch_dirty:
        return ((Comparator(">=", con),),)
    high = _floor(con.major + 1) if w.minor_dirty else _floor(con.major, con.minor + 1)
    return ((Comparator(">=", con), Comparator("<", high)),)


def _mm_caret(w: _Wild) -> tuple[tuple[Comparator, ...], ...]:
    con = w.con
    if w.dirty and not w.minor_dirty and not w.patch_dirty:
        # "^*" is documented as "any" (its code path only matches 0.0.x; we follow the docs).
        return ((Comparator(">=", Version(0)),),)
    if con.major > 0 or w.minor_dirty:
        high = _floor(con.major + 1)
    elif con.minor > 0 or w.patch_dirty:
        high = _floor(0, con.minor + 1)
    else:
        high = _floor(0, 0, con.patch + 1)
    return ((Comparator(">=", con), Comparator("<", high)),)


def _mm_expand(op: str, w: _Wild) -> tuple[tuple[Comparator, ...], ...]:
    con = w.con
    if op == "=":
        return _mm_tilde(w) if w.dirty else ((Comparator("==", con),),)
    if op in ("~", "~>"):
        return _mm_tilde(w)
    if op == "^":
        return _mm_caret(w)
    if op == "<":
        return ((Comparator("<", con),),)
    if op in (">=", "=>"):
        return ((Comparator(">=", con),),)
    if op == ">":
        if w.minor_dirty:
            return ((Comparator(">=", _floor(con.major + 1)),),)
        if w.patch_dirty:
            return ((Comparator(">=", _floor(con.major, con.minor + 1)),),)
        return ((Comparator(">", con),),)
    if op in ("<=", "=<"):
        if not w.dirty:
            return ((Comparator("<=", con),),)
        if w.minor_dirty:
            return ((Comparator("<", _floor(con.major + 1)),),)
        return ((Comparator("<", _floor(con.major, con.minor + 1)),),)
    # "!=": a wildcard excludes the whole wildcard span.
    if not w.dirty or not (w.minor_dirty or w.patch_dirty):
        return ((Comparator("!=", con),),)
    low = Version(con.major, 0 if w.minor_dirty else con.minor, 0, "0")
    high = _floor(con.major + 1) if w.minor_dirty else _floor(con.major, con.minor + 1)
    return ((Comparator("<", low),), (Comparator(">=", high),))
