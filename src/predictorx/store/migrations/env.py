"""Alembic environment: the engine comes from `predictorx.store.migrate` (never from an ini)."""

from alembic import context

from predictorx.store import fulltext
from predictorx.store.schema import Base

engine = context.config.attributes["engine"]
with engine.connect() as connection:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        # Batch migrations rebuild a SQLite table (copy, drop, rename). With foreign keys on, the
        # drop would cascade into child rows (a task's messages); off for the migration, checked after.
        connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=fulltext.include_name,  # the full-text index is not a model
    )
    if connection.dialect.name == "postgresql":
        # Replicas starting together: one migrates, the others wait here and then find it done.
        # A transaction-scoped lock, released with the migration's commit.
        connection.exec_driver_sql("SELECT pg_advisory_xact_lock(4848484848)")
    with context.begin_transaction():
        context.run_migrations()
        if sqlite:
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise RuntimeError(f"migration left rows with broken foreign keys: {broken[:5]}")
    connection.commit()
    if sqlite:
        connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")
