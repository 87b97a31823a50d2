"""Finding templates in a directory tree 1000 levels deep: no RecursionError (3.11's os.walk)."""

from __future__ import annotations

import os
from pathlib import Path

from provisioners.fstree import remove_tree
from resolver.channeltest.templates import find_templates

TEMPLATE = "schema: olm.semver\nStable:\n  Bundles: []\n"


def test_templates_are_found_at_any_depth(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    (root / "a.yaml").write_text(TEMPLATE)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(1000):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with os.fdopen(os.open("z.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
            f.write("not: a template\n")
    finally:
        os.close(fd)
    try:
        assert find_templates(str(root)) == [str(root / "a.yaml")]
    finally:
        remove_tree(root)  # pytest's own cleanup (shutil.rmtree) would recurse
