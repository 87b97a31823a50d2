"""The conformance runner: replays the shared resolver cases under the profile each one names.

``python -m resolver.conformance [FILE...]`` (see :mod:`resolver.conformance.runner`; without a
file, the shared corpus's copy and pivoter's own cases in ``tests/data/conformance/``); deliberate
deviations are listed with their reasons in ``deviations.yaml`` next to this file.
"""
