"""Catalog rules: from catalogs, installed state and requests to what profiles turn into variables.

:mod:`.inputs` (what a resolution reads and answers), :mod:`.predicates` (requirement
properties), :mod:`.channels` (channel order and upgrade edges). Used by :mod:`resolver.profiles`.
"""
