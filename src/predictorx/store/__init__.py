"""The database layer. The workflows' tables live in their own module (SPEC §10); importing it
here, with the package, puts them in `schema.Base.metadata` whichever module is imported first."""

from . import autopilot_schema, inbox_schema, label_schema, oidc_schema, schema, usage_schema, workflow_schema  # noqa: F401
