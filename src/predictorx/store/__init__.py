"""The database layer. The harness's tables live in their own module (SPEC §10); importing it
here, with the package, puts them in `schema.Base.metadata` whichever module is imported first."""

from . import harness_schema, schema  # noqa: F401
