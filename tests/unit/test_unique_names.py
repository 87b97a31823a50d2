"""Every public class name means one class across ``pivoter``, ``resolver`` and ``provisioners``.

Two classes of one name (an ``Engine`` for inputs and one for the SAT solver, a ``Settings`` per
controller) cannot be told apart by a reader who meets the name, nor by ``grep``. This test
parses every module of the three packages and fails on a public (no leading ``_``) class name
defined at module level by more than one of them, naming every file that defines it; the second
test proves the check catches a planted duplicate. Nested classes and classes local to a function
are not names a reader meets on their own and are left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pivoter", "resolver", "provisioners")


def _module_level(body: Sequence[ast.stmt]) -> Iterator[ast.ClassDef]:
    """The classes of ``body``, also inside its ``if``/``try``/``with`` blocks (still module level),
    never inside a function or another class."""
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield node
        elif isinstance(node, ast.If | ast.With):
            yield from _module_level(node.body)
            yield from _module_level(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)


def public_classes(source: str, filename: str) -> set[str]:
    """The public class names ``source`` defines at module level."""
    tree = ast.parse(source, filename)
    return {c.name for c in _module_level(tree.body) if not c.name.startswith("_")}


def duplicates(modules: Mapping[str, str]) -> list[str]:
    """One line per public class name that more than one of ``modules`` (file name -> source)
    defines: ``Name: file, file``, sorted."""
    defined: dict[str, list[str]] = {}
    for filename, source in sorted(modules.items()):
        for name in public_classes(source, filename):
            defined.setdefault(name, []).append(filename)
    return [
        f"{name}: {', '.join(files)}" for name, files in sorted(defined.items()) if len(files) > 1
    ]


def test_every_public_class_name_is_defined_once() -> None:
    modules = {
        path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    assert len(modules) > 100, "the three packages were not found"
    found = duplicates(modules)
    assert not found, (
        "public class names defined more than once (rename all but one so that each name says "
        "what its class is):\n" + "\n".join(found)
    )


def test_a_planted_duplicate_is_named_with_both_files() -> None:
    modules = {
        "pivoter/inputs/engine.py": "class Engine:\n    pass\n",
        "resolver/sat/engine.py": (
            "import typing\n"
            "if typing.TYPE_CHECKING:\n"
            "    class Engine: ...\n"
            "class _Private: ...\n"
            "class Outer:\n"
            "    class Nested: ...\n"
            "def factory() -> None:\n"
            "    class Local: ...\n"
        ),
        "provisioners/x.py": "class _Private: ...\nclass Nested: ...\nclass Local: ...\n",
    }
    assert duplicates(modules) == ["Engine: pivoter/inputs/engine.py, resolver/sat/engine.py"]
    del modules["pivoter/inputs/engine.py"]
    assert duplicates(modules) == []
