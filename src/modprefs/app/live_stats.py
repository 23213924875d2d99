"""Live reliability: ICC(2,1) and ICC(2,k) per condition from the ratings so far, as ``modprefs stats`` computes them.

Every ``update_every_trials`` stored tasks (``study.stopping.update_every_trials``, stored by ``app load``) the
server exports the study as ``modprefs app export`` does (:func:`modprefs.app.export.export_dir`, into a temporary
folder) and runs ``modprefs stats``' own ICC steps on it (:func:`modprefs.stats.icc_now.icc_of_source`, with the
seed and the interval settings stored at load: ``seed``, ``stats.n_boot``, ``stats.icc_ci_method``,
``stats.ci_level``), so the numbers equal ``icc.csv`` of ``modprefs stats --ratings EXPORT`` with those settings at
that moment. Beside them: the mean raters per clip and the raters per clip still needed for the lab's target
ICC(2,k) (``study.stopping.target_icc``; :func:`modprefs.stats.icc_now.raters_needed_for`), the tasks the update
saw and when it ran. Stored as app_meta ``live_stats`` (JSON), shown on the dashboard and by
``modprefs app status --stats``; the stopping rule's looks run in the same update (:mod:`.stopping`), and the
server runs the updates in the background (:mod:`.live_runner`).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from modprefs.app import service
from modprefs.app.db import Database
from modprefs.app.models import Meta, Participant, Slot, TrialResult
from modprefs.errors import UserInputError
from modprefs.stats.sequential import StoppingRule, rule_from_config

log = logging.getLogger("modprefs.app")

CONFIG_KEY = "live_config"  # app_meta: {"stopping": study.stopping, "params": {seed, n_boot, icc_ci_method, ci_level}}
SNAPSHOT_KEY = "live_stats"  # app_meta: the last update (JSON, :func:`snapshot`)
CLAIM_KEY = "live_claim"  # app_meta: the tasks count of the last claimed update
PARAM_KEYS = ("seed", "n_boot", "icc_ci_method", "ci_level")  # the stats settings stored for the live ICC
ICC_FIELDS = (
    "n_participants",
    "n_clips",
    "k_mean_raters",
    "k_effective",
    "icc_2_1",
    "icc_2_1_lo",
    "icc_2_1_hi",
    "icc_2_k",
    "icc_2_k_lo",
    "icc_2_k_hi",
    "ci_level",
    "ci_method",
    "note",
)


@dataclass(frozen=True)
class LiveConfig:
    """The stopping rule (with the update cadence) and ``modprefs stats``' params for the live ICC; ``enabled``:
    the study was loaded with a live configuration (``modprefs app load`` always stores one)."""

    rule: StoppingRule
    params: dict[str, Any]
    enabled: bool = True


def live_config_meta(
    stopping: dict[str, Any] | None, stats: dict[str, Any] | None, seed: int | None, where: str = "app load"
) -> str:
    """app_meta ``live_config`` as ``app load`` stores it, from a workflow config's ``study.stopping``, ``stats``
    and ``seed`` (each optional: the defaults); a bad stopping key raises a ``StoppingRuleError`` naming ``where``
    (the file) and the key."""
    rule = rule_from_config(stopping, where)
    params = {k: (stats or {})[k] for k in PARAM_KEYS if k != "seed" and k in (stats or {})}
    if seed is not None:
        params["seed"] = int(seed)
    return json.dumps({"stopping": rule.as_config(), "params": params})


def read_config(s: Session) -> LiveConfig:
    """The study's :class:`LiveConfig` (app_meta ``live_config``; absent: the defaults, rule off, not enabled: no
    background updates, as for a study loaded by an earlier version)."""
    from modprefs.stats.icc_now import stats_params  # noqa: PLC0415

    raw = s.scalar(select(Meta.value).where(Meta.key == CONFIG_KEY))
    stored = json.loads(raw) if raw else {}
    scale = service.scale_from_meta(s.scalar(select(Meta.value).where(Meta.key == service.SCALE_KEY)))
    rule = rule_from_config(stored.get("stopping"), f"app_meta {CONFIG_KEY}")
    return LiveConfig(rule, stats_params(scale.as_config(), **stored.get("params", {})), enabled=raw is not None)


def _meta_json(s: Session, key: str) -> dict[str, Any] | None:
    raw = s.scalar(select(Meta.value).where(Meta.key == key))
    return json.loads(raw) if raw else None


def read_snapshot(db: Database) -> dict[str, Any] | None:
    """The last stored update (None before the first)."""
    with db.transaction() as s:
        return _meta_json(s, SNAPSHOT_KEY)


def n_tasks(s: Session) -> int:
    """Stored tasks (the practice task left out): what the update cadence counts."""
    return int(s.scalar(select(func.count()).select_from(TrialResult).where(TrialResult.trial >= 0)) or 0)


def completed_per_condition(s: Session) -> dict[str, int]:
    """Participants who completed every task, per condition of the design (0 where none yet)."""
    conditions = s.scalars(select(Slot.condition).distinct()).all()
    done = dict(
        s.execute(
            select(Participant.condition, func.count())
            .where(Participant.completed.is_(True), Participant.passed_attention.is_(True))
            .group_by(Participant.condition)
        )
        .tuples()
        .all()
    )
    return {c: int(done.get(c, 0)) for c in sorted(conditions)}


def _finite(value: Any) -> Any:
    """A JSON-safe cell: NaN and infinities as None, numpy numbers as Python numbers."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def icc_rows(icc: Any, target: float) -> dict[str, dict[str, Any]]:
    """Per condition: :data:`ICC_FIELDS` of the ICC table and the raters needed for ``target`` (its estimate, its
    pessimistic count at the ICC(2,1) interval's lower bound, the raters per clip still needed)."""
    from modprefs.stats.icc_now import raters_needed_for  # noqa: PLC0415

    needed = raters_needed_for(icc, target).set_index("condition")
    out: dict[str, dict[str, Any]] = {}
    for row in icc.to_dict("records"):
        cond = str(row["condition"])
        extra = needed.loc[cond]
        out[cond] = {
            **{k: _finite(row.get(k)) for k in ICC_FIELDS},
            "raters_needed": _finite(extra["raters_needed"]),
            "raters_needed_pessimistic": _finite(extra["raters_needed_pessimistic"]),
            "raters_still_needed": _finite(extra["raters_still_needed"]),
        }
    return out


