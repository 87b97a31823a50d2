"""Build hook: what a build generates before packaging -- the gRPC stubs, the build's identity and
a copy of ``deploy/`` -- so that the wheel stands alone.

Metadata lives in pyproject.toml (the version comes from git through setuptools-scm); this file
only extends ``build_py`` (and ``sdist``) so that every build -- a wheel, an sdist, and the editable
install ``hack/bootstrap.sh`` does -- writes, into the source tree, files that are git-ignored:

- ``resolver/catalog/registryapi/<name>_pb2.py``, ``_pb2.pyi`` and ``_pb2_grpc.py``, compiled from
  ``proto/*.proto`` by ``grpc_tools.protoc`` (grpcio-tools is a build requirement). The stubs live
  under ``resolver`` so both the client (``resolver.catalog.sources``) and the server
  (``pivoter.catalogserver``) can import them without ``resolver`` ever importing ``pivoter``.
- ``pivoter/_version.py``: the version setuptools-scm found, the commit and the build date, read
  by :mod:`pivoter.buildinfo`. Where there is no git (the image's build context, an sdist) the
  commit comes from ``$PIVOTER_BUILD_COMMIT`` or from the ``_version.py`` an sdist carries; the
  date is ``$SOURCE_DATE_EPOCH`` when set, else the commit's date, so a rebuild is identical.
- ``pivoter/install/deploy/*.yaml``: a copy of ``deploy/`` (which stays the source of truth), the
  manifests ``pivoter install`` renders when it runs from a wheel.

Run by hand after editing a .proto: ``python setup.py build_py`` (or re-run hack/bootstrap.sh).
``hack/bootstrap.sh`` calls :func:`refresh_build_info` when HEAD moves, so an editable install
reports the commit it runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
PROTO_DIR = ROOT / "proto"
STUB_PACKAGE = ROOT / "resolver" / "catalog" / "registryapi"
VERSION_MODULE = ROOT / "pivoter" / "_version.py"
DEPLOY_SOURCE = ROOT / "deploy"
DEPLOY_COPY = ROOT / "pivoter" / "install" / "deploy"
UNKNOWN = "unknown"
FALLBACK_VERSION = "0.0.0+unknown"  # pivoter.buildinfo.UNKNOWN_VERSION
PRETEND = ("SETUPTOOLS_SCM_PRETEND_VERSION_FOR_PIVOTER", "SETUPTOOLS_SCM_PRETEND_VERSION")


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


def _git(*args: str) -> str | None:
    """Output of ``git ARGS`` in this source tree when it is a git checkout of its own, else None
    (an unpacked sdist inside some other repository must not take that repository's commit)."""
    if not (ROOT / ".git").exists():
        return None
    try:
        result = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        )
    except OSError:  # no git on this machine
        return None
    return (result.stdout.strip() or None) if result.returncode == 0 else None


def _recorded() -> dict[str, str]:
    """What an earlier build wrote into ``_version.py`` (an sdist carries it), else nothing."""
    try:
        text = VERSION_MODULE.read_text()
    except OSError:
        return {}
    return dict(re.findall(r'^(VERSION|COMMIT|DATE) = "([^"]*)"$', text, flags=re.M))


def _build_date(commit_epoch: str | None) -> str | None:
    epoch = os.environ.get("SOURCE_DATE_EPOCH") or commit_epoch
    if not epoch:
        return None
    return datetime.fromtimestamp(int(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_build_info(version: str) -> None:
    """Write ``pivoter/_version.py`` for ``version``, with the commit and the build date."""
    recorded = _recorded()
    same = recorded.get("VERSION") == version
    commit = os.environ.get("PIVOTER_BUILD_COMMIT") or _git("rev-parse", "HEAD")
    commit = commit or (recorded.get("COMMIT") if same else None) or UNKNOWN
    date = _build_date(_git("show", "-s", "--format=%ct", "HEAD"))
    date = date or (recorded.get("DATE") if same else None) or UNKNOWN
    text = (
        '"""The build\'s identity, written by setup.py at build time (git-ignored); read it\n'
        'through :mod:`pivoter.buildinfo`."""\n\n'
        f'VERSION = "{version}"\n'
        f'COMMIT = "{commit}"\n'
        f'DATE = "{date}"\n'
    )
    if recorded != {"VERSION": version, "COMMIT": commit, "DATE": date}:
        VERSION_MODULE.write_text(text)


def refresh_build_info() -> None:
    """Rewrite ``_version.py`` for the checkout as it is now (hack/bootstrap.sh, when HEAD moved:
    an editable install is not rebuilt on every commit). Needs setuptools-scm (a dev extra)."""
    from setuptools_scm import get_version

    try:
        version = get_version(root=str(ROOT))
    except LookupError:
        version = FALLBACK_VERSION
    write_build_info(version)


def copy_deploy() -> None:
    """Copy ``deploy/*.yaml`` to the package data ``pivoter/install/deploy/`` (git-ignored)."""
    sources = sorted(DEPLOY_SOURCE.glob("*.yaml"))
    if not sources:
        if (DEPLOY_COPY / "kustomization.yaml").is_file():
            return  # an unpacked sdist without deploy/ that carries the copy already
        raise SystemExit(f"no deploy/*.yaml in {ROOT}: the wheel would lack its manifests")
    if DEPLOY_COPY.exists():
        shutil.rmtree(DEPLOY_COPY)
    DEPLOY_COPY.mkdir(parents=True)
    for source in sources:
        shutil.copy2(source, DEPLOY_COPY / source.name)


class BuildPyWithGenerated(build_py):
    """``build_py`` that writes the stubs, the version module and the deploy copy first."""

    def run(self) -> None:
        generate_stubs()
        write_build_info(self.distribution.get_version())
        copy_deploy()
        super().run()


class SdistWithBuildInfo(sdist):
    """``sdist`` that writes the version module first, so the sdist carries the commit and date
    (a wheel built from it has no git to ask)."""

    def run(self) -> None:
        write_build_info(self.distribution.get_version())
        super().run()


def pretend_unknown_without_git() -> None:
    """A tree without git metadata (a tarball of the sources; an sdist has PKG-INFO) builds as
    FALLBACK_VERSION instead of failing: setuptools-scm takes a pretended version from the
    environment, unless the caller set one (the image's build passes the real one)."""
    if (ROOT / ".git").exists() or (ROOT / "PKG-INFO").exists():
        return
    if not any(os.environ.get(name) for name in PRETEND):
        os.environ[PRETEND[0]] = FALLBACK_VERSION


if __name__ == "__main__":
    pretend_unknown_without_git()
    setup(cmdclass={"build_py": BuildPyWithGenerated, "sdist": SdistWithBuildInfo})
