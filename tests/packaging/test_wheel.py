"""The wheel stands alone: installed into a clean virtualenv outside the repository (and with
pipx), the commands a catalog maintainer and a cluster admin run work from it, with no file of the
checkout on ``sys.path`` (issue 30).

The wheel and sdist are made as a release makes them: ``hack/release.sh VERSION --no-image`` in a
clean clone (:mod:`tests.packaging.clones`) whose HEAD carries a tag (the clone's own, v1.2.3,
unless HEAD has one), which also writes the Python SBOM, install.yaml by tag and the checksums.
test_release.py builds a development version (no tag at HEAD) with the image. The virtualenv gets
exactly requirements.lock and the wheel; pip fetches them as it does for the image (its cache,
the index), about 20 s.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.packaging.clones import REPO, git, snapshot_clone

pytestmark = [pytest.mark.slow, pytest.mark.tools, pytest.mark.timeout(900)]

DATA = REPO / "tests" / "data"
PIPX = "pipx==1.18.4"


@dataclass(frozen=True)
class Release:
    """What ``hack/release.sh VERSION --no-image`` made, and what it was made from."""

    dist: Path
    version: str
    commit: str
    date: str
    """The commit's date, RFC 3339 UTC: the build date of a build without SOURCE_DATE_EPOCH."""
    source: Path
    """The clean clone it was built in."""

    @property
    def wheel(self) -> Path:
        (wheel,) = self.dist.glob("pivoter-*.whl")
        return wheel

    @property
    def sdist(self) -> Path:
        (sdist,) = self.dist.glob("pivoter-*.tar.gz")
        return sdist


