"""PlatformOperators (``platform.openshift.io/v1alpha1``), driven through pivoter's resolution and
grouped pivot path: :func:`setup` registers the controller for ``pivoter run``."""

from pivoter.platformoperators.controller import (
    CONTROLLER_NAME,
    PlatformOperatorSettings,
    platform_operator_kind,
    setup,
)
from pivoter.platformoperators.status import installed_condition, platform_operator_status

__all__ = [
    "CONTROLLER_NAME",
    "PlatformOperatorSettings",
    "installed_condition",
    "platform_operator_kind",
    "platform_operator_status",
    "setup",
]
