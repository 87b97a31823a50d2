"""Every YAML/JSON text from outside goes through resolver.safedata: no other loader call in the
source tree, except the few below, each for input that is genuinely trusted; and none of it is
parsed without the expansion budget (what a text may become through aliases) or, for catalog
files, without the file's memory budget."""

from __future__ import annotations

import ast
import base64
import importlib
import pkgutil
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resolver import safedata

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pivoter", "resolver", "provisioners")

# A call (or import) of a YAML/JSON/pickle loader other than resolver.safedata's.
LOADER = re.compile(
    r"\byaml\.(?:safe_load|load|load_all|safe_load_all|full_load|full_load_all|unsafe_load"
    r"|unsafe_load_all|compose|compose_all|parse|scan)\b"
    r"|\b(?:CSafeLoader|SafeLoader|CLoader|CFullLoader|FullLoader|UnsafeLoader|CParser|BaseLoader)\b"
    r"|\b(?:get_single_node|construct_document|check_node)\b"
    r"|\bjson\.loads?\b|\bJSONDecoder\b|\braw_decode\b|\borjson\.loads\b"
    r"|\bpickle\.loads?\b|\bUnpickler\b|\bmarshal\.loads?\b"
    r"|^\s*from\s+(?:json|orjson|yaml|simplejson|ujson|pickle)\s+import\b"
    r"|^\s*import\s+(?:simplejson|ujson|ruamel)\b",
    re.MULTILINE,
)

ALLOWED: dict[str, str] = {
    # The safe loader itself.
    "resolver/safedata/json_text.py": "the one JSON loader",
    "resolver/safedata/yaml_text.py": "the one YAML loader",
    # Responses of our own Kubernetes API server (TLS, authenticated): the API server only ever
    # sends JSON it has encoded itself, and the kubernetes client library parses the rest anyway.
    "pivoter/kube/client.py": "watch event lines from the API server",
    "provisioners/apply/kubeapi.py": "API server response bodies",
    "provisioners/apply/kubeerrors.py": "API server error bodies (Status objects)",
    # JSON pivoter has just written itself from data that passed safedata (sorting keys the way
    # Go maps do): never text from outside.
    "resolver/catalog/render.py": "orjson round trip of its own output",
    "pivoter/catalogserver/registry.py": "reads back Bundle.objects, which decode_bundle_object "
    "wrote with orjson after safedata's checks",
    # The parsed-catalog cache: JSON under the user's cache directory, read through the catalog
    # guard and decoded by a checker generated from the model (resolver/catalog/cache.py).
    "resolver/catalog/cache.py": "orjson parse of its own cache file, checked field by field "
    "against the model",
    # Developer tooling: the repository's own conformance fixtures and deviations file, read by
    # tests and hack scripts only (no command reads them).
    "resolver/conformance/runner.py": "the repository's conformance fixtures",
}


