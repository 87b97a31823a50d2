"""Registry access shared by every image pull: image references, the OCI client, credentials,
mirrors, and the pull that tries each place in turn.

:mod:`.reference` parses image references; :mod:`.client` speaks the distribution API to one
repository; :mod:`.auth` holds the pull secrets of a pull as :class:`AuthFile` s in precedence
order and, for one image, gives the :class:`Login` s to try, each file matched by namespace as
containers/image matches ``auth.json`` keys; :mod:`.mirrors` is the mirror policy of
``registries.conf`` v2 and OpenShift's mirror sets; :mod:`.pull` opens an image at the first
place (mirror or source) that serves it with the first credential the registry accepts. Pure: the
cluster side reads the Secrets and mirror objects and passes data. Nothing here imports the bundle
sources (:mod:`provisioners.sources` builds on this package).
"""

from __future__ import annotations

from provisioners.registries.auth import AuthFile, BasicCredentials, Keyring, Login
from provisioners.registries.mirrors import (
    MirrorPolicy,
    PullPlace,
    from_mirror_sets,
    parse_registries_conf,
)
from provisioners.registries.pull import Opened, PullFailedEverywhere, RegistryAccess, open_image

__all__ = [
    "AuthFile",
    "BasicCredentials",
    "Keyring",
    "Login",
    "MirrorPolicy",
    "Opened",
    "PullFailedEverywhere",
    "PullPlace",
    "RegistryAccess",
    "from_mirror_sets",
    "open_image",
    "parse_registries_conf",
]
