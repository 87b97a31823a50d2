"""Typed command-line values shared by every ``pivoter`` command, and the parser that reports a
bad one in one line.

Each converter is given to ``add_argument(type=...)``: it checks the text where it enters (a port
is 0-65535, a duration is a finite number of seconds above zero, a file flag names a readable UTF-8
regular file, an output path lies in an existing writable directory, a URL parses and has a host)
and returns the value parsed once, with its parts: a number, a path, an :class:`Address`, an
:class:`ObjectKey`, a catalog :class:`Location`, a :class:`CatalogChoice`, a
:class:`PackageChoice`, an :class:`OutputTarget`. Commands read those parts and never split the
text again. Otherwise it raises :class:`FlagError` with a one-line message and the exit code the
mistake gets:

* ``USAGE`` (2): the value is malformed (not a number, out of range, not a URL, not a name);
* ``FAILURE`` (1): the value names a file, directory, host or port that cannot be used (missing,
  a directory where a file is expected, unreadable, not text);
* ``INVALID`` (3): kept for the values ``resolve`` and the input commands always rejected so
  (a ``--package`` range, an ``INPUT`` of an unknown kind).

:class:`ArgumentParser` prints every parse error as ``pivoter: error: ...`` on one line and exits
with the code of the :class:`FlagError` behind it (2 for argparse's own errors). Every converter has
a ``kind``: the flag-walking test (``tests/unit/test_cli_bad_flags.py``) feeds each kind's hostile
values to every flag of every command.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, NoReturn
from urllib.parse import urlsplit

from pivoter.cli.exitcodes import ExitCode

__all__ = [
    "Address",
    "ArgumentParser",
    "CatalogChoice",
    "CatalogLocation",
    "CatalogSpec",
    "CertDirectory",
    "Count",
    "Directory",
    "ExistingPath",
    "FlagError",
    "GitRefArgument",
    "Host",
    "HostPort",
    "InputArgument",
    "InputName",
    "Location",
    "Name",
    "NamespacedName",
    "ObjectKey",
    "OutputPath",
    "OutputTarget",
    "PackageChoice",
    "PackageSpec",
    "Port",
    "Seconds",
    "StoreDirectory",
    "TextFile",
    "Url",
    "VersionText",
    "check_argv",
]

MAX_SECONDS = 366 * 24 * 3600.0
"""Longest duration a flag accepts (a year): longer ones overflow timers (``OverflowError``)."""

MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024
"""Largest file a text-file flag (kubeconfig, token, CA bundle, expectations) may name."""

MAX_NAME = 253
"""Longest name or identity accepted (a Kubernetes DNS subdomain's limit)."""

_DNS_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)
_HOST_LABEL = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
_PATH_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class FlagError(argparse.ArgumentTypeError):
    """A command-line value that cannot be used; ``code`` is the exit status it gets."""

    def __init__(self, message: str, code: ExitCode = ExitCode.USAGE) -> None:
        super().__init__(message)
        self.code = code


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, reporting a mistake in one line with its documented exit code.

    The usage text is not repeated (``--help`` shows it); the exit code is the one of the
    :class:`FlagError` that caused the error, else ``USAGE``.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``pivoter: error: MESSAGE (see 'PROG --help')`` and exit."""
        code = ExitCode.USAGE
        cause: BaseException | None = sys.exc_info()[1]
        for _ in range(8):  # argparse re-raises a converter's error as ArgumentError
            if cause is None or isinstance(cause, FlagError):
                break
            cause = cause.__cause__ or cause.__context__
        if isinstance(cause, FlagError):
            code = cause.code
        line = " ".join(message.split())
        self.exit(int(code), f"pivoter: error: {line} (see '{self.prog} --help')\n")


def check_argv(argv: list[str]) -> str | None:
    """The first problem with the raw arguments (not UTF-8, control characters), or None.

    Python hands undecodable bytes over as lone surrogates, which crash the first ``print``.
    """
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raw = arg.encode("utf-8", "surrogateescape")
            shown = raw.decode("utf-8", "replace")
            if shown == raw.decode("utf-8", "ignore"):  # UTF-8 the locale's codec cannot read
                return (
                    f"argument {shown!r} cannot be read in this locale's encoding "
                    f"({sys.getfilesystemencoding()}): use a UTF-8 locale or PYTHONUTF8=1"
                )
            return f"argument {shown!r} is not valid UTF-8"
        if "\x00" in arg:
            return f"argument {arg!r} contains a NUL character"
    return None


def _no_control(text: str, what: str) -> None:
    if _CONTROL.search(text):
        raise FlagError(f"{what} {text!r} contains control characters")


# -- numbers --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Port:
    """A TCP port 0-65535 (0: any free port); with ``off``, -1 means "do not listen" (None)."""

    off: bool = False
    kind = "port"

    def __call__(self, text: str) -> int | None:
        """Return the port number."""
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise FlagError(f"{text!r} is not a port number") from None
        if self.off and value == -1:
            return None
        if not 0 <= value <= 65535:
            extra = ", or -1 for none" if self.off else ""
            raise FlagError(f"port {value} is out of range (0-65535{extra})")
        return value


@dataclass(frozen=True)
class Seconds:
    """A duration in seconds: a finite number above zero (at least ``minimum`` for the periods
    of loops, so that a tiny one cannot spin), at most :data:`MAX_SECONDS`."""

    minimum: float = 0.0
    kind = "seconds"

    def __call__(self, text: str) -> float:
        """Return the number of seconds."""
        try:
            value = float(text)
        except ValueError:
            raise FlagError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value <= 0:
            raise FlagError(f"{text!r}: a duration must be a number of seconds above 0")
        if value < self.minimum:
            raise FlagError(f"{text!r}: this period must be at least {self.minimum:g} seconds")
        if value > MAX_SECONDS:
            raise FlagError(f"{text!r}: a duration may be at most {MAX_SECONDS:.0f} seconds")
        return value


@dataclass(frozen=True)
class Count:
    """A whole number from ``minimum`` to ``maximum`` (a limit, a revision, seconds)."""

    minimum: int = 1
    maximum: int = 2**31 - 1
    kind = "count"

    def __call__(self, text: str) -> int:
        """Return the number."""
        try:
            value = int(text.strip(), 10)
        except ValueError:
            raise FlagError(f"{text!r} is not a whole number") from None
        if not self.minimum <= value <= self.maximum:
            raise FlagError(f"{value} is out of range ({self.minimum}-{self.maximum})")
        return value


# -- files and directories ------------------------------------------------------------------------


def _stat(path: str, what: str) -> os.stat_result:
    try:
        return os.stat(path)
    except FileNotFoundError:
        raise FlagError(f"{what} {path} does not exist", ExitCode.FAILURE) from None
    except NotADirectoryError:
        raise FlagError(f"{what} {path} does not exist", ExitCode.FAILURE) from None
    except OSError as exc:
        raise FlagError(f"{what} {path}: {exc.strerror}", ExitCode.FAILURE) from None


def _expand(text: str, what: str) -> str:
    if not text:
        raise FlagError(f"{what}: an empty path")
    _no_control(text, what)
    return os.path.expanduser(text)


@dataclass(frozen=True)
class TextFile:
    """An existing, readable regular file of UTF-8 text, at most :data:`MAX_TEXT_FILE_BYTES`
    (kubeconfig, token, CA bundle, expectations, ResolveSet). Returns the path."""

    what: str = "file"
    kind = "file"

    def __call__(self, text: str) -> str:
        """Check the file and return its (user-expanded) path."""
        path = _expand(text, self.what)
        info = _stat(path, self.what)
        if stat.S_ISDIR(info.st_mode):
            raise FlagError(f"{self.what} {path} is a directory, not a file", ExitCode.FAILURE)
        if not stat.S_ISREG(info.st_mode):
            raise FlagError(f"{self.what} {path} is not a regular file", ExitCode.FAILURE)
        if info.st_size > MAX_TEXT_FILE_BYTES:
            raise FlagError(
                f"{self.what} {path} is larger than {MAX_TEXT_FILE_BYTES // (1024 * 1024)} MiB",
                ExitCode.FAILURE,
            )
        try:
            # O_NONBLOCK: a FIFO swapped in after the check must not hang the open.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise FlagError(f"{self.what} {path} is not a regular file", ExitCode.FAILURE)
                data = f.read(MAX_TEXT_FILE_BYTES + 1)
        except OSError as exc:
            raise FlagError(
                f"cannot read {self.what} {path}: {exc.strerror}", ExitCode.FAILURE
            ) from None
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FlagError(
                f"{self.what} {path} is not UTF-8 text (a binary file?)", ExitCode.FAILURE
            ) from None
        if "\x00" in decoded:
            raise FlagError(
                f"{self.what} {path} is not text (it holds NUL bytes)", ExitCode.FAILURE
            )
        return path


@dataclass(frozen=True)
class Directory:
    """An existing directory this process can list. Returns the path."""

    what: str = "directory"
    kind = "directory"

    def __call__(self, text: str) -> str:
        """Check the directory and return its (user-expanded) path."""
        path = _expand(text, self.what)
        info = _stat(path, self.what)
        if not stat.S_ISDIR(info.st_mode):
            raise FlagError(f"{self.what} {path} is not a directory", ExitCode.FAILURE)
        if not os.access(path, os.R_OK | os.X_OK):
            raise FlagError(f"cannot read {self.what} {path}: permission denied", ExitCode.FAILURE)
        return path


@dataclass(frozen=True)
class ExistingPath:
    """An existing directory or regular file (``catalog test``'s catalog or template)."""

    what: str = "path"
    kind = "path"

    def __call__(self, text: str) -> str:
        """Check the path and return it."""
        path = _expand(text, self.what)
        info = _stat(path, self.what)
        if stat.S_ISDIR(info.st_mode):
            return Directory(self.what)(text)
        if stat.S_ISREG(info.st_mode):
            return TextFile(self.what)(text)
        raise FlagError(f"{path} is neither a directory nor a regular file", ExitCode.FAILURE)


@dataclass(frozen=True)
class CertDirectory:
    """A directory holding readable ``tls.crt``, ``tls.key`` and ``ca.crt``. Returns a Path."""

    kind = "cert-directory"

    def __call__(self, text: str) -> Path:
        """Check the directory and its three files."""
        path = Directory("certificate directory")(text)
        for name in ("tls.crt", "tls.key", "ca.crt"):
            TextFile(f"certificate file {name} of")(os.path.join(path, name))
        return Path(path)


@dataclass(frozen=True)
class StoreDirectory:
    """A directory this process may write in, created if missing (its nearest existing
    ancestor must be a writable directory). Returns a Path."""

    what: str = "directory"
    kind = "store-directory"

    def __call__(self, text: str) -> Path:
        """Check where the directory is (or will be) and return it."""
        path = Path(_expand(text, self.what))
        probe = path
        while not probe.exists():
            if probe.is_symlink():
                raise FlagError(f"{self.what} {path}: {probe} is a dangling link", ExitCode.FAILURE)
            if probe.parent == probe:
                break
            probe = probe.parent
        if not probe.is_dir():
            raise FlagError(f"{self.what} {path}: {probe} is not a directory", ExitCode.FAILURE)
        if not os.access(probe, os.W_OK | os.X_OK):
            raise FlagError(f"{self.what} {path}: {probe} is not writable", ExitCode.FAILURE)
        return path


class OutputTarget(NamedTuple):
    """Where a command writes: the file ``path``, or standard output (``path`` None). ``format``
    is the word given alone for standard output, else the file's extension (lower case, without
    the dot, ``""`` when it has none): what names the format."""

    path: str | None
    format: str


@dataclass(frozen=True)
class OutputPath:
    """A file to write: not a directory, in an existing directory this process can write.

    ``stdout`` lists words accepted alone (e.g. a format name meaning "print it"); a non-empty
    ``extensions`` is the file-name endings accepted (lower case, without the dot).
    """

    what: str = "output file"
    stdout: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    kind = "output"

    def __call__(self, text: str) -> OutputTarget:
        """Check where the file goes and return it."""
        if text in self.stdout:
            return OutputTarget(None, text)
        path = _expand(text, self.what)
        extension = os.path.splitext(path)[1].lstrip(".").lower()
        if self.extensions and extension not in self.extensions:
            endings = ", ".join(f".{e}" for e in self.extensions)
            raise FlagError(f"cannot tell the format of {text!r}: use {endings}")
        if os.path.isdir(path):
            raise FlagError(f"{self.what} {path} is a directory", ExitCode.FAILURE)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FlagError(
                f"{self.what} {path}: directory {parent} does not exist", ExitCode.FAILURE
            )
        if not os.access(parent, os.W_OK | os.X_OK):
            raise FlagError(f"{self.what} {path}: {parent} is not writable", ExitCode.FAILURE)
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise FlagError(f"{self.what} {path} is not writable", ExitCode.FAILURE)
        return OutputTarget(path, extension)


# -- network --------------------------------------------------------------------------------------


def valid_host(host: str) -> bool:
    """True for an IP address (IPv6 with or without brackets) or a syntactically valid host name."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        ipaddress.ip_address(bare)
        return True
    except ValueError:
        pass
    if bare != host or not host or len(host) > MAX_NAME:
        return False
    labels = host.removesuffix(".").split(".")
    return all(_HOST_LABEL.match(label) for label in labels) and not labels[-1].isdigit()


@dataclass(frozen=True)
class Host:
    """A host name or IP address to listen on (resolved when the server binds)."""

    kind = "host"

    def __call__(self, text: str) -> str:
        """Return the host."""
        if not valid_host(text):
            raise FlagError(f"{text!r} is not a host name or IP address")
        return text[1:-1] if text.startswith("[") else text


class Address(NamedTuple):
    """Where a server listens: a host name or IP address (an IPv6 one without its brackets; ``""``
    for every interface) and a port (0: any free port)."""

    host: str
    port: int

    def __str__(self) -> str:
        """``HOST:PORT``, with ``[v6]`` for an IPv6 host, as a URL names it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class HostPort:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) to listen on, as an :class:`Address`. With
    ``every_interface``, ``:PORT`` too (host ``""``); with ``off``, ``0`` for "do not listen"
    (None)."""

    what: str = "address"
    every_interface: bool = False
    off: bool = False

    @property
    def kind(self) -> str:
        """``bind-address`` when ``:PORT`` or ``0`` is accepted: their hostile values differ."""
        return "bind-address" if self.every_interface or self.off else "host-port"

    def __call__(self, text: str) -> Address | None:
        """Check the address and return it."""
        if self.off and text == "0":
            return None
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit() or (host.count(":") and not host.startswith("[")):
            raise FlagError(f"{self.what} {text!r} is not HOST:PORT")
        if not host and not self.every_interface:
            raise FlagError(f"{self.what} {text!r} has no host")
        if host and not valid_host(host):
            raise FlagError(f"{self.what} {text!r}: {host!r} is not a host name or IP address")
        number = int(port)
        if number > 65535:
            raise FlagError(f"{self.what} {text!r}: port {number} is out of range (0-65535)")
        return Address(host.removeprefix("[").removesuffix("]"), number)


@dataclass(frozen=True)
class Url:
    """An absolute URL with one of ``schemes`` and a host (``""`` when ``optional``)."""

    schemes: tuple[str, ...] = ("http", "https")
    optional: bool = False
    kind = "url"

    def __call__(self, text: str) -> str:
        """Check the URL and return it."""
        if not text and self.optional:
            return text
        _no_control(text, "URL")
        if any(c.isspace() for c in text):
            raise FlagError(f"URL {text!r} contains spaces")
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise FlagError(f"{text!r} is not a valid URL: {exc}") from None
        if parts.scheme not in self.schemes:
            raise FlagError(f"URL {text!r}: the scheme must be {' or '.join(self.schemes)}")
        if not parts.hostname or not valid_host(parts.hostname):
            raise FlagError(f"URL {text!r} has no valid host")
        if port == 0:
            raise FlagError(f"URL {text!r}: port 0 cannot be reached")
        return text


@dataclass(frozen=True)
class ImageReferenceArgument:
    """An image reference (``registry/repository:tag`` or ``...@sha256:...``), checked as the
    pulls parse it (``provisioners.registries.reference``)."""

    kind = "image-reference"

    def __call__(self, text: str) -> str:
        """Check the reference and return it."""
        _no_control(text, "image reference")
        # Imported here: building the parser must not load provisioners (test_cli_imports).
        from provisioners.errors import InvalidSourceError
        from provisioners.registries.reference import parse_reference

        try:
            parse_reference(text)
        except InvalidSourceError as exc:
            raise FlagError(str(exc)) from None
        return text


# -- names ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    """A name: ``style`` is ``dns-label`` (a namespace), ``dns-subdomain`` (an object name),
    ``segment`` (safe in a URL path) or ``text`` (a catalog name, an identity: printable)."""

    style: str = "text"
    what: str = "name"
    optional: bool = False
    kind = "name"

    def __call__(self, text: str) -> str:
        """Check the name and return it."""
        if not text:
            if self.optional:
                return text
            raise FlagError(f"{self.what} must not be empty")
        _no_control(text, self.what)
        if len(text) > MAX_NAME:
            raise FlagError(f"{self.what} is longer than {MAX_NAME} characters")
        pattern, rule = {
            "dns-label": (_DNS_LABEL, "lower-case letters, digits and '-' (at most 63)"),
            "dns-subdomain": (_DNS_SUBDOMAIN, "lower-case letters, digits, '-' and '.'"),
            "segment": (_PATH_SEGMENT, "letters, digits, '.', '_' and '-'"),
            "text": (None, ""),
        }[self.style]
        if pattern is not None and not pattern.match(text):
            raise FlagError(f"{self.what} {text!r} is not valid: use {rule}")
        if pattern is None and (text != text.strip() or text.startswith("-")):
            raise FlagError(f"{self.what} {text!r} is not valid")
        return text


_GIT_REF = re.compile(r"^[A-Za-z0-9_./@{}~^+-]+$")


@dataclass(frozen=True)
class GitRefArgument:
    """A git revision naming one commit: a branch, tag, commit id or ``HEAD~2``/``main^``/
    ``@{u}``; not a range (``a..b``), not ``REV:path``, never starting with ``-`` (it would be
    read as an option). Whether it exists is for git to say when the command runs."""

    what: str = "git ref"
    kind = "git-ref"

    def __call__(self, text: str) -> str:
        """Check the revision's shape and return it."""
        if not text:
            raise FlagError(f"{self.what} must not be empty")
        _no_control(text, self.what)
        if len(text) > MAX_NAME:
            raise FlagError(f"{self.what} is longer than {MAX_NAME} characters")
        if text.startswith("-") or ".." in text or not _GIT_REF.match(text):
            raise FlagError(
                f"{self.what} {text!r} is not valid: give one commit (a branch, tag, commit id "
                "or e.g. HEAD~1), not a range or an option"
            )
        return text


