"""The tests' one polling helper: returns the first truthy value, or fails naming what it saw."""

from __future__ import annotations

import pytest

from tests.polling import wait_for


def test_returns_the_first_truthy_value() -> None:
    answers = iter([None, 0, "", "ready", "later"])
    assert wait_for(lambda: next(answers), timeout=5, interval=0) == "ready"


def test_a_timeout_names_what_and_the_detail() -> None:
    with pytest.raises(AssertionError, match=r"waiting for the thing; last status: down"):
        wait_for(
            lambda: False,
            timeout=0,
            interval=0,
            what="the thing",
            detail=lambda: "last status: down",
        )
