"""ragcite's Hydra sweeper plugin (``hydra/sweeper=ragcite``, the default of ragcite's config)."""
