"""Owned processes."""
