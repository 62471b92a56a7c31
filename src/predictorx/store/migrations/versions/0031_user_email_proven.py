"""user_account.email_proven: whether the account's e-mail was proven by the person holding it
(signed in through an OpenID provider that said it is verified). An e-mail typed when adding a
member is not: adding that e-mail elsewhere no longer attaches the account, and the real person's
first sign-in takes it over (its earlier tokens revoked). Accounts with an OpenID identity and an
e-mail are proven already (their e-mail came from a verified ID token).

Revision ID: 0031
Revises: 0030
"""
import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("user_account") as t:
        t.add_column(sa.Column("email_proven", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE user_account SET email_proven = TRUE WHERE email IS NOT NULL "
               "AND id IN (SELECT user_id FROM oidc_identity)")


def downgrade() -> None:
    with op.batch_alter_table("user_account") as t:
        t.drop_column("email_proven")