class ObjectKey(NamedTuple):
    """The namespace and name of a namespaced Kubernetes object."""

    namespace: str
    name: str

    def __str__(self) -> str:
        """``NAMESPACE/NAME``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class NamespacedName:
    """``NAMESPACE/NAME`` of a Kubernetes object, as an :class:`ObjectKey` (None for ``""`` when
    ``optional``)."""

    optional: bool = False
    kind = "namespaced-name"

    def __call__(self, text: str) -> ObjectKey | None:
        """Check both parts and return them."""
        if not text and self.optional:
            return None
        namespace, sep, name = text.partition("/")
        if not sep:
            raise FlagError(f"{text!r} is not NAMESPACE/NAME")
        Name("dns-label", "namespace")(namespace)
        Name("dns-subdomain", "name")(name)
        return ObjectKey(namespace, name)


@dataclass(frozen=True)
class VersionText:
    """A semantic version (a leading ``v`` and a missing patch are tolerated), returned as the
    text given: what the resolver reads and a ResolveSet's digest records."""

    optional: bool = False
    what: str = "version"
    code: ExitCode = ExitCode.USAGE
    kind = "version"

    def __call__(self, text: str) -> str:
        """Check the version and return it."""
        if not text and self.optional:
            return text
        _no_control(text, self.what)
        from resolver.versions import parse_version  # the parser itself stays light

        try:
            parse_version(text)
        except ValueError as exc:
            raise FlagError(f"{self.what}: {exc}", self.code) from None
        return text


