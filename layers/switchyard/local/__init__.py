"""Running workflows on one machine: the database, installing workflows, talking to the engine."""
