"""apply of provisioners."""
