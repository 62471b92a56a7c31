"""OpenID Connect sign-in (issue 28 §1): providers (client secret sealed), identities (provider +
subject → user), sign-ins under way (state, nonce, PKCE verifier, device code), the web sessions a
provider signed in, and the roles its group mapping granted (store/oidc_schema.py).

Revision ID: 0021
Revises: 0020
"""
import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "oidc_provider",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(60), nullable=False, unique=True),
        sa.Column("display_name", sa.String(200), nullable=False),
        sa.Column("issuer", sa.String(2000), nullable=False),
        sa.Column("client_id", sa.String(500), nullable=False),
        sa.Column("client_secret_sealed", sa.Text, nullable=True),
        sa.Column("scopes", sa.String(500), nullable=False),
        sa.Column("role_map", sa.JSON, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "oidc_identity",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("provider_id", sa.String(36), sa.ForeignKey("oidc_provider.id", ondelete="CASCADE"), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(36), sa.ForeignKey("user_account.id", ondelete="CASCADE"), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("last_sign_in_at", TS, nullable=False),
        sa.UniqueConstraint("provider_id", "subject", name="uq_oidc_identity_subject"),
    )
    op.create_index("ix_oidc_identity_user_id", "oidc_identity", ["user_id"])
    op.create_table(
        "oidc_login",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("provider_id", sa.String(36), sa.ForeignKey("oidc_provider.id", ondelete="CASCADE"), nullable=False),
        sa.Column("state_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("browser_hash", sa.String(64), nullable=True),
        sa.Column("purpose", sa.String(10), nullable=False),
        sa.Column("nonce", sa.String(100), nullable=True),
        sa.Column("code_verifier_sealed", sa.Text, nullable=True),
        sa.Column("device_code_sealed", sa.Text, nullable=True),
        sa.Column("interval", sa.Integer, nullable=False),
        sa.Column("redirect", sa.String(200), nullable=True),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("used_at", TS, nullable=True),
    )
    op.create_table(
        "oidc_session",
        sa.Column("token_id", sa.String(36), sa.ForeignKey("token.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("provider_id", sa.String(36), sa.ForeignKey("oidc_provider.id", ondelete="CASCADE"), nullable=False),
    )
    op.create_table(
        "oidc_grant",
        sa.Column("user_id", sa.String(36), sa.ForeignKey("user_account.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("workspace_id", sa.String(36), sa.ForeignKey("workspace.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("provider_id", sa.String(36), sa.ForeignKey("oidc_provider.id", ondelete="CASCADE"), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("previous_role", sa.String(20), nullable=True),
    )


def downgrade() -> None:
    for table in ("oidc_grant", "oidc_session", "oidc_login", "oidc_identity", "oidc_provider"):
        op.drop_table(table)
