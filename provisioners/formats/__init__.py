"""formats of provisioners."""
