from oidc.standin import oidc_provider, oidc_session_provider  # noqa: F401
