"""Example controllers built on kcontrol (not part of the installed package)."""
