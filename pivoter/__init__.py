"""pivoter: keeps what is installed on a cluster in step with what package catalogs offer.

The daemon, its controllers and the command line live here; the catalog model and resolver live
in :mod:`resolver` and the bundle provisioners in :mod:`provisioners`.
"""

__version__ = "0.1.0"
