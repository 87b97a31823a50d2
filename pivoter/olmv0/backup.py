"""OLM v0's objects of an adoption, written to files before anything changes:
``pivoter adopt --backup DIR``.

An adoption deletes OLM v0's records of an operator (the Subscription and its InstallPlans,
then the CSV). The adoption Resolution keeps what ``pivoter adopt --undo`` needs (the
Subscription's spec, the CSV's name); the backup keeps the objects themselves, for an audit and
for recovery by hand: one multi-document YAML file per Subscription,
``<namespace>-<subscription>.yaml``, holding the Subscription, its namespace's OperatorGroup,
the installed CSV and the Subscription's InstallPlans, as the API server returned them minus
``metadata.managedFields`` (which says who wrote which field, and is most of the bytes).

Every file is written before the first change to the cluster; a directory that cannot be
written stops the command there (:class:`BackupError`). Each file is replaced atomically (a
temporary file in the same directory, then a rename), readable by its owner only: a CSV or a
Subscription's ``spec.config`` may hold what the cluster's RBAC keeps from others. Called by
``pivoter adopt``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from pivoter.olmv0.survey import InstalledOperator

__all__ = ["BackupError", "backup_documents", "backup_name", "render", "write_backups"]

FILE_MODE = 0o600


class BackupError(OSError):
    """A backup file cannot be written; nothing was changed on the cluster."""


def backup_name(namespace: str, subscription: str) -> str:
    """The file name of the backup of Subscription ``namespace/subscription``."""
    return f"{namespace}-{subscription}.yaml"


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


def backup_documents(installed: InstalledOperator) -> list[dict[str, Any]]:
    """The objects backed up for ``installed``: the Subscription, the OperatorGroups of its
    namespace (one, when it can be adopted), the installed CSV (when it exists) and the
    Subscription's InstallPlans by name."""
    objects: list[Mapping[str, Any]] = [installed.subscription]
    objects += sorted(installed.operator_groups, key=lambda g: str(g["metadata"]["name"]))
    if installed.csv is not None:
        objects.append(installed.csv)
    objects += sorted(installed.install_plans, key=lambda p: str(p["metadata"]["name"]))
    return [_without_managed_fields(o) for o in objects]


def render(installed: InstalledOperator) -> str:
    """The backup file's text for ``installed``."""
    header = (
        f"# pivoter adopt --backup: OLM v0's objects of Subscription {installed.ref}, read before "
        "the adoption changed anything\n"
    )
    body = yaml.safe_dump_all(
        backup_documents(installed), sort_keys=False, default_flow_style=False
    )
    return header + body


def _write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, readable by its owner only."""
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, FILE_MODE)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_backups(directory: Path, operators: Iterable[InstalledOperator]) -> list[Path]:
    """Write the backup of each of ``operators`` into ``directory`` (created if missing);
    return the files written. Raises :class:`BackupError` naming the file or directory that
    cannot be written."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackupError(
            f"cannot create the backup directory {directory}: {exc.strerror or exc}"
        ) from exc
    written = []
    for installed in operators:
        path = directory / backup_name(installed.namespace, installed.name)
        try:
            _write(path, render(installed))
        except OSError as exc:
            raise BackupError(f"cannot write the backup {path}: {exc.strerror or exc}") from exc
        written.append(path)
    return written
