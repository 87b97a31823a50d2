"""pivoter's own lifecycle: its manifests at the CLI's version, install, check and uninstall.

:mod:`.manifests` renders the CRDs (from :mod:`pivoter.apis`) and ``deploy/`` for one image and
version; :mod:`.rights` finds what the user lacks to apply them, before anything is applied;
:mod:`.installer` applies them and waits; :mod:`.health` checks a cluster before and after;
:mod:`.removal` removes pivoter, with the operators it installed left running or not. The
commands are ``pivoter install``, ``pivoter check`` and ``pivoter uninstall`` (docs/install.md).
"""
