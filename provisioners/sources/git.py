"""The git source: fetch one branch, tag or commit and unpack a directory of it (rukpak
``source.git``).

Shells out to the ``git`` CLI in a sanitized environment: no system or global config, no
terminal prompts, only the http(s), ssh and git protocols (never ``ext::`` or local paths), no
hooks. Every git process of a fetch shares one overall deadline (``deadline_seconds``) and runs
in its own process group, killed whole when the deadline passes (a server that drips bytes keeps
git's low-speed check happy, not the deadline). https credentials reach git through an askpass
helper that reads them from the environment (never the command line or a config file) and answers
only prompts for the repository's own scheme and host, so a redirect to another host or to plain
http gets nothing; they are refused over plain http to a host other than loopback unless
``allow_plain_http_credentials`` is set. ssh uses the given private key and known hosts with
strict host key checking. The tree is exported with ``git archive`` and
goes through :class:`provisioners.unpack.Unpacker`, so repository symlinks that leave the bundle
are refused like any other archive's. Called via :func:`provisioners.sources.fetch`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from provisioners.errors import (
    AuthenticationError,
    InvalidSourceError,
    SourceError,
    SourceNotFoundError,
    SourceUnavailableError,
    TlsVerificationError,
)
from provisioners.sources.base import FetchOptions, FetchResult
from provisioners.unpack import Compression, Unpacker
from resolver.net import (
    Budget,
    InsecureCredentials,
    InvalidCredential,
    basic_credential,
    check_credential_transport,
)

GIT_CREDENTIALS_OPT_IN = "spec.source.git.auth.insecureSendCredentials"
"""The field that allows a username/password over plain http to another machine."""

_COMMIT = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""A character no argument of git may hold (a NUL cannot even be passed to ``exec``)."""
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!//)")
_ASKPASS = """#!/bin/sh
# Answer only prompts for the repository's own origin: git names it as 'scheme://[user@]host'.
url=${1#*"'"}
url=${url%"'"*}
scheme=${url%%://*}
host=${url#*://}
host=${host##*@}
host=${host%%/*}
[ "$scheme" = "$PIVOTER_GIT_SCHEME" ] && [ "$host" = "$PIVOTER_GIT_HOST" ] || exit 1
case "$1" in
  Username*) [ -n "${PIVOTER_GIT_USERNAME+x}" ] || exit 1; printf '%s\\n' "$PIVOTER_GIT_USERNAME" ;;
  Password*) [ -n "${PIVOTER_GIT_PASSWORD+x}" ] || exit 1; printf '%s\\n' "$PIVOTER_GIT_PASSWORD" ;;
  *) exit 1 ;;
esac
"""
# stderr fragments -> (error type, what it means). First match wins; order matters.
_DIAGNOSES: tuple[tuple[tuple[str, ...], type[SourceError], str], ...] = (
    (
        ("host key verification failed", "remote host identification has changed"),
        AuthenticationError,
        "the ssh host key is not in the given known hosts",
    ),
    (
        ("ssl certificate problem", "server certificate verification failed", "certificate verify"),
        TlsVerificationError,
        "the server's TLS certificate is not trusted; give the CA that signed it",
    ),
    (
        (
            "could not read username",
            "could not read password",
            "authentication failed",
            "permission denied (publickey",
            "terminal prompts disabled",
            "http basic: access denied",
            "returned error: 401",
            "returned error: 403",
        ),
        AuthenticationError,
        "authentication failed: the repository needs credentials that were missing or rejected",
    ),
    (
        ("couldn't find remote ref", "not our ref", "unadvertised object", "no such remote ref"),
        SourceNotFoundError,
        "the ref does not exist in the repository",
    ),
    (
        (
            "repository not found",
            "does not appear to be a git repository",
            "returned error: 404",
            "not found",
            "no such file or directory",
        ),
        SourceNotFoundError,
        "the repository does not exist",
    ),
    (
        (
            "could not resolve host",
            "connection refused",
            "timed out",
            "operation too slow",
            "early eof",
            "returned error: 5",
            "connection reset",
            "connection closed",
        ),
        SourceUnavailableError,
        "the git server could not be reached or failed",
    ),
)


@dataclass(frozen=True)
class GitRef:
    """Exactly one of a branch, a tag or a full commit id."""

    branch: str | None = None
    tag: str | None = None
    commit: str | None = None


