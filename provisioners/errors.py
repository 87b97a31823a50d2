"""The error types every provisioner step raises, so callers can map them to conditions.

Sources, unpacking and formats raise subclasses of :class:`ProvisionerError`; the cluster side
turns one into ``Unpacked=False/UnpackFailed`` with ``str(error)`` as the message and uses
``retryable`` to decide between a fast retry and waiting for a spec change.
"""

from __future__ import annotations


class ProvisionerError(Exception):
    """A bundle could not be fetched, unpacked or converted; the message says what to fix."""

    retryable: bool = False


class SourceError(ProvisionerError):
    """Fetching bundle content from its source failed."""


class InvalidSourceError(SourceError):
    """The source spec itself is invalid (bad reference, bad path, unsupported option)."""


class SourceNotFoundError(SourceError):
    """The image, tag, repository, ref, directory or URL does not exist."""


class AuthenticationError(SourceError):
    """The source needs credentials that were missing or were rejected."""


class SourceUnavailableError(SourceError):
    """The server failed, stalled or could not be reached; trying again later may work."""

    retryable = True


class IntegrityError(SourceError):
    """Content did not match the digest or size it was announced with."""


class UnsupportedContentError(SourceError):
    """The source served a media type or format this provisioner cannot read."""


class TlsVerificationError(SourceError):
    """The server's TLS certificate is not trusted by the configured CA bundle."""


class ContentTooLargeError(SourceError):
    """The source served more bytes than the configured limits allow."""


class MirrorConfigError(InvalidSourceError):
    """A registries.conf file or a mirror set object is malformed; the message names which and
    the field, and the pull stays as it was until the configuration is fixed."""


class RegistryBlockedError(SourceError):
    """The mirror policy forbids contacting the image's registry and no mirror serves this kind
    of reference; the message names the rule that blocks it and what would make a mirror apply."""
