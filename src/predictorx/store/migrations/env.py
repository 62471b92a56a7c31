"""Alembic environment: the engine comes from `predictorx.store.migrate` (never from an ini)."""

from alembic import context

from predictorx.store.schema import Base

engine = context.config.attributes["engine"]
with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