@dataclass(frozen=True)
class GitAuth:
    """Credentials as the cluster side reads them from a Secret (rukpak's key names)."""

    username: str | None = None
    password: str | None = None
    ssh_private_key: bytes | None = None
    ssh_known_hosts: bytes | None = None
    ca_pem: bytes | None = None
    insecure_skip_verify: bool = False
    allow_plain_http_credentials: bool = False
    """Send username/password over plain http to a host other than loopback (explicit opt-in)."""

    def __repr__(self) -> str:
        return f"GitAuth(username={self.username!r}, secrets=<redacted>)"


@dataclass(frozen=True)
class GitSpec:
    """A repository, a ref and the directory of the repository that holds the bundle."""

    repository: str
    ref: GitRef
    directory: str = ""
    auth: GitAuth | None = None


def _redact(url: str) -> str:
    """Drop any userinfo from a URL so messages never show a password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _validate(spec: GitSpec) -> tuple[str, str, tuple[str, ...]]:
    """Return (transport, refspec, directory parts) or raise InvalidSourceError."""
    repository = spec.repository
    if repository.startswith("-") or _CONTROL.search(repository):
        # Redacted: the URL's userinfo may hold a password.
        raise InvalidSourceError(
            f"invalid git repository {_redact(repository)!r}: a leading '-' or a control character"
        )
    if _SCP_LIKE.match(repository):
        transport = "ssh"
    else:
        transport = urlsplit(repository).scheme
        if transport not in ("https", "http", "ssh", "git"):
            raise InvalidSourceError(
                f"git repository {_redact(repository)!r} must be an https, http, ssh or git URL "
                "(local paths and other transports are not allowed)"
            )
    ref = spec.ref
    given = [
        (k, v) for k, v in (("branch", ref.branch), ("tag", ref.tag), ("commit", ref.commit)) if v
    ]
    if len(given) != 1:
        raise InvalidSourceError("a git source needs exactly one of branch, tag or commit")
    kind, value = given[0]
    if value.startswith("-") or any(c in value for c in " ~^:?*[\\") or ".." in value:
        raise InvalidSourceError(f"invalid git {kind} {value!r}")
    if _CONTROL.search(value):
        raise InvalidSourceError(f"invalid git {kind} {value!r}: it holds a control character")
    refspec = {"branch": f"refs/heads/{value}", "tag": f"refs/tags/{value}"}.get(kind, value)
    if kind == "commit" and not _COMMIT.match(value):
        raise InvalidSourceError(f"git commit {value!r} must be a full 40-character commit id")
    if _CONTROL.search(spec.directory):
        raise InvalidSourceError(f"git directory {spec.directory!r} holds a control character")
    if spec.directory.startswith("/"):
        raise InvalidSourceError(f"git directory {spec.directory!r} must be relative")
    parts = tuple(p for p in spec.directory.split("/") if p not in ("", "."))
    if ".." in parts:
        raise InvalidSourceError(f"git directory {spec.directory!r} may not contain '..'")
    return transport, refspec, parts


class GitSource:
    """Fetches bundle content from a git repository with the git CLI."""

    def __init__(self, git: str = "git") -> None:
        self._git = git

    def fetch(self, spec: GitSpec, dest: Path, options: FetchOptions) -> FetchResult:
        """Fetch ``spec.ref`` shallowly and unpack ``spec.directory`` of it into ``dest``."""
        transport, refspec, directory = _validate(spec)
        auth = spec.auth or GitAuth()
        _check_credential_text(auth)
        _check_credentials(spec, auth)
        budget = Budget(options.deadline_seconds, stall=options.deadline_seconds)
        with tempfile.TemporaryDirectory(prefix=".git-", dir=dest.parent) as scratch_name:
            scratch = Path(scratch_name)
            env = self._environment(scratch, transport, auth, options)
            if transport in ("http", "https"):
                url = urlsplit(spec.repository)
                env["PIVOTER_GIT_SCHEME"] = url.scheme
                env["PIVOTER_GIT_HOST"] = url.netloc.rpartition("@")[2]
            repo = scratch / "repo.git"
            self._run(["init", "--quiet", "--bare", str(repo)], env, budget, spec)
            self._fetch(repo, refspec, spec, env, budget)
            commit = self._run(
                ["-C", str(repo), "rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}"],
                env,
                budget,
                spec,
            ).strip()
            if spec.ref.commit and commit != spec.ref.commit:
                raise SourceNotFoundError(
                    f"fetched {commit} but commit {spec.ref.commit} was asked for"
                )
            treeish = f"{commit}:{'/'.join(directory)}" if directory else f"{commit}^{{tree}}"
            kind = _run_bounded(
                [self._git, "-C", str(repo), "cat-file", "-t", treeish], env, budget, spec
            )
            if kind.stdout.strip() != b"tree":
                raise SourceNotFoundError(
                    f"directory {spec.directory!r} does not exist in commit {commit} of "
                    f"{_redact(spec.repository)}"
                )
            self._archive(repo, treeish, dest, env, options=options, budget=budget)
        ref = spec.ref
        resolved = {"repository": _redact(spec.repository), "ref": {"commit": commit}}
        if spec.directory:
            resolved["directory"] = spec.directory
        warnings = []
        if ref.branch:
            warnings.append(
                f"git branch {ref.branch!r} moves; commit {commit} was fetched. Pin the commit "
                "for a reproducible bundle"
            )
        return FetchResult(
            resolved_source={"type": "git", "git": resolved}, revision=commit, warnings=warnings
        )

    def _environment(
        self, scratch: Path, transport: str, auth: GitAuth, options: FetchOptions
    ) -> dict[str, str]:
        home = scratch / "home"
        home.mkdir()
        askpass = scratch / "askpass.sh"
        askpass.write_text(_ASKPASS)
        askpass.chmod(0o700)
        timeout = str(max(1, int(options.timeout_seconds)))
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home),
            "LANG": "C",
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ALLOW_PROTOCOL": "http:https:ssh:git",
            "GIT_ASKPASS": str(askpass),
            "SSH_ASKPASS": str(askpass),
            "SSH_ASKPASS_REQUIRE": "never",
            "GIT_LFS_SKIP_SMUDGE": "1",
            # A transfer slower than 1 byte/s for the timeout is a stall.
            "GIT_HTTP_LOW_SPEED_LIMIT": "1",
            "GIT_HTTP_LOW_SPEED_TIME": timeout,
        }
        if auth.username is not None:
            env["PIVOTER_GIT_USERNAME"] = auth.username
            env["PIVOTER_GIT_PASSWORD"] = auth.password or ""
        if auth.ca_pem:
            ca_file = scratch / "ca.pem"
            ca_file.write_bytes(auth.ca_pem)
            env["GIT_SSL_CAINFO"] = str(ca_file)
        if auth.insecure_skip_verify:
            env["GIT_SSL_NO_VERIFY"] = "1"
        if transport == "ssh":
            ssh = [
                "ssh",
                "-F",
                "/dev/null",
                "-o",
                "BatchMode=yes",
                "-o",
                f"ConnectTimeout={timeout}",
                "-o",
                "ServerAliveInterval=5",
                "-o",
                f"ServerAliveCountMax={max(1, int(options.timeout_seconds) // 5)}",
                "-o",
                "GlobalKnownHostsFile=/dev/null",
            ]
            if auth.ssh_known_hosts:
                known_hosts = scratch / "known_hosts"
                known_hosts.write_bytes(auth.ssh_known_hosts)
                ssh += [
                    "-o",
                    "StrictHostKeyChecking=yes",
                    "-o",
                    f"UserKnownHostsFile={known_hosts}",
                ]
            elif auth.insecure_skip_verify:
                ssh += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
            else:
                raise InvalidSourceError(
                    "an ssh git source needs known hosts (ssh-knownhosts) to verify the server; "
                    "set insecureSkipVerify only for testing"
                )
            if auth.ssh_private_key:
                key = scratch / "id_key"
                key.write_bytes(auth.ssh_private_key.rstrip(b"\n") + b"\n")
                key.chmod(0o600)
                ssh += ["-o", "IdentitiesOnly=yes", "-i", str(key)]
            env["GIT_SSH_COMMAND"] = shlex.join(ssh)
            env["GIT_SSH_VARIANT"] = "ssh"
        return env

    def _run(self, args: list[str], env: dict[str, str], budget: Budget, spec: GitSpec) -> str:
        command = [
            self._git,
            "-c",
            "credential.helper=",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "protocol.version=2",
            *args,
        ]
        done = _run_bounded(command, env, budget, spec)
        if done.returncode != 0:
            raise self._diagnose(done.stderr.decode(errors="replace"), spec)
        return done.stdout.decode()

    def _diagnose(self, stderr: str, spec: GitSpec) -> SourceError:
        lowered = stderr.lower()
        detail = " ".join(line.strip() for line in stderr.strip().splitlines()[-3:])
        where = _redact(spec.repository)
        for needles, error, meaning in _DIAGNOSES:
            if any(n in lowered for n in needles):
                return error(f"git fetch of {where}: {meaning} (git: {detail})")
        return SourceError(f"git fetch of {where} failed: {detail}")

    def _fetch(
        self,
        repo: Path,
        refspec: str,
        spec: GitSpec,
        env: dict[str, str],
        budget: Budget,
    ) -> None:
        # FETCH_HEAD is how the fetched commit is read back.
        base = ["-C", str(repo), "fetch", "--quiet", "--no-tags"]
        try:
            self._run([*base, "--depth", "1", "--", spec.repository, refspec], env, budget, spec)
        except SourceNotFoundError:
            if not spec.ref.commit:
                raise
            # Servers that refuse to serve an arbitrary commit: fetch the history and look.
            self._run(
                [
                    *base,
                    "--",
                    spec.repository,
                    "+refs/heads/*:refs/heads/*",
                    "+refs/tags/*:refs/tags/*",
                ],
                env,
                budget,
                spec,
            )
            found = _run_bounded(
                [self._git, "-C", str(repo), "cat-file", "-e", f"{spec.ref.commit}^{{commit}}"],
                env,
                budget,
                spec,
            )
            if found.returncode != 0:
                raise SourceNotFoundError(
                    f"commit {spec.ref.commit} is not in {_redact(spec.repository)}"
                ) from None
            (repo / "FETCH_HEAD").write_text(f"{spec.ref.commit}\n")

    def _archive(
        self,
        repo: Path,
        treeish: str,
        dest: Path,
        env: dict[str, str],
        *,
        options: FetchOptions,
        budget: Budget,
    ) -> None:
        process = subprocess.Popen(
            [self._git, "-C", str(repo), "archive", "--format=tar", treeish],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        try:
            unpacker = Unpacker(dest, options.limits, deadline=budget)
            unpacker.apply(process.stdout, Compression.NONE)
            unpacker.finish()
            while process.stdout.read(1 << 16):
                pass  # tar record padding after the end-of-archive marker
            stderr = process.stderr.read()
            process.wait(timeout=options.timeout_seconds)
        except BaseException:
            process.kill()
            process.wait()
            raise
        finally:
            process.stdout.close()
            process.stderr.close()
        if process.returncode != 0:
            raise SourceError(f"git archive failed: {stderr.decode(errors='replace').strip()}")


def _check_credential_text(auth: GitAuth) -> None:
    """Refuse a username or password git cannot be given (a NUL fails the ``exec``; a line break
    would cut the askpass answer short): the cluster side checks them where it reads the
    Secret, naming it; checked again here for any other caller."""
    try:
        if auth.username is not None:
            basic_credential(auth.username, where="the git username", part="username")
        if auth.password is not None:
            basic_credential(auth.password, where="the git password", part="password")
    except InvalidCredential as exc:
        raise InvalidSourceError(str(exc)) from None


def _check_credentials(spec: GitSpec, auth: GitAuth) -> None:
    """Refuse a username/password bound for plain http on another machine without the opt-in."""
    parts = urlsplit(spec.repository)
    if parts.scheme != "http":
        return
    if auth.username is None and auth.password is None and parts.username is None:
        return
    try:
        check_credential_transport(
            spec.repository,
            allowed=auth.allow_plain_http_credentials,
            flag=GIT_CREDENTIALS_OPT_IN,
            what="the git credentials",
        )
    except InsecureCredentials as exc:
        raise AuthenticationError(str(exc)) from None


def _run_bounded(
    command: list[str], env: dict[str, str], budget: Budget, spec: GitSpec
) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` in its own process group within what is left of the fetch's deadline.

    On the deadline the whole group is killed (git's transport helpers and ssh too, which
    ``subprocess.run``'s timeout would leave running).
    """
    where = _redact(spec.repository)
    left = budget.remaining()
    if left <= 0:
        raise SourceUnavailableError(f"git passed its {budget.deadline:g}s deadline on {where}")
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=left)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        raise SourceUnavailableError(
            f"git timed out after {budget.deadline:g}s on {where}: the server is too slow"
        ) from None
    except BaseException:
        _kill_group(process)
        raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover - a child that left the group
        process.kill()
        process.wait()
