"""pivoter's thin boundary to the Kubernetes API: client construction, JSON requests and watches,
discovery, server-side apply, Events and typed errors.

The one place pivoter reaches :mod:`provisioners.apply`'s Kubernetes client and errors
(``kubeapi``, ``kubeerrors``): everything else in pivoter imports them from here (an
import-linter contract in pyproject.toml holds this).

Used by :mod:`pivoter.runtime` (informers, leader election) and by every reconciler.
"""

from pivoter.kube.apply import DEFAULT_FIELD_MANAGER, apply, apply_status
from pivoter.kube.client import APPLY_PATCH, MERGE_PATCH, Kube, Object, WatchEvent, WatchStream
from pivoter.kube.config import KubeConfigError, load_client
from pivoter.kube.events import EventRecorder, object_reference
from provisioners.apply.kubeapi import KubeAPI
from provisioners.apply.kubeerrors import (
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    Unavailable,
    error_for,
    from_api_exception,
)
from provisioners.apply.resources import ApiVersionKind, Resource, split_api_version

__all__ = [
    "APPLY_PATCH",
    "DEFAULT_FIELD_MANAGER",
    "MERGE_PATCH",
    "ApiVersionKind",
    "Conflict",
    "EventRecorder",
    "Forbidden",
    "Gone",
    "Invalid",
    "Kube",
    "KubeAPI",
    "KubeConfigError",
    "KubeError",
    "NotFound",
    "Object",
    "Resource",
    "Unavailable",
    "WatchEvent",
    "WatchStream",
    "apply",
    "apply_status",
    "error_for",
    "from_api_exception",
    "load_client",
    "object_reference",
    "split_api_version",
]
