"""One builder per paper: ``run_spec(config) -> jaxfl.sweep.RunSpec`` (see jaxfl.builders)."""
