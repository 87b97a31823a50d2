"""Which pytest-xdist worker runs which tests (``hack/test.sh``: ``-n 2 --dist loadscope``).

A module's tests go to one worker, so module-scoped fixtures (private control planes) are made
once; the modules of a :data:`SHARED_GROUPS` directory all go to one worker, because they use
something of the machine's own rather than of their test session.

xdist's own ``--dist loadgroup`` (``xdist_group`` marks) cannot be used: it passes the group from
the workers to the scheduler by rewriting each test's node id, which pytest 9.2 no longer
allows, so it silently groups nothing (pytest-dev/pytest-xdist#1386). This scheduler computes
the group from the node id's path instead, through xdist's ``pytest_xdist_make_scheduler`` hook.
"""

from __future__ import annotations

from xdist.scheduler.loadscope import LoadScopeScheduling

SHARED_GROUPS = {
    "tests/olmv0/": "olmv0",  # OLM v0's operators listen on :8080 of the host
    "tests/image/": "image",  # podman's storage, containerd, runc, the real node's network
    "tests/packaging/test_release.py": "image",  # builds and pushes the image with podman too
}


def group_of(nodeid: str) -> str:
    """The worker group of the test ``nodeid``: its shared group, or its module's path."""
    path = nodeid.split("::", 1)[0]
    for prefix, group in SHARED_GROUPS.items():
        if path.startswith(prefix):
            return group
    return path


class GroupScheduling(LoadScopeScheduling):
    """``loadscope`` with :func:`group_of` as the scope."""

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)
