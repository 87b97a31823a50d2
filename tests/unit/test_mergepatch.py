"""pivoter.kube.mergepatch: a merge patch that leaves each section exactly as computed."""

from __future__ import annotations

from pivoter.kube.mergepatch import replacing


def _merge(target: object, patch: object) -> object:
    """RFC 7386, as the API server applies it."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def test_a_finished_plan_drops_the_keys_of_the_pending_one() -> None:
    stored = {
        "pendingPlan": {"revision": 1, "objects": {"pending": "waiting for 1 bundle"}},
        "other": {"kept": True},
    }
    computed = {"pendingPlan": {"revision": 1, "objects": {"added": [], "restarts": []}}}
    assert _merge(stored, computed)["pendingPlan"]["objects"]["pending"] == "waiting for 1 bundle"
    patched = _merge(stored, replacing(stored, computed))
    assert patched == {
        "pendingPlan": {"revision": 1, "objects": {"added": [], "restarts": []}},
        "other": {"kept": True},  # a top-level key the patch does not name is someone else's
    }


def test_values_that_are_not_objects_replace_as_before() -> None:
    stored = {"pendingPlan": {"a": 1}, "selection": [{"x": 1}]}
    patch = {"pendingPlan": None, "selection": [{"y": 2}], "new": {"k": "v"}}
    assert replacing(stored, patch) == patch