def loader_calls(text: str) -> list[tuple[int, str]]:
    """(line, text) of every loader call or import in ``text``, comments and strings aside."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = line.split("#", 1)[0]
        stripped = code.strip()
        if not stripped or stripped.startswith(('"', "'", "`")):
            continue
        if LOADER.search(code):
            found.append((number, line.strip()))
    return found


def test_no_yaml_or_json_loader_outside_safedata() -> None:
    offenders: list[str] = []
    seen: set[str] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relpath = path.relative_to(ROOT).as_posix()
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            calls = loader_calls(path.read_text(encoding="utf-8"))
            if not calls:
                continue
            seen.add(relpath)
            if relpath not in ALLOWED:
                offenders.extend(f"{relpath}:{line}: {code}" for line, code in calls)
    assert not offenders, (
        "parse YAML/JSON from outside with resolver.safedata (load_yaml, load_yaml_all, "
        "iter_yaml_documents, load_json, iter_json_stream), not:\n" + "\n".join(offenders)
    )
    stale = sorted(set(ALLOWED) - seen)
    assert not stale, f"allowlisted files that no longer load anything (remove them): {stale}"


def test_the_scan_catches_planted_loaders() -> None:
    planted = [
        "data = yaml.safe_load(text)",
        "docs = list(yaml.load_all(f, Loader=yaml.CSafeLoader))",
        "node = loader.get_single_node()",
        "value = json.loads(body)",
        "obj, end = decoder.raw_decode(text, 0)",
        "obj = orjson.loads(raw)",
        "from json import loads",
        "from yaml import CSafeLoader as L",
        "x = pickle.loads(blob)",
        "events = yaml.parse(chunk)",
    ]
    for line in planted:
        assert loader_calls(f"def f():\n    {line}\n"), line
    harmless = [
        "text = json.dumps(value)",
        "out = yaml.safe_dump(data)",
        "doc = safedata.load_yaml(text)  # not yaml.safe_load",
        "# yaml.safe_load would crash here",
        '"""Docs mention json.loads."""',
        "value = orjson.dumps(obj)",
    ]
    for line in harmless:
        assert not loader_calls(f"def f():\n    {line}\n"), line


# -- the expansion budget (issue 34): no entry point parses without it ----------------------------

# A text of 70 KB that becomes 64 MB through aliases: few nodes (within every node limit in the
# code), far more bytes than any text may become.
AMPLIFIER = "big: &b " + "a" * (64 << 10) + "\nl: [" + ", ".join(["*b"] * 1000) + "]\n"


def _all_limits() -> dict[str, Any]:
    """Every safedata.Limits held by a module of the three packages (all of them imported)."""
    for package in PACKAGES:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            importlib.import_module(info.name)
    found: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith(tuple(f"{p}." for p in PACKAGES)):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, safedata.Limits):
                found[f"{name}.{attr}"] = value
    return found


def test_every_limits_in_the_code_refuses_alias_amplification() -> None:
    found = _all_limits()
    for known in (
        "resolver.catalog.parse.LIMITS",
        "resolver.catalog.model.BUNDLE_OBJECT_LIMITS",
        "resolver.safedata.DEFAULT_LIMITS",
    ):
        assert known in found, f"{known} is gone: update this test's list"
    for name, limits in found.items():
        assert 0 < limits.max_expanded_bytes <= safedata.MAX_EXPANDED_BYTES, name
        with pytest.raises(safedata.SafeDataError, match="expands to more than") as caught:
            safedata.load_yaml(AMPLIFIER, limits=limits)
        assert caught.value.limit, name


def _limits_call(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "Limits"


def budget_bypasses(text: str) -> list[tuple[int, str]]:
    """(line, what) of every way ``text`` could parse without the expansion budget: the limit
    named anywhere but as an argument of ``Limits(...)`` (whose constructor refuses a budget
    switched off: an assignment, ``setattr``, ``dataclasses.replace`` would skip or defeat it),
    and the loader's internals used directly instead of its public functions."""
    found: list[tuple[int, str]] = []
    tree = ast.parse(text)
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _limits_call(node):
            allowed.update(id(k) for k in node.keywords if k.arg == "max_expanded_bytes")
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.keyword) and node.arg == "max_expanded_bytes":
            if id(node) not in allowed:
                found.append((line, "max_expanded_bytes passed to something other than Limits"))
        elif isinstance(node, ast.Attribute) and node.attr == "max_expanded_bytes":
            if isinstance(node.ctx, ast.Store | ast.Del):
                found.append((line, "max_expanded_bytes assigned"))
        elif isinstance(node, ast.Constant) and node.value == "max_expanded_bytes":
            found.append((line, "max_expanded_bytes named in a string (setattr?)"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            ("resolver.safedata.yaml_text", "resolver.safedata.json_text")
        ):
            found.append((line, f"imports the loader's internals ({node.module})"))
        elif isinstance(node, ast.Attribute) and node.attr in ("yaml_text", "json_text"):
            found.append((line, f"uses the loader's internals ({node.attr})"))
        elif isinstance(node, ast.Name | ast.Attribute) and (
            getattr(node, "id", None) in ("_documents", "_parser")
            or getattr(node, "attr", None) in ("_documents", "_parser")
        ):
            found.append((line, "calls the loader's event loop directly"))
    return found


def test_nothing_parses_around_the_expansion_budget() -> None:
    offenders: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relpath = path.relative_to(ROOT).as_posix()
            if relpath.startswith("resolver/safedata/") or path.name.endswith("_pb2.py"):
                continue
            for line, what in budget_bypasses(path.read_text(encoding="utf-8")):
                offenders.append(f"{relpath}:{line}: {what}")
    assert not offenders, (
        "parse external YAML with the expansion budget (safedata.Limits' max_expanded_bytes, "
        "set only through its constructor) and the public loader functions:\n"
        + "\n".join(offenders)
    )


def test_the_budget_scan_catches_planted_bypasses() -> None:
    planted = [
        "object.__setattr__(limits, 'max_expanded_bytes', 1 << 60)",
        "limits.max_expanded_bytes = 0",
        "limits = dataclasses.replace(LIMITS, max_expanded_bytes=0)",
        "from resolver.safedata.yaml_text import _documents",
        "values = yaml_text._documents(parser, limits, False, 0, None)",
        "setattr(limits, 'max_expanded_bytes', 0)",
    ]
    for line in planted:
        assert budget_bypasses(f"def f():\n    {line}\n"), line
    harmless = [
        "LIMITS = safedata.Limits(max_nodes=10, max_expanded_bytes=1 << 20)",
        "print(limits.max_expanded_bytes)",
        "doc = safedata.load_yaml(text, limits=LIMITS)",
    ]
    for line in harmless:
        assert not budget_bypasses(f"def f():\n    {line}\n"), line


def test_catalog_entry_points_parse_within_the_files_budget(tmp_path: Path) -> None:
    """Each document below stays within every per-text limit (26 MB of the 32 MiB a document may
    become); the file's memory budget (16 times its 68 KB, plus 16 KiB) is what refuses it, in
    every way a catalog file is read: directory loads (here and in workers), served loads,
    ``catalog test``'s file-by-file reads, and manifests inlined in a bundle."""
    from resolver.catalog import load, parse
    from resolver.catalog.errors import CatalogLoadError
    from resolver.catalog.model import decode_bundle_object

    scalar = "a" * (64 << 10)
    text = f"schema: x.custom\nname: x\nbig: &b {scalar}\nl: [" + ", ".join(["*b"] * 400) + "]\n"
    safedata.load_yaml(text, limits=parse.LIMITS)  # alone, within the per-text limits
    root = tmp_path / "cat"
    root.mkdir()
    (root / "x.yaml").write_text(text)
    (root / "y.yaml").write_text("schema: x.other\nname: other\n")
    loads: dict[str, Callable[[], object]] = {
        "here": lambda: load.load_directory(root, use_cache=False, workers=1),
        "workers": lambda: load.load_directory(
            root, use_cache=False, workers=2, parallel_min_bytes=0
        ),
        "served": lambda: load.load_served(root, use_cache=False, workers=1),
    }
    for how, run in loads.items():
        with pytest.raises(CatalogLoadError) as caught:
            run()
        (problem,) = caught.value.problems
        assert "alias bomb" in problem.message, how
        assert "memory budget" in problem.message, how
    _, problems = load.load_file_objects(text, "x.yaml")
    assert "memory budget" in problems[0].message
    data = base64.b64encode(text.encode()).decode()
    with safedata.spending(load.file_budget(len(data))), pytest.raises(ValueError, match="budget"):
        decode_bundle_object({"data": data})
