"""The parameters of a registry's ``WWW-Authenticate`` challenge: what a token request needs,
and a hostile header (a registry is not trusted) read in linear time."""

from __future__ import annotations

import pytest

from provisioners.registries.client import challenge_params


def test_a_bearer_challenge_gives_its_realm_service_and_scope() -> None:
    challenge = (
        'Bearer realm="https://auth.example.com/token",service="registry.example.com",'
        'scope="repository:team/bundle:pull"'
    )
    assert challenge_params(challenge) == {
        "realm": "https://auth.example.com/token",
        "service": "registry.example.com",
        "scope": "repository:team/bundle:pull",
    }
    assert challenge_params('Basic realm="Registry Realm"') == {"realm": "Registry Realm"}
    assert challenge_params("Bearer") == {}


@pytest.mark.timeout(60)  # quadratic parsing took minutes here
@pytest.mark.parametrize(
    "challenge",
    ["Bearer " + "a" * 1_000_000, "Bearer " + "a" * 1_000_000 + '="x"', 'Bearer k="' + "v" * 10**6],
)
def test_a_huge_challenge_is_read_in_linear_time(challenge: str) -> None:
    params = challenge_params(challenge)
    assert set(params) <= {"a" * 1_000_000}
