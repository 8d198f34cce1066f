"""Small helpers under their published names."""
