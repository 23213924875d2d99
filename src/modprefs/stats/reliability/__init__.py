"""Reliability: ICC, its intervals and difference test, Krippendorff's alpha, resampling, rater scaling."""
