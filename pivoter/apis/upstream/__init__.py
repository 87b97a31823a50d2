"""Data only: operator-controller's generated CRDs, unchanged (see :mod:`pivoter.apis.olmv1`)."""
