"""HTTP routes, one module per resource of the API."""
