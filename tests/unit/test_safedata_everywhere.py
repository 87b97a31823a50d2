"""Every YAML/JSON text from outside goes through resolver.safedata: no other loader call in the
source tree, except the few below, each for input that is genuinely trusted."""

from __future__ import annotations

import re
from pathlib import Path

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
    # The parsed-catalog cache: our own pickle under the user's cache directory, read through an
    # unpickler that admits only the catalog model's classes (resolver/catalog/cache.py).
    "resolver/catalog/cache.py": "restricted unpickler of its own cache file",
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
