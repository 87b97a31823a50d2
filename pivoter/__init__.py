"""pivoter: keeps what is installed on a cluster in step with what package catalogs offer.

The daemon, its controllers and the command line live here; the catalog model and resolver live
in :mod:`resolver` and the bundle provisioners in :mod:`provisioners`. The version comes from git
at build time (:mod:`pivoter.buildinfo`).
"""

__all__ = ["__version__"]

try:
    from pivoter._version import VERSION as __version__
except ImportError:  # a source tree that was never built (no setup.py run): say so, do not crash
    __version__ = "0.0.0+unknown"