class InputName(NamedTuple):
    """An input named on the command line: ``text`` as given, the input kind it names (its
    entry of :data:`pivoter.apis.inputs.INPUT_KINDS`, by ``kind``) and the object's ``name``."""

    text: str
    kind: str
    """The kind's name (``Resolution``)."""
    name: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class InputArgument:
    """``NAME`` (a Resolution) or ``<kind>/NAME`` (the kind in any case, or plural), whose NAME
    is a Kubernetes object name; refused with exit 3 as the input commands always did. Which
    kinds exist is the registry's (:data:`pivoter.apis.inputs.INPUT_KINDS`): an unknown one is
    returned as given and answered by the command (exit 3 too, without raising, for callers of
    :func:`pivoter.cli.main.main`; :meth:`unknown` says it)."""

    kind = "input"

    def __call__(self, text: str) -> InputName:
        """Check the name; return the kind (the registry's name for it when it is one) and
        the name."""
        from pivoter.apis.inputs import INPUT_KINDS, RESOLUTION  # the registry, when used

        kinds = {k.kind.lower(): k.kind for k in INPUT_KINDS}
        given, sep, name = text.partition("/")
        kind = kinds.get(given.lower().removesuffix("s"), given) if sep else RESOLUTION.kind
        if not sep:
            name = text
        if not name:
            raise FlagError(self.unknown(text), ExitCode.INVALID)
        try:
            Name("dns-subdomain", "INPUT name")(name)
        except FlagError as exc:
            raise FlagError(str(exc), ExitCode.INVALID) from None
        return InputName(text, kind, name)

    @staticmethod
    def unknown(text: str) -> str:
        """What an ``INPUT`` that names no input kind is told."""
        from pivoter.apis.inputs import INPUT_KINDS

        forms = ["NAME", *(f"{k.kind.lower()}/NAME" for k in INPUT_KINDS)]
        return f"INPUT {text!r}: expected " + ", ".join(forms[:-1]) + f" or {forms[-1]}"


