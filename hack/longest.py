"""The longest functions of the product, with their cyclomatic complexity (radon).

Run: ``python hack/longest.py [--top 10] [ROOT]``. Counts the lines of each function or method
in ``pivoter/``, ``resolver/`` and ``provisioners/`` (docstring included, generated ``*_pb2``
modules left out) and prints the longest as a markdown table: a quick look at where the code is
hardest to read, used in the notes of refactoring work.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from radon.complexity import cc_visit

PACKAGES = ("pivoter", "resolver", "provisioners")


def complexities(source: str) -> dict[tuple[str, int], int]:
    """Map (name, first line) of every function and method to its cyclomatic complexity."""
    found: dict[tuple[str, int], int] = {}
    for block in cc_visit(source):
        found[(block.name, block.lineno)] = block.complexity
        for method in getattr(block, "methods", None) or []:
            found[(method.name, method.lineno)] = method.complexity
    return found


def functions(root: Path) -> list[tuple[int, int, str]]:
    """Return (lines, complexity, "path:name") for every function in the product packages."""
    rows = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "_pb2" in path.name:
                continue
            source = path.read_text(encoding="utf-8")
            cc = complexities(source)
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    name = f"{path.relative_to(root)}:{node.name}"
                    rows.append((length, cc.get((node.name, node.lineno), -1), name))
    return sorted(rows, reverse=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    print("| function | lines | complexity |\n|---|---|---|")
    for length, complexity, name in functions(args.root)[: args.top]:
        print(f"| {name} | {length} | {complexity} |")


if __name__ == "__main__":
    main()
