"""Forges behind one interface (issue 22): GitHub, GitLab, Gitea, Forgejo. See `base`."""
