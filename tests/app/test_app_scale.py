"""The annotation app on the study's rating scale (study.scale): sliders, server checks, export, `app load`."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

pytest.importorskip("starlette")
pytest.importorskip("sqlalchemy")
pytest.importorskip("httpx")


from starlette.testclient import TestClient

from modprefs.app import service
from modprefs.app.export import export_dir
from modprefs.app.pages import slider_scale
from modprefs.app.server import create_app
from modprefs.scale import PAPER_SCALE, RatingScale
from support.app_sim import CSRF_RE, nonsensical_position, page_data
from support.app_study import load, make_study

FAST = {"text_min_read_s": 0.05, "text_reveal": "off"}
FIVE = RatingScale(1, 5, 1, "Bad", "Excellent")
HALF = RatingScale(0, 10, 0.5, "Awful", "Superb")


def scale_meta(scale: RatingScale) -> dict[str, str]:
    return {service.SCALE_KEY: json.dumps(scale.as_config())}


def text_participant(client):
    """Enter until a text-condition participant is at trial 0; (token, csrf, page html)."""
    for _ in range(6):
        r = client.get("/start")
        token, csrf = str(r.url).rsplit("/", 1)[-1], CSRF_RE.search(r.text).group(1)
        client.post(f"/p/{token}/consent", data={"csrf": csrf, "agree": "yes"})
        demo = {"csrf": csrf, "age": "30", "native_english": "yes", "timezone": "Europe/London"}
        client.post(f"/p/{token}/demographics", data=demo)
        r = client.get(f"/p/{token}")
        if page_data(r.text)["condition"] == "text":
            return token, csrf, r.text
    raise AssertionError("no text slot")


def form(csrf, html, **kw):
    coherent = "B" if nonsensical_position(html, "text") == "A" else "A"
    return {"csrf": csrf, "preference": coherent, "submit_t": "1", "events": "[]", **kw}


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=1)


def serve(study, tmp_path, scale: RatingScale | None):
    url = f"sqlite:///{tmp_path}/scale.db"
    db = load(study, url, **(scale_meta(scale) if scale else {}))
    return db, TestClient(create_app(url, settings_overrides=FAST), base_url="http://testserver")


def test_settings_read_the_stored_scale():
    assert service.Settings.from_meta({}).scale == PAPER_SCALE
    assert service.Settings.from_meta(scale_meta(FIVE)).scale == FIVE
    with pytest.raises(service.SettingsError, match="rating_scale"):
        service.Settings.from_meta({service.SCALE_KEY: json.dumps({"min": 5, "max": 1})})
    assert slider_scale(PAPER_SCALE) == {
        "min": "1",
        "max": "100",
        "step": "1",
        "start": "50",
        "label_min": "Terrible",
        "label_max": "Perfect",
        "points": None,
    }
    assert slider_scale(FIVE)["start"] == "3" and slider_scale(HALF)["start"] == "5"
    # a short scale (<= 11 points) is shown as labelled category points: P.808's ACR labels on 1..5 by default,
    # the lab's (app load --point-labels) otherwise; the end labels at the ends of another short scale
    acr = ["Bad", "Poor", "Fair", "Good", "Excellent"]
    assert [(p["value"], p["label"]) for p in service.Settings.from_meta(scale_meta(FIVE)).points] == list(
        zip("12345", acr)
    )
    assert service.Settings.from_meta({}).points is None and service.Settings.from_meta(scale_meta(HALF)).points is None
    seven = RatingScale(1, 7, 1, "Disagree", "Agree")
    assert [p["label"] for p in service.scale_points(seven)] == ["Disagree", "", "", "", "", "", "Agree"]
    lab = {**scale_meta(FIVE), service.POINT_LABELS_KEY: json.dumps(["1", "2", "3", "4", "5"])}
    assert [p["label"] for p in service.Settings.from_meta(lab).points] == ["1", "2", "3", "4", "5"]
    with pytest.raises(service.SettingsError, match="point_labels: 2 labels for a scale of 5 points"):
        service.Settings.from_meta({**scale_meta(FIVE), service.POINT_LABELS_KEY: '["a", "b"]'})


def test_paper_scale_by_default(study, tmp_path):
    db, client = serve(study, tmp_path, None)
    with client:
        token, csrf, html = text_participant(client)
        assert 'min="1" max="100" step="1" value="50"' in html
        assert 'id="end-min-rating-A">Terrible</span>' in html and 'id="end-max-rating-A">Perfect</span>' in html
        r = client.post(f"/p/{token}/trial/0", data=form(csrf, html, rating_A="101", rating_B="40"))
        assert r.status_code == 422 and "rating_A: must be 1..100" in r.text
        r = client.post(f"/p/{token}/trial/0", data=form(csrf, html, rating_A="60", rating_B="40"))
        assert r.status_code in (200, 303)
    export_dir(db, tmp_path / "export")
    ratings = pd.read_csv(tmp_path / "export/ratings.csv")
    assert sorted(ratings["rating"]) == [40, 60]
    assert "60.0" not in (tmp_path / "export/ratings.csv").read_text()


def test_five_point_scale_sliders_checks_and_export(study, tmp_path):
    db, client = serve(study, tmp_path, FIVE)
    with client:
        token, csrf, html = text_participant(client)
        # labelled, numbered category points (radio buttons), no slider
        assert 'type="range"' not in html and '<fieldset class="rating points" id="rating_A"' in html
        points = re.findall(
            r'name="rating_A" value="(\d)" id="rating_A-\d"> <span class="num">\d</span> <span class="plabel">(\w+)',
            html,
        )
        assert points == list(zip("12345", ["Bad", "Poor", "Fair", "Good", "Excellent"])), points
        for bad in ("6", "0", "3.5", "50"):
            r = client.post(f"/p/{token}/trial/0", data=form(csrf, html, rating_A=bad, rating_B="2"))
            assert r.status_code == 422 and "rating_A: must be 1..5" in r.text, bad
        event = {"id": "x1", "kind": "slider", "pos": "A", "t": 1, "x": 6, "field": "rating"}
        r = client.post(f"/p/{token}/events", json={"trial": 0, "events": [event]}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 422 and "1..5" in r.json()["error"]
        event["x"] = 4
        r = client.post(f"/p/{token}/events", json={"trial": 0, "events": [event]}, headers={"X-CSRF-Token": csrf})
        assert r.status_code == 200
        assert page_data(client.get(f"/p/{token}").text)["restore"]["sliders"] == {"rating_A": 4}
        r = client.post(f"/p/{token}/trial/0", data=form(csrf, html, rating_A="4", rating_B="2"))
        assert r.status_code in (200, 303)
    export_dir(db, tmp_path / "export")
    ratings = pd.read_csv(tmp_path / "export/ratings.csv")
    assert pd.api.types.is_integer_dtype(ratings["rating"]) and sorted(ratings["rating"]) == [2, 4]


def test_half_point_scale(study, tmp_path):
    db, client = serve(study, tmp_path, HALF)
    with client:
        token, csrf, html = text_participant(client)
        assert 'min="0" max="10" step="0.5" value="5"' in html
        r = client.post(f"/p/{token}/trial/0", data=form(csrf, html, rating_A="7.3", rating_B="2"))
        assert r.status_code == 422 and "must be 0..10 in steps of 0.5" in r.text
        r = client.post(f"/p/{token}/trial/0", data=form(csrf, html, rating_A="7.5", rating_B="0"))
        assert r.status_code in (200, 303)
    from modprefs.cli import main

    out = tmp_path / "export"
    assert main(["app", "export", "--db", db.url, "--out", str(out), "--validate", str(study.files.stimuli)]) == 0
    assert sorted(pd.read_csv(out / "ratings.csv")["rating"]) == [0.0, 7.5]  # validated on the study's scale


def test_cli_load_stores_the_scale(study, tmp_path, capsys):
    from modprefs.cli import main

    f = study.files
    base = ["app", "load", "--assignments", str(f.assignments), "--stimuli", str(f.stimuli)]
    base += ["--conversations", str(f.conversations), "--prompts", str(f.prompts), "--manifest", str(f.manifest)]
    base += ["--base-dir", str(f.base_dir)]

    def stored(url: str) -> RatingScale:
        from modprefs.app.db import open_database

        return service.read_settings(open_database(url, "status")).scale

    url = f"sqlite:///{tmp_path}/a.db"
    assert main([*base, "--db", url]) == 0
    assert stored(url) == PAPER_SCALE  # loaded without a scale: the paper's
    config = tmp_path / "config.yaml"
    config.write_text("study:\n  scale: {min: 1, max: 5, step: 1, labels: [Bad, Excellent]}\n")
    url = f"sqlite:///{tmp_path}/b.db"
    assert main([*base, "--db", url, "--configfile", str(config)]) == 0
    assert stored(url) == FIVE
    url = f"sqlite:///{tmp_path}/c.db"
    assert main([*base, "--db", url, "--scale", "0:10:0.5", "--scale-labels", "Awful", "Superb"]) == 0
    assert stored(url) == HALF
    # a short scale's own point labels (one per point), and the lab's codes
    url = f"sqlite:///{tmp_path}/f.db"
    labels = ["awful", "poor", "ok", "good", "great"]
    argv = [*base, "--db", url, "--scale", "1:5", "--point-labels", *labels, "--expired-code", "TIMEOUT1"]
    assert main([*argv, "--error-code", "MEDIA1"]) == 0
    from modprefs.app.db import open_database

    settings = service.read_settings(open_database(url, "status"))
    assert [p["label"] for p in settings.points] == labels
    assert (settings.expired_code, settings.error_code) == ("TIMEOUT1", "MEDIA1")
    capsys.readouterr()
    assert main([*base, "--db", f"sqlite:///{tmp_path}/g.db", "--scale", "1:5", "--point-labels", "a", "b"]) == 2
    assert "point_labels: 2 labels for a scale of 5 points" in capsys.readouterr().err
    assert main([*base, "--db", f"sqlite:///{tmp_path}/h.db", "--point-labels", "a", "b"]) == 2
    assert "the scale has 100 points; labelled points are for scales of at most 11" in capsys.readouterr().err
    assert not (tmp_path / "g.db").exists() and not (tmp_path / "h.db").exists()
    config.write_text("study:\n  scale: {min: 5, max: 1}\n")
    assert main([*base, "--db", f"sqlite:///{tmp_path}/d.db", "--configfile", str(config)]) == 2
    assert "--configfile" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--db", f"sqlite:///{tmp_path}/e.db", "--scale", "5:1"])
    assert not (tmp_path / "d.db").exists() and not (tmp_path / "e.db").exists()
