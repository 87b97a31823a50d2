"""Check image pull specs with the grammar of ``github.com/distribution/reference``.

opm rejects a bundle whose ``image`` or ``relatedImages[].image`` does not parse with
``reference.ParseNormalizedNamed``; :func:`pull_spec_error` applies the same grammar (domain,
lowercase path components, tag, digest of a known algorithm with the right length) so that
:mod:`resolver.catalog.validate` agrees with it.
"""

from __future__ import annotations

import re

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[(?:[a-fA-F0-9:]+)\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_REFERENCE = re.compile(rf"^({_NAME})(?::({_TAG}))?(?:@({_DIGEST}))?$")
_IDENTIFIER = re.compile(r"^[a-f0-9]{64}$")
_DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
_MAX_NAME = 255


def pull_spec_error(spec: str) -> str | None:
    """Return why ``spec`` is not a valid image reference, or None when it is (or is empty)."""
    if not spec:
        return None
    if _IDENTIFIER.match(spec):
        return "cannot specify 64-byte hexadecimal strings"
    first, slash, rest = spec.partition("/")
    if slash and (any(c in first for c in ".:") or first == "localhost" or first.lower() != first):
        remote = rest
    else:
        remote = spec
    remote_name = re.split(r"[:@]", remote, maxsplit=1)[0]
    if remote_name.lower() != remote_name:
        return "repository name must be lowercase"
    match = _REFERENCE.match(spec)
    if match is None:
        return "invalid reference format"
    if len(match.group(1)) > _MAX_NAME:
        return f"repository name must not be more than {_MAX_NAME} characters"
    digest = match.group(3)
    if digest:
        algorithm, _, encoded = digest.partition(":")
        size = _DIGEST_LENGTHS.get(algorithm)
        if size is None:
            return f"unsupported digest algorithm {algorithm!r}"
        if len(encoded) != size or encoded.lower() != encoded:
            return "invalid checksum digest format"
    return None
