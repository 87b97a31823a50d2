"""ResolveSet revisions: every new selection of an input, kept as an immutable ConfigMap.

A Resolution or PlatformOperator (the *input*) gets revision 1, 2, 3, ... each time its selection
of bundles changes (by the resolver's selection hash); an identical selection writes nothing.
The pivot machinery installs a revision; rollback goes back to one; garbage collection keeps the
newest N and never the revisions a rollback needs. See docs/resolvesets.md.

Callers: the Resolution/PlatformOperator controllers and the ``pivoter history``/``rollback``
commands, through :class:`RevisionStore`.
"""

from pivoter.resolvesets.document import (
    ANNOTATION_CHECKSUM,
    ANNOTATION_INPUT,
    ANNOTATION_SELECTION_HASH,
    DATA_KEY,
    REVISIONS_SELECTOR,
    Revision,
    checksum,
    decode,
    encode,
    input_keys,
    input_names,
    selector,
)
from pivoter.resolvesets.history import revisions_to_remove
from pivoter.resolvesets.naming import (
    LABEL_INPUT_KIND,
    LABEL_INPUT_NAME,
    LABEL_REVISION,
    LABEL_SELECTION_HASH,
    InputRef,
    label_value,
    revision_name,
)
from pivoter.resolvesets.revisions import RevisionState, RevisionStore, Verification, WriteConflict
from pivoter.resolvesets.setup import setup

__all__ = [
    "ANNOTATION_CHECKSUM",
    "ANNOTATION_INPUT",
    "ANNOTATION_SELECTION_HASH",
    "DATA_KEY",
    "LABEL_INPUT_KIND",
    "LABEL_INPUT_NAME",
    "LABEL_REVISION",
    "LABEL_SELECTION_HASH",
    "REVISIONS_SELECTOR",
    "InputRef",
    "Revision",
    "RevisionState",
    "RevisionStore",
    "Verification",
    "WriteConflict",
    "checksum",
    "decode",
    "encode",
    "input_keys",
    "input_names",
    "label_value",
    "revision_name",
    "revisions_to_remove",
    "selector",
    "setup",
]
