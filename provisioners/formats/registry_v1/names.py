"""Deterministic Kubernetes names for the objects registry+v1 conversion generates.

Generated names are built from the CSV, deployment and service account names, which are
unbounded; :func:`bounded_name` keeps them within a DNS label (63 characters) by cutting and
adding a short hash of the full name, so the same inputs always give the same name and two long
names that share a prefix do not collide. Called by the RBAC, webhook and certificate builders.
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME = 63
_HASH_LENGTH = 10
_INVALID = re.compile(r"[^a-z0-9.-]+")
_INVALID_LABEL = re.compile(r"[^a-z0-9-]+")


def bounded_name(*parts: str, limit: int = MAX_NAME, label: bool = False) -> str:
    """Join ``parts`` with ``-``; when longer than ``limit``, cut and append a hash of the whole.

    ``label`` restricts the result to a DNS-1035 label (no dots; Services need that).
    """
    full = "-".join(part for part in parts if part).lower()
    full = (_INVALID_LABEL if label else _INVALID).sub("-", full).strip("-.")
    if label and full and not full[0].isalpha():
        full = f"x-{full}"
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:_HASH_LENGTH]
    prefix = full[: limit - _HASH_LENGTH - 1].rstrip("-.")
    return f"{prefix}-{digest}"
