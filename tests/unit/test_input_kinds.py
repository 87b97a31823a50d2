"""The input kinds are listed once, in :mod:`pivoter.apis.inputs` (issue 27): a tripwire over the
source of ``pivoter/``, the proof that it catches what it is for, and the registry's own readers.

A list written by hand once left ClusterExtensions out of joint resolution while another list
had them, so a Resolution and a ClusterExtension could both install one package. The tripwire
parses every module of ``pivoter/`` and fails, naming ``file:line``, where outside
``pivoter/apis/inputs.py``:

* a collection literal (tuple, list, set, the keys or the values of a dict; a ``frozenset(...)``
  or ``set(...)`` over a literal is the literal) holds two input kinds or more: as the kind's name
  (``"Resolution"``, ``"resolution"``), its plural (``"resolutions"``), a resource or registry
  constant (``RESOLUTIONS``, ``RESOLUTION``), or a call naming the kind (``Resource(...,
  "Resolution", ...)``);
* a module compares one expression against two input kinds or more (``==``/``!=``/``is``
  chains, ``match`` cases; ``in (...)`` is a collection literal).

``__all__`` is not a list of kinds (a class may be named like one). Violations in files this
change did not own are listed in :data:`KNOWN`, by file and source line: each is to be replaced by
a lookup in the registry, and the test fails once one is gone so that the list only shrinks.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pivoter.apis import inputs, resources
from pivoter.apis.inputs import (
    CLUSTER_EXTENSION,
    INPUT_KINDS,
    PLATFORM_OPERATOR,
    RESOLUTION,
    ActiveRevision,
    SelectedPackages,
    input_kind,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pivoter"
REGISTRY = PACKAGE / "apis" / "inputs.py"

KNOWN: dict[tuple[str, str], str] = {}
"""Violations in files others own: (path, the offending line, stripped) -> what to do."""


def _words() -> dict[str, str]:
    """Every spelling of an input kind in source -> the kind."""
    words = {}
    for k in INPUT_KINDS:
        for word in (k.kind, k.kind.lower(), k.resource.plural):
            words[word] = k.kind
    return words


def _constants() -> dict[str, str]:
    """The module constants that stand for one input kind -> the kind."""
    found = {}
    for name, value in vars(resources).items():
        kind = input_kind(getattr(value, "kind", ""))
        if name.isupper() and kind is not None and kind.resource == value:
            found[name] = kind.kind
    for name, value in vars(inputs).items():
        if name.isupper() and value in INPUT_KINDS:
            found[name] = value.kind
    return found


WORDS = _words()
CONSTANTS = _constants()


@dataclass(frozen=True, slots=True)
class Violation:
    """One place that lists input kinds itself."""

    path: str
    line: int
    text: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.text}"


def _kind_of(node: ast.AST) -> str | None:
    """The input kind ``node`` names, if it names one."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return WORDS.get(node.value)
    if isinstance(node, ast.Name):
        return CONSTANTS.get(node.id)
    if isinstance(node, ast.Attribute):
        return CONSTANTS.get(node.attr)
    if isinstance(node, ast.Call):
        arguments = [*node.args, *(k.value for k in node.keywords)]
        for argument in arguments:
            if isinstance(argument, ast.Constant) and _kind_of(argument):
                return _kind_of(argument)
    return None


