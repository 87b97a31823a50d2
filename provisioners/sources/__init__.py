"""sources of provisioners."""
