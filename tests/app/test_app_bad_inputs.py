"""Bad inputs to `modprefs app` fail cleanly (issue #13 item 7, build item 2): exit != 0, a message
naming the database, file or argument, no traceback, and nothing created or changed — the loaded
study's database folder, the export folder and the folder of a database that does not exist are
hashed before and after (tests/support/bad_inputs.py), and a database that should not exist still does not.

Each case runs the real command in a subprocess (`python -m modprefs.cli app ...`).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf

from modprefs.app.db import Database
from support.app_study import ROOT, load, make_study
from support.bad_inputs import assert_clean_failure


@dataclass
class World:
    tmp: Path
    study: object
    db_dir: Path
    url: str  # a loaded study
    empty_url: str  # app tables, no study
    junk_url: str  # a file that is not a database
    missing_dir: Path  # must never be created
    out: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    tmp = tmp_path_factory.mktemp("bad")
    st = make_study(tmp / "study", n_prompts=4, raters_per_condition=1, trials=1)
    db_dir = tmp / "db"
    db_dir.mkdir()
    url = f"sqlite:///{db_dir}/study.db"
    load(st, url).dispose()
    empty = Database(f"sqlite:///{db_dir}/empty.db")
    empty.create_all()
    empty.dispose()
    (db_dir / "junk.db").write_bytes(np.random.default_rng(0).bytes(4096))
    out = tmp / "out"
    out.mkdir()
    (out / "keep.csv").write_text("an earlier export\n")
    (tmp / "afile").write_text("a file where a database folder would go\n")
    return World(
        tmp, st, db_dir, url, f"sqlite:///{db_dir}/empty.db", f"sqlite:///{db_dir}/junk.db", tmp / "nowhere", out
    )


def app(*args: str) -> list[str]:
    return [sys.executable, "-m", "modprefs.cli", "app", *args]


def env() -> dict[str, str]:
    return {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "OPENBLAS_NUM_THREADS": "1"}


def missing(w: World) -> str:
    return f"sqlite:///{w.missing_dir}/missing.db"


def load_args(w: World, url: str, manifest: Path | None = None, assignments: Path | None = None) -> list[str]:
    f = w.study.files
    return [
        "load",
        "--db",
        url,
        "--assignments",
        str(assignments or f.assignments),
        "--stimuli",
        str(f.stimuli),
        "--conversations",
        str(f.conversations),
        "--prompts",
        str(f.prompts),
        "--manifest",
        str(manifest or f.manifest),
        "--base-dir",
        str(f.base_dir),
    ]


def broken_clip(w: World, name: str, write) -> Path:
    """A copy of the study's manifest whose first audio clip is replaced by ``write(path)``."""
    d = w.tmp / name
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(w.study.dir / "clips", d / "clips")
    man = pd.read_csv(w.study.files.manifest)
    man["path"] = [str(d / "clips" / Path(p).name) for p in man["path"]]
    man.to_csv(d / "manifest.csv", index=False)
    write(d / "clips" / Path(man["path"][0]).name)
    return d / "manifest.csv"


def lab_text(w: World, name: str, content: str) -> Path:
    """A lab's study text ``name`` holding ``content``, beside (not inside) the watched folders."""
    path = w.tmp / "texts" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(content, encoding="utf-8")
    return path


def bad_assignments(w: World) -> Path:
    asg = pd.read_csv(w.study.files.assignments, dtype=str)
    asg.loc[2, "trial"] = "two"
    path = w.tmp / "bad_assignments.csv"
    asg.to_csv(path, index=False)
    return path


def resample(path: Path) -> None:
    data, sr = sf.read(path)
    sf.write(path, np.concatenate([data, np.zeros(int(0.5 * sr))]), sr)  # 0.5 s longer than the manifest says


def to_8khz(path: Path) -> None:
    """The clip resampled to 8 kHz: same duration, other rate than the manifest's."""
    from scipy.signal import resample_poly

    data, sr = sf.read(path)
    sf.write(path, resample_poly(data, 8000, sr), 8000)


def to_stereo(path: Path) -> None:
    data, sr = sf.read(path)
    sf.write(path, np.stack([data, data], axis=1), sr)


