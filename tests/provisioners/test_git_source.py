"""The git source against real git servers on loopback (http-backend over http/https, sshd)."""

from __future__ import annotations

import http.server
import os
import pwd
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from provisioners.errors import (
    AuthenticationError,
    InvalidSourceError,
    SourceNotFoundError,
    SourceUnavailableError,
    TlsVerificationError,
)
from provisioners.formats import format_for
from provisioners.sources import FetchOptions, GitAuth, GitRef, GitSpec, fetch
from provisioners.unpack import UnsafeLinkError
from tests.provisioners.git_servers import (
    Repo,
    SshServer,
    git,
    make_repo,
    run_sshd,
    serve_git_http,
)
from tests.provisioners.servers import Tls, serve_http

USER, PASSWORD = "gituser", "git-pass"
OPTIONS = FetchOptions(timeout_seconds=10, deadline_seconds=60)


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of bare repositories: public.git, private.git, evil.git."""
    root = tmp_path_factory.mktemp("git-repos")
    make_repo(root, "public")
    make_repo(root, "private")
    evil_work = root / "evil-work"
    (evil_work / "manifests").mkdir(parents=True)
    (evil_work / "manifests" / "passwd.yaml").symlink_to("/etc/passwd")
    git("init", "--quiet", "--initial-branch=main", cwd=evil_work)
    git("add", "-A", cwd=evil_work)
    git("commit", "--quiet", "-m", "evil", cwd=evil_work)
    git("clone", "--quiet", "--bare", str(evil_work), str(root / "evil.git"))
    return root


@pytest.fixture(scope="module")
def repo_info(repos: Path) -> Repo:
    """Commit ids of public.git."""
    bare = repos / "public.git"
    return Repo(bare, git("rev-parse", "v1^{commit}", cwd=bare), git("rev-parse", "main", cwd=bare))


@pytest.fixture(scope="module")
def git_http(repos: Path) -> Iterator[str]:
    """Anonymous git over plain http."""
    with serve_git_http(repos) as url:
        yield url


@pytest.fixture(scope="module")
def git_https_private(repos: Path, tls: Tls) -> Iterator[str]:
    """git over https with basic auth, certificate from the test CA."""
    with serve_git_http(repos, credentials=(USER, PASSWORD), tls=tls) as url:
        yield url


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshServer]:
    """A test sshd on loopback with key auth."""
    with run_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def _names(root: Path) -> list[str]:
    return [o["metadata"]["name"] for o in format_for("plain+v0").convert(root).objects]


def _ssh_url(sshd: SshServer, repo: Path) -> str:
    return f"ssh://{pwd.getpwuid(os.getuid()).pw_name}@127.0.0.1:{sshd.port}{repo}"


def test_branch_tag_and_commit(git_http: str, repo_info: Repo, tmp_path: Path) -> None:
    url = f"{git_http}/public.git"
    cases = [
        (GitRef(branch="main"), repo_info.second, "second"),
        (GitRef(branch="dev"), repo_info.second, "second"),
        (GitRef(tag="v1"), repo_info.first, "first"),
        (GitRef(commit=repo_info.first), repo_info.first, "first"),
    ]
    for index, (ref, commit, name) in enumerate(cases):
        dest = tmp_path / f"b{index}"
        dest.mkdir()
        result = fetch(GitSpec(url, ref, directory="bundle"), dest, OPTIONS)
        assert result.revision == commit
        assert result.resolved_source == {
            "type": "git",
            "git": {"repository": url, "ref": {"commit": commit}, "directory": "bundle"},
        }
        assert _names(dest) == [name]
        assert not (dest / ".git").exists()
        assert bool(result.warnings) == (ref.branch is not None)


def test_repository_root_is_the_default_directory(git_http: str, dest: Path) -> None:
    fetch(GitSpec(f"{git_http}/public.git", GitRef(branch="main")), dest, OPTIONS)
    assert _names(dest) == ["root"]
    assert (dest / "bundle" / "manifests" / "cm.yaml").is_file()


def test_missing_repository_ref_and_directory(git_http: str, dest: Path) -> None:
    with pytest.raises(SourceNotFoundError, match="repository does not exist"):
        fetch(GitSpec(f"{git_http}/nope.git", GitRef(branch="main")), dest, OPTIONS)
    with pytest.raises(SourceNotFoundError, match="ref does not exist"):
        fetch(GitSpec(f"{git_http}/public.git", GitRef(branch="nope")), dest, OPTIONS)
    with pytest.raises(SourceNotFoundError, match="commit"):
        fetch(GitSpec(f"{git_http}/public.git", GitRef(commit="1" * 40)), dest, OPTIONS)
    with pytest.raises(SourceNotFoundError, match="directory 'nowhere' does not exist"):
        fetch(
            GitSpec(f"{git_http}/public.git", GitRef(tag="v1"), directory="nowhere"), dest, OPTIONS
        )


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        (GitSpec("file:///etc", GitRef(branch="main")), "must be an https, http, ssh or git URL"),
        (GitSpec("ext::sh -c touch% /tmp/pwned", GitRef(branch="main")), "must be an https"),
        (GitSpec("/srv/repo.git", GitRef(branch="main")), "must be an https"),
        (GitSpec("https://h/r.git", GitRef()), "exactly one"),
        (GitSpec("https://h/r.git", GitRef(branch="a", tag="b")), "exactly one"),
        (GitSpec("https://h/r.git", GitRef(commit="abc")), "full 40-character"),
        (GitSpec("https://h/r.git", GitRef(branch="--upload-pack=x")), "invalid git branch"),
        (GitSpec("https://h/r.git", GitRef(branch="m"), directory="../up"), "'..'"),
        (GitSpec("https://h/r.git", GitRef(branch="m"), directory="/abs"), "relative"),
        (GitSpec("ssh://git@h/r.git", GitRef(branch="m")), "needs known hosts"),
    ],
)
def test_invalid_specs(spec: GitSpec, match: str, dest: Path) -> None:
    with pytest.raises(InvalidSourceError, match=match):
        fetch(spec, dest, OPTIONS)


def test_repository_symlink_leaving_the_bundle_is_refused(git_http: str, dest: Path) -> None:
    with pytest.raises(UnsafeLinkError, match="absolute"):
        fetch(GitSpec(f"{git_http}/evil.git", GitRef(branch="main")), dest, OPTIONS)


def test_https_basic_auth(git_https_private: str, tls: Tls, dest: Path) -> None:
    url = f"{git_https_private}/private.git"
    ref = GitRef(tag="v1")
    with pytest.raises(AuthenticationError, match="authentication failed"):
        fetch(GitSpec(url, ref, "bundle", GitAuth(ca_pem=tls.ca_pem)), dest, OPTIONS)
    wrong = GitAuth(username=USER, password="wrong", ca_pem=tls.ca_pem)
    with pytest.raises(AuthenticationError, match="authentication failed"):
        fetch(GitSpec(url, ref, "bundle", wrong), dest, OPTIONS)
    untrusted = GitAuth(username=USER, password=PASSWORD)
    with pytest.raises(TlsVerificationError, match="not trusted"):
        fetch(GitSpec(url, ref, "bundle", untrusted), dest, OPTIONS)
    auth = GitAuth(username=USER, password=PASSWORD, ca_pem=tls.ca_pem)
    result = fetch(GitSpec(url, ref, "bundle", auth), dest, OPTIONS)
    assert _names(dest) == ["first"]
    assert PASSWORD not in repr(result)
    assert PASSWORD not in repr(auth)


def test_ssh_key_and_known_hosts(sshd: SshServer, repos: Path, dest: Path) -> None:
    url = _ssh_url(sshd, repos / "private.git")
    auth = GitAuth(ssh_private_key=sshd.client_key, ssh_known_hosts=sshd.known_hosts)
    result = fetch(GitSpec(url, GitRef(branch="main"), "bundle", auth), dest, OPTIONS)
    assert result.revision == git("rev-parse", "main", cwd=repos / "private.git")
    assert _names(dest) == ["second"]


def test_ssh_failures(sshd: SshServer, repos: Path, tmp_path: Path) -> None:
    url = _ssh_url(sshd, repos / "private.git")
    stranger = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    impostor = ed25519.Ed25519PrivateKey.generate().public_key()
    wrong_host = (
        f"[127.0.0.1]:{sshd.port} ".encode()
        + impostor.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        + b"\n"
    )
    cases = [
        (GitAuth(ssh_known_hosts=sshd.known_hosts), "authentication failed"),
        (
            GitAuth(ssh_private_key=stranger, ssh_known_hosts=sshd.known_hosts),
            "authentication failed",
        ),
        (GitAuth(ssh_private_key=sshd.client_key, ssh_known_hosts=wrong_host), "host key"),
    ]
    for index, (auth, match) in enumerate(cases):
        dest = tmp_path / f"d{index}"
        dest.mkdir()
        with pytest.raises(AuthenticationError, match=match):
            fetch(GitSpec(url, GitRef(branch="main"), "bundle", auth), dest, OPTIONS)
    dest = tmp_path / "missing"
    dest.mkdir()
    auth = GitAuth(ssh_private_key=sshd.client_key, ssh_known_hosts=sshd.known_hosts)
    missing = _ssh_url(sshd, repos / "missing.git")
    with pytest.raises(SourceNotFoundError, match="repository does not exist"):
        fetch(GitSpec(missing, GitRef(branch="main"), "bundle", auth), dest, OPTIONS)


@pytest.mark.tools  # the git source runs git
def test_stalled_git_server_times_out(dest: Path) -> None:
    release = threading.Event()

    class Stall(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            release.wait(30)

        def log_message(self, *_: object) -> None:
            pass

    with serve_http(Stall) as url:
        try:
            with pytest.raises(SourceUnavailableError, match="could not be reached or failed"):
                fetch(
                    GitSpec(f"{url}/slow.git", GitRef(branch="main")),
                    dest,
                    FetchOptions(timeout_seconds=2, deadline_seconds=60),
                )
        finally:
            release.set()
