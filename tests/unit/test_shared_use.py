"""A plain clone passes its tests: what reads ../shared (the full catalogs beside the checkout,
absent from a clone) says so.

Every test or fixture that names :data:`tests.tools.SHARED` carries ``requires_shared`` (on itself
or in its module's ``pytestmark``), so it skips with one line where ../shared is absent; nothing
else builds the path to ../shared (``parents[2] / "shared"``, ``/work/shared``). The benchmarks
find ../shared through ``bench/shared.py``, which exits with one line when it is absent.
Found by reading the source (``ast``), so a new test cannot forget it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Scripts that make the copies in tests/data read ../shared by design.
MAKERS = "tests/data/"
OWN_PATH = re.compile(
    r"""/work/shared|parents\[2\]\s*/\s*["']shared["']|parent\s*/\s*["']shared["']"""
)


def _sources(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _module_marked(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        and "requires_shared" in _names(node.value)
        for node in tree.body
    )


def test_every_test_reading_shared_is_marked_requires_shared() -> None:
    unmarked = []
    for path in _sources("tests"):
        if path.name == "tools.py" or path.relative_to(ROOT).as_posix().startswith(MAKERS):
            continue
        tree = ast.parse(path.read_text(), str(path))
        if _module_marked(tree):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if "SHARED" not in _names(node):
                continue
            if not any("requires_shared" in _names(d) for d in node.decorator_list):
                unmarked.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert unmarked == [], (
        "these read ../shared (tests.tools.SHARED) but do not skip without it: mark them "
        "@requires_shared, or copy what they need into tests/data (tests/data/README.md)"
    )


def test_only_tools_and_bench_shared_build_the_path_to_shared() -> None:
    own = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("tests", "bench")
        for path in _sources(folder)
        if path.relative_to(ROOT).as_posix() not in ("tests/tools.py", "bench/shared.py")
        and not path.relative_to(ROOT).as_posix().startswith(MAKERS)
        and path.name != Path(__file__).name
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if OWN_PATH.search(line)
    ]
    assert own == [], "use tests.tools.SHARED or bench.shared (PIVOTER_SHARED, one-line skip/exit)"