def _clean_env(home: Path) -> dict[str, str]:
    """The environment of a user outside the repository: no virtualenv active, nothing of the
    checkout importable, no cluster."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"VIRTUAL_ENV", "PYTHONPATH", "KUBECONFIG", "SOURCE_DATE_EPOCH"}
    }
    env.update(
        HOME=str(home),
        PIVOTER_CACHE=str(home / "cache"),
        KUBECONFIG=str(home / "no-kubeconfig"),
        NO_COLOR="1",
    )
    return env


def _run(
    *args: str | Path, cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    top = tmp_path_factory.mktemp("wheel")
    source = snapshot_clone(top / "src")
    tags = git("tag", "--points-at", "HEAD", "--list", "v*", cwd=source).split()
    if not tags:
        tags = ["v1.2.3"]
        git("tag", tags[0], cwd=source)  # in the clone only
    dist = top / "dist"
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    result = _run(
        source / "hack/release.sh", tags[0], "--no-image", "--out", dist,
        cwd=source, env=env, timeout=800,
    )  # fmt: skip
    assert result.returncode == 0, f"hack/release.sh failed:\n{result.stderr[-6000:]}"
    assert result.stdout.strip().splitlines()[-1] == tags[0].removeprefix("v")
    commit = git("rev-parse", "HEAD", cwd=source).strip()
    epoch = int(git("show", "-s", "--format=%ct", "HEAD", cwd=source))
    date = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    version = result.stdout.strip().splitlines()[-1]
    for path in sorted(dist.iterdir()):
        print(f"\n{path.name}: {path.stat().st_size / 1e3:.0f} kB", end="")
    return Release(dist, version, commit, date, source)


@dataclass(frozen=True)
class Installed:
    """The wheel installed somewhere outside the repository, and how to run its ``pivoter``."""

    pivoter: Path
    python: Path
    home: Path
    env: dict[str, str]

    def run(self, *args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """``pivoter ARGS`` from a directory outside the repository."""
        return _run(self.pivoter, *args, cwd=self.home, env=self.env, timeout=timeout)


@pytest.fixture(scope="module")
def installed(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """requirements.lock and the wheel in a new virtualenv (pip check: nothing missing)."""
    home = tmp_path_factory.mktemp("user")
    env = _clean_env(home)
    venv = home / "venv"
    _ok(_run(sys.executable, "-m", "venv", venv, cwd=home, env=env))
    pip = (venv / "bin/python", "-m", "pip", "install", "--quiet", "--no-deps")
    lock = release.source / "requirements.lock"
    _ok(_run(*pip, "--require-hashes", "-r", lock, cwd=home, env=env, timeout=600))
    _ok(_run(*pip, release.wheel, cwd=home, env=env))
    _ok(_run(venv / "bin/python", "-m", "pip", "check", cwd=home, env=env))
    return Installed(venv / "bin/pivoter", venv / "bin/python", home, env)


def test_the_wheel_carries_its_data_and_the_sdist_its_identity(release: Release) -> None:
    names = set(zipfile.ZipFile(release.wheel).namelist())
    deploy = sorted(p.name for p in (release.source / "deploy").glob("*.yaml"))
    assert "kustomization.yaml" in deploy
    for name in deploy:
        assert f"pivoter/install/deploy/{name}" in names
    for stub in ("registry_pb2.py", "registry_pb2_grpc.py", "registry_pb2.pyi"):
        assert f"resolver/catalog/registryapi/{stub}" in names
    for package in ("pivoter", "resolver", "provisioners"):
        assert f"{package}/py.typed" in names
    assert "pivoter/_version.py" in names
    # Every UI asset of the packages (none today: the catalog UI is written by Python).
    assets = {
        str(path.relative_to(release.source))
        for package in ("pivoter", "resolver", "provisioners")
        for pattern in ("*.html", "*.css", "*.js")
        for path in (release.source / package).rglob(pattern)
    }
    assert assets <= names
    # The sdist carries the version module, so a wheel built from it (no git) knows its commit.
    with tarfile.open(release.sdist) as sdist:
        prefix = f"pivoter-{release.version}/"
        members = set(sdist.getnames())
        assert f"{prefix}pivoter/_version.py" in members
        assert f"{prefix}deploy/kustomization.yaml" in members
        text = sdist.extractfile(f"{prefix}pivoter/_version.py").read().decode()  # type: ignore[union-attr]
    assert f'COMMIT = "{release.commit}"' in text


def test_a_tagged_commit_has_the_tags_version(release: Release) -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", release.version), release.version
    assert release.wheel.name == f"pivoter-{release.version}-py3-none-any.whl"


def test_a_version_that_is_not_the_tag_is_refused(release: Release) -> None:
    result = _run(
        release.source / "hack/release.sh", "0.0.1", "--no-image", "--out", release.source / "x",
        cwd=release.source, env=dict(os.environ),
    )  # fmt: skip
    assert result.returncode != 0
    assert "VERSION 0.0.1 is not the tag at HEAD" in result.stderr
    assert not (release.source / "x").exists()


def test_a_tree_without_git_builds_as_unknown(release: Release, tmp_path: Path) -> None:
    """A tarball of the sources (no .git, no PKG-INFO) builds, as 0.0.0+unknown, never a crash."""
    tree = tmp_path / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=release.source, capture_output=True,
        check=True,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    key = hashlib.sha256((release.source / "requirements-build.lock").read_bytes()).hexdigest()
    cache = Path(os.environ.get("PIVOTER_CACHE") or Path.home() / ".cache" / "pivoter")
    build_python = cache / "release" / f"build-{key[:16]}" / "bin" / "python"  # hack/release.sh's
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SETUPTOOLS_SCM", "PIVOTER_B"))}
    _ok(_run(build_python, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
             "--wheel-dir", tmp_path / "out", tree, cwd=tmp_path, env=env))  # fmt: skip
    (wheel,) = (tmp_path / "out").glob("*.whl")
    assert wheel.name == "pivoter-0.0.0+unknown-py3-none-any.whl"
    text = zipfile.ZipFile(wheel).read("pivoter/_version.py").decode()
    assert 'COMMIT = "unknown"' in text


def test_help_and_version_from_outside_the_repository(
    release: Release, installed: Installed
) -> None:
    where = _ok(_run(installed.python, "-c", "import pivoter; print(pivoter.__file__)",
                     cwd=installed.home, env=installed.env))  # fmt: skip
    assert Path(where.strip()).is_relative_to(installed.home / "venv")
    assert "catalog" in _ok(installed.run("--help"))
    assert _ok(installed.run("--version")).strip() == f"pivoter {release.version}"
    info = json.loads(_ok(installed.run("version", "-o", "json")))
    assert (info["pivoter"], info["commit"], info["date"]) == (
        release.version,
        release.commit,
        release.date,
    )


def test_catalog_validate_and_test(installed: Installed) -> None:
    good = DATA / "channeltest" / "good"
    assert "valid" in _ok(installed.run("catalog", "validate", good)).lower()
    tested = installed.run(
        "catalog", "test", good, "--expect", DATA / "channeltest" / "expect-good.yaml"
    )
    assert "ERRORS (0)" in _ok(tested)
    broken = installed.run("catalog", "validate", DATA / "channeltest" / "every-code")
    assert broken.returncode == 3, broken.stderr


def test_resolve(installed: Installed) -> None:
    out = installed.run(
        "resolve",
        "--catalog", DATA / "resolver" / "community",
        "--package", "rabbitmq-messaging-topology-operator",
        "-o", "yaml",
    )  # fmt: skip
    bundles = {b["package"]: b["bundle"] for b in yaml.safe_load(_ok(out))["bundles"]}
    assert bundles["rabbitmq-cluster-operator"] == "rabbitmq-cluster-operator.v2.22.3"


def test_catalog_serve_answers(installed: Installed) -> None:
    good = DATA / "channeltest" / "good"
    with subprocess.Popen(
        [str(installed.pivoter), "catalog", "serve", str(good), "--grpc-port", "0",
         "--http-port", "0"],
        cwd=installed.home, env=installed.env, stderr=subprocess.PIPE, text=True,
    ) as process:  # fmt: skip
        assert process.stderr is not None
        url = None
        for line in process.stderr:
            found = re.search(r"serving HTTP (http://\S+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "catalog serve printed no HTTP address"
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read().decode()
        packages = [json.loads(line) for line in body.splitlines() if line.strip()]
        assert {"schema": "olm.package", "name": "demo"}.items() <= next(
            p for p in packages if p["schema"] == "olm.package"
        ).items()
        process.terminate()


def test_adopt_without_a_cluster_says_so(installed: Installed) -> None:
    for args in (("--check", "--all"), ("--dry-run", "--subscription", "ns/name")):
        result = installed.run("adopt", *args)
        assert result.returncode == 1, result.stdout
        assert "no kubeconfig given" in result.stderr
        assert "Traceback" not in result.stderr


def test_install_dry_run_renders_the_release(release: Release, installed: Installed) -> None:
    objects = list(yaml.safe_load_all(_ok(installed.run("install", "--dry-run", "-o", "yaml"))))
    kinds = {o["kind"] for o in objects if o}
    assert {"CustomResourceDefinition", "Deployment", "Namespace"} <= kinds
    tag = release.version.replace("+", "-")
    images = {
        container["image"]
        for o in objects
        if o and o["kind"] == "Deployment"
        for container in o["spec"]["template"]["spec"]["containers"]
    }
    assert images == {f"ghcr.io/pivoter/pivoter:{tag}"}
    # The release's own install.yaml (no image: by tag) is the same rendering.
    assert list(yaml.safe_load_all((release.dist / "install.yaml").read_text())) == objects


@pytest.fixture(scope="module")
def pipx_installed(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pipx install WHEEL`` with pipx from a throwaway virtualenv; the ``pivoter`` it links."""
    home = tmp_path_factory.mktemp("pipx-user")
    env = _clean_env(home)
    env.update(PIPX_HOME=str(home / "pipx"), PIPX_BIN_DIR=str(home / "bin"))
    tools = home / "tools"
    _ok(_run(sys.executable, "-m", "venv", tools, cwd=home, env=env))
    _ok(_run(tools / "bin/pip", "install", "--quiet", PIPX, cwd=home, env=env))
    _ok(_run(tools / "bin/pipx", "install", release.wheel, cwd=home, env=env, timeout=600))
    return home / "bin" / "pivoter"


def test_pipx_install_runs(release: Release, pipx_installed: Path) -> None:
    home = pipx_installed.parents[1]
    env = _clean_env(home)
    info = json.loads(_ok(_run(pipx_installed, "version", "-o", "json", cwd=home, env=env)))
    assert (info["pivoter"], info["commit"]) == (release.version, release.commit)
    good = DATA / "channeltest" / "good"
    _ok(_run(pipx_installed, "catalog", "validate", good, cwd=home, env=env))
