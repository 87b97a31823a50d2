"""How the daemon reaches registries: pull secrets read from the cluster, and mirrors.

:class:`RegistryAccessProvider` (:mod:`.access`) gives every pull its
:class:`~provisioners.registries.pull.RegistryAccess`: the pull secrets the pulling object names,
most specific first, then the cluster-wide one, and the mirrors of ``registries.conf`` and of
OpenShift's mirror objects. :mod:`.secrets` reads one Secret; :mod:`.names` says which Secrets an
object names (a Bundle, a Catalog, a ClusterCatalog, a child's template); :mod:`.verification`
reads the cluster's verification policy, handed to every pull with its access. See
docs/registries.md and docs/verification.md.
"""

from __future__ import annotations

from pivoter.registries.access import MirrorObjects, RegistryAccessProvider
from pivoter.registries.secrets import PullSecretRef, parse_refs, read_auth_file
from pivoter.registries.verification import VerificationPolicyProvider

__all__ = [
    "MirrorObjects",
    "PullSecretRef",
    "RegistryAccessProvider",
    "VerificationPolicyProvider",
    "parse_refs",
    "read_auth_file",
]