# (id, argv(w), fragments the message must contain)
CASES = [
    (
        "export-missing-db",
        lambda w: app("export", "--db", missing(w), "--out", str(w.out)),
        ["missing.db", "does not exist", "modprefs app load"],
    ),
    ("status-missing-db", lambda w: app("status", "--db", missing(w)), ["missing.db", "does not exist", "app load"]),
    ("invite-missing-db", lambda w: app("invite", "--db", missing(w), "-n", "2"), ["missing.db", "does not exist"]),
    (
        "serve-missing-db",
        lambda w: app("serve", "--db", missing(w), "--port", "8765"),
        ["missing.db", "does not exist"],
    ),
    ("invite-empty-db", lambda w: app("invite", "--db", w.empty_url, "-n", "2"), ["empty.db", "holds no study"]),
    (
        "export-empty-db",
        lambda w: app("export", "--db", w.empty_url, "--out", str(w.out)),
        ["empty.db", "holds no study", "app load"],
    ),
    ("status-not-a-database", lambda w: app("status", "--db", w.junk_url), ["junk.db", "cannot open the database"]),
    ("status-not-a-url", lambda w: app("status", "--db", "nonsense://x/y"), ["nonsense://", "cannot open"]),
    ("invite-n-negative", lambda w: app("invite", "--db", w.url, "-n", "-3"), ["-n", "-3 is not in 1..100000"]),
    ("invite-n-zero", lambda w: app("invite", "--db", w.url, "-n", "0"), ["-n", "0 is not in 1..100000"]),
    (
        "invite-bad-base-url",
        lambda w: app("invite", "--db", w.url, "-n", "1", "--base-url", "study.example"),
        ["--base-url", "not an http:// or https:// URL"],
    ),
    (
        "serve-port-99999",
        lambda w: app("serve", "--db", w.url, "--port", "99999"),
        ["--port", "99999 is not in 1..65535"],
    ),
    ("serve-port-0", lambda w: app("serve", "--db", w.url, "--port", "0"), ["--port", "0 is not in 1..65535"]),
    (
        "serve-port-text",
        lambda w: app("serve", "--db", w.url, "--port", "http"),
        ["--port", "'http' is not an integer"],
    ),
    (
        "serve-workers-sqlite",
        lambda w: app("serve", "--db", w.url, "--workers", "2"),
        ["--workers 2 needs PostgreSQL", "study.db"],
    ),
    ("serve-workers-zero", lambda w: app("serve", "--db", w.url, "--workers", "0"), ["--workers", "not in 1..256"]),
    (
        "serve-abandon-zero",
        lambda w: app("serve", "--db", w.url, "--abandon-minutes", "0"),
        ["--abandon-minutes", "must be a finite number > 0"],
    ),
    (
        "serve-abandon-nan",
        lambda w: app("serve", "--db", w.url, "--abandon-minutes", "nan"),
        ["--abandon-minutes", "finite"],
    ),
    (
        "serve-tolerance-negative",
        lambda w: app("serve", "--db", w.url, "--timing-tolerance", "-1"),
        ["--timing-tolerance", ">= 0"],
    ),
    (
        "serve-rate-negative",
        lambda w: app("serve", "--db", w.url, "--rate-start-ip", "-5"),
        ["--rate-start-ip", "not in 0..10000000"],
    ),
    ("serve-keep-alive-zero", lambda w: app("serve", "--db", w.url, "--keep-alive", "0"), ["--keep-alive"]),
    (
        "load-zero-byte-wav",
        lambda w: app(
            *load_args(w, f"sqlite:///{w.missing_dir}/new.db", broken_clip(w, "zero", lambda p: p.write_bytes(b"")))
        ),
        ["zero/clips/", ".wav", "is empty (0 bytes)"],
    ),
    (
        "load-random-bytes-wav",
        lambda w: app(
            *load_args(
                w,
                f"sqlite:///{w.missing_dir}/new.db",
                broken_clip(w, "noise", lambda p: p.write_bytes(np.random.default_rng(1).bytes(20000))),
            )
        ),
        ["noise/clips/", ".wav", "cannot be decoded as audio"],
    ),
    (
        "load-wav-longer-than-manifest",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db", broken_clip(w, "long", resample))),
        ["long/clips/", "but the manifest says", "0.001 s"],
    ),
    (
        "load-wav-at-8khz",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db", broken_clip(w, "k8", to_8khz))),
        ["k8/clips/", "has sample rate 8000 Hz but the manifest says"],
    ),
    (
        "load-wav-stereo",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db", broken_clip(w, "st", to_stereo))),
        ["st/clips/", "has 2 channels but the manifest's clips are mono"],
    ),
    (
        "load-db-where-no-folder-can-be",
        lambda w: app(*load_args(w, "sqlite:////proc/modprefs/study.db")),
        ["/proc/modprefs/study.db", "cannot"],
    ),
    (
        "load-db-under-a-file",
        lambda w: app(*load_args(w, f"sqlite:///{w.tmp / 'afile'}/study.db")),
        ["afile/study.db", "cannot"],
    ),
    (
        "load-assignments-bad-trial",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db", assignments=bad_assignments(w))),
        ["bad_assignments.csv", "row 4", "column trial", "'two'"],
    ),
    ("load-into-loaded-db", lambda w: app(*load_args(w, w.url)), ["already holds a study", "--replace"]),
    # the lab's texts and the duration they state (issue #49): refused before a database exists
    (
        "load-minutes-per-trial-1e308",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db"), "--minutes-per-trial", "1e308"),
        ["argument --minutes-per-trial: 1e308 must be a finite number > 0 and <= 60"],
    ),
    (
        "load-overhead-minutes-1e308",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db"), "--overhead-minutes", "1e308"),
        ["argument --overhead-minutes: 1e308 must be a finite number >= 0 and <= 600"],
    ),
    (
        "load-consent-empty-file",
        lambda w: app(*load_args(w, f"sqlite:///{w.missing_dir}/new.db"), "--consent", str(lab_text(w, "e.md", ""))),
        ["--consent", "texts/e.md: the file is empty"],
    ),
    (
        "load-consent-only-invisible-characters",
        lambda w: app(
            *load_args(w, f"sqlite:///{w.missing_dir}/new.db"),
            "--consent",
            str(lab_text(w, "bom.md", "\ufeff\u200b\n")),
        ),
        ["texts/bom.md: the file is empty (only invisible characters: U+FEFF ZERO WIDTH NO-BREAK SPACE, U+200B"],
    ),
    (
        "load-consent-unclosed-minutes",
        lambda w: app(
            *load_args(w, f"sqlite:///{w.missing_dir}/new.db"),
            "--consent",
            str(lab_text(w, "open.md", "# Consent\n\nIt takes about {minutes minutes.\n")),
        ),
        ["texts/open.md: unclosed placeholder '{minutes minutes.' on line 3", "write {{ for a brace"],
    ),
    (
        "export-validate-missing-stimuli",
        lambda w: app("export", "--db", w.url, "--out", str(w.out), "--validate", str(w.tmp / "no_stimuli.csv")),
        ["no_stimuli.csv", "cannot read the stimuli table"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_app_cli_bad_input_fails_cleanly(world, case):
    name, argv, fragments = case
    result = assert_clean_failure(
        argv(world),
        watch=[world.db_dir, world.out, world.missing_dir, world.study.dir],
        must_mention=fragments,
        cwd=world.tmp,
        env=env(),
        timeout=120,
    )
    assert result.returncode == 2, result.output
    assert not world.missing_dir.exists(), "a database folder was created for a refused command"
    assert "serving" not in result.output  # nothing claims to serve before the arguments are checked
    assert not (world.tmp / "study.db").exists()  # no default database appeared either


def test_postgres_url_that_cannot_connect(world):
    pytest.importorskip("psycopg")
    r = assert_clean_failure(
        app("status", "--db", "postgresql://nobody@127.0.0.1:1/none"),
        watch=[world.db_dir],
        must_mention=["127.0.0.1:1", "cannot open the database"],
        cwd=world.tmp,
        env=env(),
        timeout=120,
    )
    assert r.returncode == 2


@pytest.mark.parametrize(
    ("timing", "said"),
    [
        ({"minutes_per_trial": 1e308}, "app load --minutes-per-trial 1e+308: must be a finite number of minutes > 0"),
        ({"minutes_per_trial": 0.0}, "--minutes-per-trial 0.0: must be a finite number of minutes > 0 and <= 60"),
        ({"overhead_minutes": float("inf")}, "--overhead-minutes inf: must be a finite number of minutes >= 0"),
        ({"overhead_minutes": 601.0}, "--overhead-minutes 601.0: must be a finite number of minutes >= 0 and <= 600"),
    ],
    ids=["per-trial-1e308", "per-trial-0", "overhead-inf", "overhead-601"],
)
def test_a_duration_out_of_bounds_is_named_by_the_library_too(timing, said):
    """StudyTexts set by a caller other than the CLI: the duration's bounds are the texts module's, so a timing prior
    of 1e308 is a StudyTextError naming the option, not an OverflowError from rounding an infinite duration."""
    from modprefs.app.texts import StudyTextError, StudyTexts, estimate_minutes

    with pytest.raises(StudyTextError) as info:
        StudyTexts(**timing).render(trials=3)
    assert said in str(info.value)
    assert estimate_minutes(4, per_trial=60.0, overhead=600.0) == 840  # the bounds themselves are allowed