class Location(NamedTuple):
    """A catalog to read: ``text`` as given (what sources and messages name), and what it is: a
    network source of ``scheme`` ``http``, ``https``, ``grpc`` or ``grpcs``, or (``scheme``
    ``""``) the directory ``path``."""

    text: str
    scheme: str
    path: str

    @property
    def remote(self) -> bool:
        """Whether the catalog is fetched over the network."""
        return bool(self.scheme)

    def __str__(self) -> str:
        """The location as given."""
        return self.text


@dataclass(frozen=True)
class CatalogLocation:
    """A catalog to read: a directory (or ``file://`` path), an ``http(s)://`` catalogd URL or a
    ``grpc(s)://host:port`` registry, as a :class:`Location`. A missing directory fails with
    exit 1."""

    kind = "catalog-source"

    def __call__(self, text: str) -> Location:
        """Check the location and return it."""
        for schemes in (("http", "https"), ("grpc", "grpcs")):
            if text.startswith(tuple(f"{scheme}://" for scheme in schemes)):
                Url(schemes)(text)
                return Location(text, text.partition(":")[0], "")
        path = text.removeprefix("file://")
        if "://" in path and not os.path.isdir(path):
            raise FlagError(
                f"catalog source {text!r}: expected a directory, file://, http(s):// or grpc(s)://"
            )
        if not path:
            raise FlagError("catalog source: an empty path")
        _no_control(path, "catalog source")
        if not os.path.isdir(path):
            raise FlagError(f"catalog source {text}: no such directory", ExitCode.FAILURE)
        if not os.access(path, os.R_OK | os.X_OK):
            raise FlagError(f"catalog source {text}: permission denied", ExitCode.FAILURE)
        return Location(text, "", path)


