"""The result model, its JSON form and schema, saved runs, and the run's event channel."""