def snapshot(db: Database, config: LiveConfig, folder: Path) -> dict[str, Any]:
    """Export the study into ``folder`` and compute the live numbers on it (:func:`icc_rows`); a study the
    statistics cannot analyse yet (no ratings, one participant) gives ``error`` with the reason instead."""
    from modprefs.app.export import export_dir  # noqa: PLC0415
    from modprefs.stats.icc_now import icc_of_source  # noqa: PLC0415

    with db.transaction() as s:
        tasks = n_tasks(s)
        completed = completed_per_condition(s)
    started = service.now()
    export_dir(db, folder)
    out: dict[str, Any] = {"tasks": tasks, "completed": completed, "target_icc": config.rule.target_icc}
    try:
        out["conditions"] = icc_rows(icc_of_source(folder, config.params), config.rule.target_icc)
    except (UserInputError, ValueError, ArithmeticError) as exc:
        out["conditions"], out["error"] = {}, str(exc).splitlines()[0][:500]
    out["ci_level"] = float(config.params["ci_level"])
    out["seconds"] = round(service.now() - started, 2)
    out["updated_at"] = service.now()
    out["updated_utc"] = datetime.fromtimestamp(out["updated_at"], tz=UTC).isoformat(timespec="seconds")
    return out


def store(db: Database, key: str, value: dict[str, Any]) -> None:
    with db.transaction() as s:
        s.merge(Meta(key=key, value=json.dumps(value)))


def claim(db: Database, every: int) -> int | None:
    """Claim the next update when ``every`` tasks were stored since the last claim: the tasks count claimed, or
    None (not due, or another worker claimed it first: a conditional update, so only one wins)."""
    with db.transaction() as s:
        tasks = n_tasks(s)
        raw = s.scalar(select(Meta.value).where(Meta.key == CLAIM_KEY))
        if raw is None:
            try:
                with s.begin_nested():
                    s.add(Meta(key=CLAIM_KEY, value="0"))
            except IntegrityError:
                return None
            raw = "0"
        if tasks - int(raw) < every:
            return None
        res = s.execute(
            update(Meta)
            .where(Meta.key == CLAIM_KEY, Meta.value == raw)
            .values(value=str(tasks))
            .execution_options(synchronize_session=False)
        )
        return tasks if service.rowcount(res) == 1 else None
