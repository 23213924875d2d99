"""The declared stopping rule applied to the running study: looks, their corrected intervals, closing the intake.

A look is due when the participants who completed the study reach the rule's next point in every condition
(:func:`modprefs.stats.sequential.look_due`: ``min_participants``, then every ``look_every``, at most
:func:`~modprefs.stats.sequential.n_looks` looks). It runs in the live update (:func:`modprefs.app.live_stats.refresh`,
never on a participant's request) on that update's export: ICC(2,k) per condition by ``modprefs stats``' own code
(:func:`modprefs.stats.icc_now.icc_of_source`) at the looks-corrected level
(:func:`~modprefs.stats.sequential.look_level`, 1 - alpha / looks: Bonferroni, see :mod:`modprefs.stats.sequential`
for why), and the decision (:func:`~modprefs.stats.sequential.decide`). When the target is met in every condition
(``met``), or the declared maximum is reached (``max``), the intake is closed (app_meta ``intake``: new participants
are told the study is closed; those in a session finish it). The rule closes the intake once: the lab may reopen it
on the dashboard (an override, shown there), and the rule takes no further look.

State: app_meta ``stopping_state`` (JSON: every look with its participants, level, intervals and decision;
``stopped``: the look that closed the intake) and ``stopping_looks`` (the looks claimed: a conditional update,
so with several server workers each look is taken once). The interval to report after the stop is the closing
look's (its level is ``modprefs stats --ci-level``'s value that reproduces it on the export of that moment).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from modprefs.app import service
from modprefs.app.db import Database
from modprefs.app.live_stats import LiveConfig, completed_per_condition, icc_rows
from modprefs.app.models import Meta
from modprefs.errors import UserInputError
from modprefs.stats.sequential import StoppingRule, decide, look_due, look_level, look_point, n_looks

STATE_KEY = "stopping_state"
LOOKS_KEY = "stopping_looks"


def read_state(db: Database) -> dict[str, Any]:
    """The rule's state: ``looks`` (list) and ``stopped`` (None until a look closed the intake)."""
    with db.transaction() as s:
        raw = s.scalar(select(Meta.value).where(Meta.key == STATE_KEY))
    return json.loads(raw) if raw else {"looks": [], "stopped": None}


def _looks_claimed(db: Database) -> int:
    with db.transaction() as s:
        raw = s.scalar(select(Meta.value).where(Meta.key == LOOKS_KEY))
    return int(raw) if raw else 0


def look_pending(db: Database, config: LiveConfig) -> bool:
    """Whether the rule's next look is due (and the rule has not stopped the study yet)."""
    if not config.rule.active or read_state(db)["stopped"] is not None:
        return False
    with db.transaction() as s:
        completed = completed_per_condition(s)
    return bool(completed) and look_due(config.rule, min(completed.values()), _looks_claimed(db))


def _claim_look(db: Database, index: int) -> bool:
    """Take look ``index`` (0-based) unless another worker took it: a conditional update of ``stopping_looks``."""
    with db.transaction() as s:
        if s.scalar(select(Meta.value).where(Meta.key == LOOKS_KEY)) is None:
            try:
                with s.begin_nested():
                    s.add(Meta(key=LOOKS_KEY, value="0"))
            except IntegrityError:
                return False
        res = s.execute(
            update(Meta)
            .where(Meta.key == LOOKS_KEY, Meta.value == str(index))
            .values(value=str(index + 1))
            .execution_options(synchronize_session=False)
        )
        return service.rowcount(res) == 1


def rule_summary(rule: StoppingRule) -> dict[str, Any]:
    """The declared rule with its derived numbers: the looks at most, each look's level, the looks' points."""
    looks = n_looks(rule)
    return {
        **rule.as_config(),
        "n_looks": looks,
        "look_level": look_level(rule),
        "look_points": [look_point(rule, i) for i in range(looks)],
    }


def _number(value: float | None) -> float:
    """A JSON cell as a float (None, a NaN stored as null, is NaN)."""
    return float("nan") if value is None else float(value)


def take_look(config: LiveConfig, folder: Path, index: int, n: int) -> dict[str, Any]:
    """Look ``index`` on the export in ``folder`` with ``n`` completed participants per condition (the fewest)."""
    from modprefs.stats.icc_now import icc_of_source  # noqa: PLC0415

    level = look_level(config.rule)
    look: dict[str, Any] = {"index": index, "n_participants": n, "level": level, "at": service.now()}
    try:
        rows = icc_rows(icc_of_source(folder, {**config.params, "ci_level": level}), config.rule.target_icc)
    except (UserInputError, ValueError, ArithmeticError) as exc:
        rows, look["error"] = {}, str(exc).splitlines()[0][:500]
    keep = ("icc_2_k", "icc_2_k_lo", "icc_2_k_hi", "n_participants")
    look["conditions"] = {c: {k: r[k] for k in keep} for c, r in rows.items()}
    intervals = {c: (_number(r["icc_2_k_lo"]), _number(r["icc_2_k_hi"])) for c, r in rows.items()}
    look["decision"] = decide(config.rule, intervals, n, index) if rows else "continue"
    return look


def maybe_look(db: Database, config: LiveConfig, folder: Path, snap: dict[str, Any]) -> dict[str, Any] | None:
    """Take the rule's next look on the update's export (``folder``, the snapshot ``snap`` computed on it) when
    it is due; close the intake when the look's decision is ``met`` or ``max``. Returns the look (None: none due)."""
    completed = snap.get("completed") or {}
    if not config.rule.active or not completed or read_state(db)["stopped"] is not None:
        return None
    n, index = min(completed.values()), _looks_claimed(db)
    if not look_due(config.rule, n, index) or not _claim_look(db, index):
        return None
    look = take_look(config, folder, index, n)
    with db.transaction() as s:
        raw = s.scalar(select(Meta.value).where(Meta.key == STATE_KEY))
        state = json.loads(raw) if raw else {"looks": [], "stopped": None}
        state["looks"].append(look)
        if look["decision"] in ("met", "max") and state["stopped"] is None:
            state["stopped"] = {k: look[k] for k in ("index", "n_participants", "level", "at", "decision")}
            s.merge(Meta(key=service.INTAKE_KEY, value="closed"))
            service.log.warning("stopping rule: look %d: %s; the intake is closed", index, look["decision"])
        s.merge(Meta(key=STATE_KEY, value=json.dumps(state)))
    return look
