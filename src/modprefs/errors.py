"""The project's base class for errors a user can cause and fix (bad config, bad tables, bad audio).

Every module's own user-facing error (``ConfigError``, ``RatingsValidationError``, ``PrismFormatError``,
...) derives from :class:`UserInputError`. Entry points (the ``modprefs`` CLI, the workflow's
``script:`` adapters through :func:`modprefs.workflow_log.run_adapter`) print such an error's message
— which names the file, row, column or key — and exit non-zero WITHOUT a Python traceback; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations


class UserInputError(ValueError):
    """An expected, user-fixable error; its message names the file/row/column or config key."""


class ModelNotInstalledError(UserInputError, RuntimeError):
    """A speech model, voice or QC model is not installed; the message names the pip package to install or the file
    to provide. One class for the synthesisers (:mod:`modprefs.speech.kokoro_onnx`, piper, espeak-ng) and the audio
    QC models (:mod:`modprefs.speech.qc_models`)."""


class InsufficientDataError(ValueError):
    """The data cannot support a model (too few observations for its parameters, too few levels of a
    grouping factor, collinear fixed effects). Analyses that meet it are skipped with this message
    as the reason, rather than failing the whole run: it is a property of the study, not a bug."""
