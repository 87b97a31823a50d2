"""Tests of the provisioner core (sources, unpacking, store, formats) against real servers."""
