"""Condition messages carry catalog and bundle text to terminals: control characters are masked."""

from __future__ import annotations

from typing import Any

from pivoter.apis.conditions import MESSAGE_LIMIT, set_condition


def test_control_characters_in_a_message_are_masked_but_lines_kept() -> None:
    conditions: list[dict[str, Any]] = []
    hostile = "bundle \x1b[2J\x1b]0;owned\x07 from catalog\x00\x9b\nsecond line\tend"
    set_condition(conditions, "Ready", "False", "Bad", hostile, generation=3)
    message = conditions[0]["message"]
    assert "\x1b" not in message
    assert "\x00" not in message
    assert "\x07" not in message
    assert "\x9b" not in message
    assert message == "bundle ?[2J?]0;owned? from catalog??\nsecond line\tend"
    assert conditions[0]["observedGeneration"] == 3


def test_a_long_message_is_truncated_to_the_api_limit() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, "Ready", "True", "Ok", "x" * (MESSAGE_LIMIT + 10), generation=1)
    assert len(conditions[0]["message"]) == MESSAGE_LIMIT
    assert conditions[0]["message"].endswith("(truncated)")
