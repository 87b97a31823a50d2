"""API types of pivoter and the APIs it accepts from others, as CRD schemas and constants.

Types live apart from behaviour: controllers import names (groups, condition types, reasons) from
here, and ``python -m pivoter.apis.generate`` writes the CRDs in ``crds/`` from these definitions.
"""
