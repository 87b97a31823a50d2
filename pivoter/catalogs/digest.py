"""The content digest of a catalog: sha256 over its objects in a canonical order and encoding.

Sources have digests of their own (an HTTP body, gRPC messages, an image manifest), but those
change with things that are not content (a re-pushed image with the same files, message order,
a touched file). The cache compares this digest instead, so a catalog "changed" exactly when the
objects resolution reads changed. Called by the catalog controllers after a fetch whose source
digest moved.
"""

from __future__ import annotations

import hashlib

import orjson

from resolver.catalog.model import Catalog
from resolver.catalog.render import objects_in_render_order

__all__ = ["content_digest"]


def content_digest(catalog: Catalog) -> str:
    """``sha256:<hex>`` of every object of ``catalog`` as compact, key-sorted JSON lines in
    ``opm render`` order (packages by name; channels and bundles by name within a package)."""
    hasher = hashlib.sha256()
    for obj in objects_in_render_order(catalog):
        hasher.update(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
        hasher.update(b"\n")
    return "sha256:" + hasher.hexdigest()
