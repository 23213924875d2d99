"""Errors of ``modprefs plan`` that a user causes and can fix (they name the argument)."""

from __future__ import annotations

from modprefs.errors import UserInputError


class PlanInputError(UserInputError):
    """A bad design grid, target, cost or prior; the message starts with the argument's name."""


class PlanInfeasibleError(PlanInputError):
    """No design in the grid meets the targets; the message names the targets that were missed."""