def _exports(tree: ast.AST) -> set[int]:
    """The ids of the nodes under an ``__all__`` assignment."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            targets, value = [node.target], node.value
        if value is not None and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in targets
        ):
            skipped.update(id(n) for n in ast.walk(value))
    return skipped


def _collections(tree: ast.AST) -> Iterator[tuple[ast.AST, set[str]]]:
    """Each collection literal with the kinds among its items (keys and values apart)."""
    skipped = _exports(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        groups: list[list[ast.expr]] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            groups = [node.elts]
        elif isinstance(node, ast.Dict):
            groups = [[k for k in node.keys if k is not None], node.values]
        for items in groups:
            kinds = {k for k in map(_kind_of, items) if k is not None}
            yield node, kinds


def _comparisons(tree: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    """(the compared expression, the kind, the node) of every comparison with one kind."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            if isinstance(node.ops[0], ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                left, right = node.left, node.comparators[0]
                for subject, other in ((left, right), (right, left)):
                    kind = _kind_of(other)
                    if kind is not None and _kind_of(subject) is None:
                        yield ast.unparse(subject), kind, node
        elif isinstance(node, ast.Match):
            for case in node.cases:
                for pattern in ast.walk(case.pattern):
                    if isinstance(pattern, ast.MatchValue):
                        kind = _kind_of(pattern.value)
                        if kind is not None:
                            yield ast.unparse(node.subject), kind, pattern


def violations(source: str, path: str) -> list[Violation]:
    """Where the module ``source`` (at ``path``) lists input kinds itself."""
    tree = ast.parse(source)
    lines = source.splitlines()

    def at(node: ast.AST, what: str) -> Violation:
        line = getattr(node, "lineno", 0)
        return Violation(path, line, lines[line - 1].strip() if line else "", what)

    found = [
        at(node, f"a collection of input kinds ({', '.join(sorted(kinds))})")
        for node, kinds in _collections(tree)
        if len(kinds) >= 2
    ]
    compared: dict[str, dict[str, ast.AST]] = {}
    for subject, kind, node in _comparisons(tree):
        compared.setdefault(subject, {}).setdefault(kind, node)
    for subject, by_kind in compared.items():
        if len(by_kind) >= 2:
            first = min(by_kind.values(), key=lambda n: getattr(n, "lineno", 0))
            kinds = ", ".join(sorted(by_kind))
            found.append(at(first, f"{subject} compared with input kinds one by one ({kinds})"))
    return sorted(found, key=lambda v: (v.path, v.line))


def _tree() -> list[Violation]:
    found = []
    for module in sorted(PACKAGE.rglob("*.py")):
        if module == REGISTRY:
            continue
        path = module.relative_to(ROOT).as_posix()
        found += violations(module.read_text(encoding="utf-8"), path)
    return found


def test_only_the_registry_lists_the_input_kinds() -> None:
    found = _tree()
    new = [v for v in found if (v.path, v.text) not in KNOWN]
    assert not new, (
        "list the input kinds in pivoter/apis/inputs.py only (iterate INPUT_KINDS or look a kind "
        "up with input_kind):\n" + "\n".join(map(str, new))
    )
    seen = {(v.path, v.text) for v in found}
    gone = [f"{path}: {text}" for path, text in KNOWN if (path, text) not in seen]
    assert not gone, "fixed: remove from KNOWN in tests/unit/test_input_kinds.py:\n" + "\n".join(
        gone
    )


@pytest.mark.parametrize(
    "source",
    [
        # What held.py had: the kinds whose pivots hold their targets, without ClusterExtension.
        """
        INPUT_KINDS = (
            Resource(api.API_VERSION, "Resolution", "resolutions", namespaced=False),
            Resource(platform.API_VERSION, "PlatformOperator", "platformoperators", False),
        )
        """,
        # What children.py had: a dict by name.
        """
        INPUT_RESOURCES = {"Resolution": RESOLUTIONS, "ClusterExtension": CLUSTER_EXTENSIONS}
        """,
        # What the CLI had: the lower-case names, the resource constants as values.
        """
        _KINDS = {"x": resources.RESOLUTIONS, "y": resources.PLATFORM_OPERATORS}
        """,
        """
        SERVED = frozenset({"resolutions", "clusterextensions"})
        """,
        """
        def wanted(kind):
            return kind in ["Resolution", "PlatformOperator"]
        """,
        """
        def read(kind, obj):
            if kind == "Resolution":
                return 1
            elif kind == "ClusterExtension":
                return 2
        """,
        """
        def read(ref):
            if ref.kind != "Resolution":
                pass
            if "PlatformOperator" == ref.kind:
                pass
        """,
        """
        def read(resource):
            if resource is RESOLUTION:
                return 1
            return 2 if resource == inputs.CLUSTER_EXTENSION else 3
        """,
        """
        def read(kind):
            match kind:
                case "Resolution":
                    return 1
                case "PlatformOperator" | "ClusterExtension":
                    return 2
        """,
    ],
)
def test_the_tripwire_catches_a_planted_list(source: str) -> None:
    found = violations(textwrap.dedent(source), "pivoter/planted.py")
    assert found
    for violation in found:
        assert violation.line > 0
        assert str(violation).startswith(f"pivoter/planted.py:{violation.line}: ")


