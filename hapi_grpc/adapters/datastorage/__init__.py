"""Data Storage: one client for its REST contract (`client`) and its answers (`bodies`)."""
