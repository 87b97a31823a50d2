"""resolver: file-based catalogs and SAT-based resolution of bundles.

A pure library: catalogs in, decisions out. It never imports Kubernetes, the daemon or the
provisioners (checked by import-linter, see ``pyproject.toml``).
"""