class CatalogChoice(NamedTuple):
    """One ``resolve --catalog``: where the catalog is, its priority (higher wins a tie) and the
    name the ResolveSet records (``""``: the catalog's own)."""

    location: Location
    priority: int
    name: str


@dataclass(frozen=True)
class CatalogSpec:
    """``resolve --catalog``: ``SOURCE[,priority=N][,name=NAME]`` as a :class:`CatalogChoice`
    (priority 0 and the catalog's own name unless given; malformed options: exit 3; a repeated
    option: the last one counts)."""

    kind = "catalog-spec"

    def __call__(self, text: str) -> CatalogChoice:
        """Check the source and its options and return them."""
        source, *options = text.split(",")
        priority, name = 0, ""
        for opt in options:
            key, _, value = opt.partition("=")
            if key == "priority":
                try:
                    priority = int(value, 10)
                except ValueError:
                    raise FlagError(
                        f"--catalog {text}: priority must be an integer", ExitCode.INVALID
                    ) from None
            elif key == "name":
                try:
                    name = Name("text", "catalog name")(value)
                except FlagError as exc:
                    raise FlagError(f"--catalog {text}: {exc}", ExitCode.INVALID) from None
            else:
                raise FlagError(f"--catalog {text}: unknown option {key!r}", ExitCode.INVALID)
        return CatalogChoice(CatalogLocation()(source), priority, name)


class PackageChoice(NamedTuple):
    """One ``resolve --package``: the package's name and a Masterminds version range (``""``:
    any version)."""

    name: str
    version_range: str


@dataclass(frozen=True)
class PackageSpec:
    """``resolve --package``: ``NAME[@RANGE]`` as a :class:`PackageChoice` (a malformed one:
    exit 3)."""

    kind = "package-request"

    def __call__(self, text: str) -> PackageChoice:
        """Check the name and the range and return them."""
        from resolver.versions import RangeSyntaxError, parse_range  # the parser stays light

        name, _, rng = text.partition("@")
        try:
            Name("text", "package name")(name)
        except FlagError as exc:
            raise FlagError(f"--package {text}: {exc}", ExitCode.INVALID) from None
        if rng:
            try:
                parse_range(rng, "masterminds")
            except RangeSyntaxError as err:
                raise FlagError(f"--package {text}: {err}", ExitCode.INVALID) from None
        return PackageChoice(name, rng)
