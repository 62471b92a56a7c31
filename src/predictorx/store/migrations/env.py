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
    if connection.dialect.name == "postgresql":
        # Replicas starting together: one migrates, the others wait here and then find it done.
        # A transaction-scoped lock, released with the migration's commit.
        connection.exec_driver_sql("SELECT pg_advisory_xact_lock(4848484848)")
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
