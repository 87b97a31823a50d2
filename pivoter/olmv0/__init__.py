"""Taking over from OLM v0: adopt what its Subscriptions installed, in place, and hand it back.

* :mod:`~pivoter.olmv0.survey` reads a namespace's Subscriptions, CSVs, OperatorGroups and
  InstallPlans;
* :mod:`~pivoter.olmv0.refusals` says what cannot be adopted safely, and why;
* :mod:`~pivoter.olmv0.mapping` maps a Subscription to the Resolution that takes it over;
* :mod:`~pivoter.olmv0.adoptionplan` is what ``pivoter adopt --dry-run`` prints;
* :mod:`~pivoter.olmv0.check` gives each operator (Subscription or ClusterExtension) its verdict
  for ``pivoter adopt --check``;
* :mod:`~pivoter.olmv0.backup` writes OLM v0's objects to files first (``--backup``);
* :mod:`~pivoter.olmv0.handover` runs an adoption step by step (crash-safe);
* :mod:`~pivoter.olmv0.quiet` tells when OLM v0 has stopped writing a CSV's objects;
* :mod:`~pivoter.olmv0.controller` is the daemon's opt-in adoption controller;
* :mod:`~pivoter.olmv0.undo` gives an adopted operator back to OLM v0.

Used by ``pivoter adopt`` and ``pivoter run --adopt-olmv0``; docs/migrate-from-olm-v0.md.
"""

from pivoter.olmv0 import backup, check, controller, groups, handover, mapping, undo
from pivoter.olmv0.adoptionplan import plan_for
from pivoter.olmv0.refusals import namespace_refusals, refusals
from pivoter.olmv0.resources import SUBSCRIPTIONS
from pivoter.olmv0.survey import InstalledOperator, NamespaceSurvey, survey

__all__ = [
    "SUBSCRIPTIONS",
    "InstalledOperator",
    "NamespaceSurvey",
    "backup",
    "check",
    "controller",
    "groups",
    "handover",
    "mapping",
    "namespace_refusals",
    "plan_for",
    "refusals",
    "survey",
    "undo",
]