@pytest.mark.parametrize(
    "source",
    [
        '__all__ = ["ClusterExtension", "PlatformOperator", "Resolution"]',
        "KINDS = [k.kind for k in INPUT_KINDS]",
        'if ref.kind == "Resolution":\n    pass',  # one kind: a decision about that kind
        'if kind == "Resolution":\n    pass\nif name == "ClusterExtension":\n    pass',
        'PAIR = ("Resolution", "web")',
        '"""A Resolution, a PlatformOperator or a ClusterExtension."""',
    ],
)
def test_the_tripwire_lets_the_rest_be(source: str) -> None:
    assert violations(source, "pivoter/fine.py") == []


def test_a_failure_names_file_and_line() -> None:
    source = 'A = 1\nB = ("PlatformOperator", "ClusterExtension")\n'
    (found,) = violations(source, "pivoter/planted.py")
    assert str(found) == (
        "pivoter/planted.py:2: a collection of input kinds (ClusterExtension, PlatformOperator): "
        'B = ("PlatformOperator", "ClusterExtension")'
    )


# -- the registry --------------------------------------------------------------------------------


def test_each_kind_is_found_by_its_name() -> None:
    assert [k.kind for k in INPUT_KINDS] == ["Resolution", "PlatformOperator", "ClusterExtension"]
    assert all(input_kind(k.kind) is k for k in INPUT_KINDS)
    assert input_kind("resolution") is None
    assert input_kind("Subscription") is None
    assert {k.resource for k in INPUT_KINDS} == {
        resources.RESOLUTIONS,
        resources.PLATFORM_OPERATORS,
        resources.CLUSTER_EXTENSIONS,
    }


def test_a_selection_says_which_packages_are_wanted() -> None:
    status = {"selection": [{"package": "web"}, {"package": "db"}], "activeRevision": 3}
    for kind in (RESOLUTION, CLUSTER_EXTENSION):
        assert kind.wanted(status) == SelectedPackages(frozenset({"web", "db"}))
        # No selection written yet: the children of the active revision.
        assert kind.wanted({"activeRevision": 3}) == ActiveRevision(3, "")


def test_a_platform_operator_wants_its_active_revision_whatever_else_its_status_holds() -> None:
    status = {
        "selection": [{"package": "web"}],
        "activeRevision": 2,
        "pivot": {"phase": "Pruning", "revision": 3},
    }
    assert PLATFORM_OPERATOR.wanted(status) == ActiveRevision(2, "Pruning")
    assert PLATFORM_OPERATOR.wanted({}) == ActiveRevision(None, "")
    assert PLATFORM_OPERATOR.wanted({"activeRevision": "x", "pivot": "y"}) == ActiveRevision(
        None, ""
    )


def test_each_kind_names_its_install_identity_where_its_api_does() -> None:
    bare: dict[str, object] = {}
    assert RESOLUTION.identity.account({"serviceAccount": {"name": "a", "namespace": "n"}}) == (
        "n",
        "a",
    )
    assert CLUSTER_EXTENSION.identity.account(
        {"namespace": "n", "serviceAccount": {"name": "a"}}
    ) == ("n", "a")
    assert PLATFORM_OPERATOR.identity.account({"serviceAccount": {"name": "a"}}) is None
    assert PLATFORM_OPERATOR.identity.field == ""
    assert all(k.identity.account(bare) is None for k in INPUT_KINDS)
