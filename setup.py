"""Build hook: generate the gRPC/protobuf stubs of ``proto/*.proto`` before packaging.

Metadata lives in pyproject.toml; this file only extends ``build_py`` so that every build --
a wheel, an sdist install, and the editable install ``hack/bootstrap.sh`` does -- runs
``grpc_tools.protoc`` (grpcio-tools is a build requirement) and writes
``resolver/catalog/registryapi/<name>_pb2.py``, ``_pb2.pyi`` and ``_pb2_grpc.py`` into the source
tree (they are git-ignored). The stubs live under ``resolver`` so both the client
(``resolver.catalog.sources``) and the server (``pivoter.catalogserver``) can import them without
``resolver`` ever importing ``pivoter``.

Run by hand after editing a .proto: ``python setup.py build_py`` (or re-run hack/bootstrap.sh).
"""

from __future__ import annotations

import re
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROTO_DIR = ROOT / "proto"
STUB_PACKAGE = ROOT / "resolver" / "catalog" / "registryapi"


def generate_stubs() -> None:
    """Compile every proto/*.proto into STUB_PACKAGE, with package-relative imports."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    for proto in sorted(PROTO_DIR.glob("*.proto")):
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_DIR}",
            f"-I{well_known}",
            f"--python_out={STUB_PACKAGE}",
            f"--pyi_out={STUB_PACKAGE}",
            f"--grpc_python_out={STUB_PACKAGE}",
            str(proto),
        ]
        if protoc.main(args) != 0:
            raise SystemExit(f"protoc failed on {proto}")
        # protoc writes "import registry_pb2", which only works with the output dir on sys.path.
        grpc_stub = STUB_PACKAGE / f"{proto.stem}_pb2_grpc.py"
        text = grpc_stub.read_text()
        text = re.sub(r"^import (\w+_pb2) as", r"from . import \1 as", text, flags=re.M)
        grpc_stub.write_text(text)
        # protoc's .pyi writes bare ``Mapping`` for message-typed init arguments, which mypy's
        # strict mode (on for resolver/) rejects; the file is generated, so silence that code.
        pyi = STUB_PACKAGE / f"{proto.stem}_pb2.pyi"
        pyi.write_text('# mypy: disable-error-code="type-arg"\n' + pyi.read_text())


class BuildPyWithStubs(build_py):
    """``build_py`` that generates the protobuf stubs first."""

    def run(self) -> None:
        generate_stubs()
        super().run()


setup(cmdclass={"build_py": BuildPyWithStubs})
