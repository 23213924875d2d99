"""Ratings stage: the three rating tables, simulated (a calibrated rater panel) or collected.

* :mod:`modprefs.ratings.schema` — column specs read from ``workflow/schemas/*.schema.yaml``.
* :mod:`modprefs.ratings.sources` — any ratings source (folder, CSV/Parquet, wide, column map, datasets, hub).
* :mod:`modprefs.ratings.ingest` — :func:`ingest_ratings` / :func:`validate_ratings_dir`, every problem
  with file/row/column.
* :mod:`modprefs.ratings.read` — the stimuli and the study tables as the analyses read them.
* :mod:`modprefs.ratings.simulate` — :func:`simulate_ratings` and :class:`SimulationParams`.
"""

from modprefs.ratings.ingest import RatingsValidationError, validate_ratings_dir
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams

__all__ = ["RatingsValidationError", "SimulationParams", "simulate_ratings", "validate_ratings_dir"]
