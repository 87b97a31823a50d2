"""The whole shared catalogs, each on its own: same verdict as ``opm validate``, same render."""

from __future__ import annotations

import io

import pytest

from resolver.catalog.load import load_directory
from resolver.catalog.render import write_json
from tests.catalog.helpers import CATALOGS, opm_render, opm_validate, our_validate
from tests.tools import SHARED, requires_shared

# The small copies in tests/data/catalogs get the same checks in test_opm_referee.py.
pytestmark = [pytest.mark.slow, pytest.mark.opm, requires_shared]

# What opm reports first for the catalogs it rejects, and the category our findings carry.
EXPECTED_DEFECTS = {
    # derived (not opm output): three packages carry icons whose base64 does not decode.
    "community-operators-prod-derived": ("base64", "load"),
    # two index versions side by side: every package is defined twice.
    "operator-registry-testdata": ("duplicate package", "duplicate-package"),
}


@pytest.mark.parametrize("name", CATALOGS)
def test_full_catalog_same_verdict_as_opm(name: str) -> None:
    directory = SHARED / "catalogs" / name
    theirs = opm_validate(directory)
    ours = our_validate(directory, use_cache=False)
    assert ours.passed == theirs.passed, (theirs.text, ours.messages[:5])
    if name in EXPECTED_DEFECTS:
        keyword, category = EXPECTED_DEFECTS[name]
        assert keyword in theirs.text
        assert any(keyword in m for m in ours.messages)
        assert category in ours.categories
    else:
        assert theirs.passed


@pytest.mark.parametrize("name", [n for n in CATALOGS if n not in EXPECTED_DEFECTS])
def test_full_catalog_render_is_byte_identical_to_opm(name: str) -> None:
    directory = SHARED / "catalogs" / name
    buf = io.BytesIO()
    write_json(load_directory(directory, use_cache=False), buf)
    assert buf.getvalue() == opm_render(directory)
