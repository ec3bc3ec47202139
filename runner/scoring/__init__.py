"""Scoring: the declared metrics and labels, the batch scorer, bands and aggregation."""
