"""Domain services: what the HTTP routes do, over one database session at a time."""
