"""The simulated rater panel, in parts; the model and its entry point: :mod:`modprefs.ratings.simulate`."""
