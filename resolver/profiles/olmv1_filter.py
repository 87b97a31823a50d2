"""The ``olmv1-filter`` profile: OLM v1 as it is today (operator-controller, after PR #758).

No solver: among the available catalogs the request's catalog selector picks (each catalog seen
with the labels the cluster gives it), per catalog, filter the package's bundles by channel,
version range (Masterminds) and, unless the policy is ``SelfCertified``, by the successors of the
installed bundle; sort non-deprecated first (bundle deprecations only), then by version; keep the
top bundle per catalog; across catalogs non-deprecated beats deprecated, then the highest
priority wins, and a tie of the two highest is an error naming every catalog in the running. The
chosen bundle is then rejected if it declares dependencies. Called through
:mod:`resolver.profiles`.
"""

from __future__ import annotations

from resolver.catalog.model import SCHEMA_BUNDLE
from resolver.rules.channels import is_successor
from resolver.rules.inputs import (
    Candidate,
    CatalogInput,
    Choice,
    Index,
    Installed,
    PackageRequest,
    Resolution,
    ResolutionError,
    ResolutionInput,
)
from resolver.rules.predicates import has_requirements
from resolver.rules.selectors import CatalogSelectorError, catalog_labels
from resolver.versions import (
    PrecedenceKey,
    RangeSyntaxError,
    Version,
    VersionRange,
    parse_range,
    parse_version,
    precedence_key,
)


def same_release(cand: Candidate, installed: Installed) -> bool:
    """Whether ``cand`` is exactly the installed version, build metadata (release) included."""
    try:
        mine = parse_version(installed.version)
    except ValueError:
        return False
    return cand.version is not None and cand.version == mine and cand.version.build == mine.build


def is_legacy_successor(cand: Candidate, installed: Installed) -> bool:
    """OLM v1's successor test: a catalog edge from the installed bundle, or the same release."""
    try:
        version: Version | None = parse_version(installed.version)
    except ValueError:
        version = None
    if any(is_successor(entry, installed.name, version) for _, entry in cand.entries):
        return True
    return same_release(cand, installed)


def _describe(req: PackageRequest) -> str:
    text = f'for package "{req.package}"'
    if req.version_range:
        text += f' matching version "{req.version_range}"'
    if req.channels:
        text += f" in channels [{' '.join(req.channels)}]"
    return text


def parse_user_range(text: str) -> VersionRange | None:
    """Parse a ClusterExtension ``versionRange`` with OLM v1's error text."""
    if not text:
        return None
    try:
        return parse_range(text, "masterminds")
    except RangeSyntaxError:
        raise ResolutionError(
            f'desired version range "{text}" is invalid: improper constraint: "{text}"'
        ) from None


def _bundle_deprecated(cand: Candidate) -> bool:
    """Whether the catalog deprecates this bundle itself: OLM v1 sorts and compares candidates by
    ``olm.bundle`` deprecation entries only (package and channel deprecations become conditions,
    not a preference)."""
    dep = cand.source.catalog.deprecation_of(cand.package)
    return dep is not None and any(
        e.schema == SCHEMA_BUNDLE and e.name == cand.name for e in dep.entries
    )


def selected_sources(index: Index, req: PackageRequest) -> list[CatalogInput]:
    """The available catalogs ``req``'s catalog selector picks, by name (all without one)."""
    if req.catalog_selector is None:
        return list(index.sources)
    try:
        req.catalog_selector.requirements()
    except CatalogSelectorError as err:
        raise ResolutionError(f"desired catalog selector is invalid: {err}") from None
    return [
        s for s in index.sources if req.catalog_selector.matches(catalog_labels(s.name, s.labels))
    ]


def resolve_one(index: Index, req: PackageRequest, installed: Installed | None) -> Choice:
    """Pick the bundle of one ClusterExtension."""
    sources = selected_sources(index, req)
    rng = parse_user_range(req.version_range)
    tops: list[tuple[Candidate, bool]] = []
    for source in sources:
        found: list[tuple[Candidate, bool]] = []
        for cand in index.candidates(req.package):
            if cand.catalog != source.name:
                continue
            if req.channels and not set(req.channels) & set(cand.channels):
                continue
            if rng is not None and (cand.version is None or not rng.contains(cand.version)):
                continue
            if (
                installed is not None
                and req.upgrade_policy != "SelfCertified"
                and not is_legacy_successor(cand, installed)
            ):
                continue
            found.append((cand, _bundle_deprecated(cand)))
        if found:
            found.sort(key=lambda f: version_key(f[0].version), reverse=True)
            found.sort(key=lambda f: f[1])  # stable: non-deprecated first, each newest first
            tops.append(found[0])
    prefix = (
        f'error upgrading from currently installed version "{installed.version}": '
        if installed is not None
        else ""
    )
    if not tops:
        raise ResolutionError(f"{prefix}no bundles found {_describe(req)}")
    if any(not dep for _, dep in tops):
        tops = [t for t in tops if not t[1]]
    # Priority decides only when the best catalog's priority is its own: when the two highest
    # tie, OLM v1 refuses to choose and names every catalog still in the running (lower
    # priorities included), as its resolution error lists them.
    tops.sort(key=lambda t: t[0].source.priority, reverse=True)
    if len(tops) > 1 and tops[0][0].source.priority == tops[1][0].source.priority:
        names = " ".join(sorted(t[0].catalog for t in tops))
        raise ResolutionError(
            f"{prefix}found bundles {_describe(req)} in multiple catalogs with the same "
            f"priority [{names}]"
        )
    cand = tops[0][0]
    prop = has_requirements(cand.bundle)
    if prop:
        raise ResolutionError(
            f'validating bundle "{cand.name}": bundle "{cand.name}" has a dependency declared via '
            f'property "{prop}" which is currently not supported'
        )
    channel = next((c for c in req.channels if c in cand.channels), "")
    return Choice(cand.package, cand.bundle, cand.catalog, channel or next(iter(cand.channels), ""))


def version_key(version: Version | None) -> tuple[int, PrecedenceKey | None]:
    """A sort key in semver precedence, placing bundles without a version below every versioned
    one (:func:`resolver.versions.precedence_key`)."""
    return (0, None) if version is None else (1, precedence_key(version))


def resolve(inp: ResolutionInput) -> Resolution:
    """Resolve each request of ``inp`` independently, as ClusterExtensions are."""
    index = Index(inp.catalogs)
    choices = []
    for req in inp.requests:
        installed = next(
            (i for i in inp.installed if not i.package or i.package == req.package), None
        )
        choices.append(resolve_one(index, req, installed))
    return Resolution(choices)


def successors(inp: ResolutionInput) -> list[str]:
    """The bundles OLM v1 allows as upgrade targets of the installed bundle (names, sorted)."""
    index = Index(inp.catalogs)
    installed = inp.installed[0]
    return sorted({c.name for c in index.all() if is_legacy_successor(c, installed)})
