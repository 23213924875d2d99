"""One declaration of what each analysis writes (modprefs.stats.tables.catalog), and the analyses keep to it."""

from __future__ import annotations

from modprefs.stats.tables.analyses import ANALYSES, TABLE5_TITLES, TABLE6_TITLES, TITLES
from modprefs.stats.tables.catalog import OUTPUTS


def test_every_analysis_is_declared_with_titled_tables():
    assert set(OUTPUTS) == set(ANALYSES)
    titled = {**TITLES, **TABLE5_TITLES, **TABLE6_TITLES}
    for name, (tables, _) in OUTPUTS.items():
        assert tables and all(t in titled for t in tables), name
    assert OUTPUTS["table5"][0] == tuple(TABLE5_TITLES) and OUTPUTS["table6"][0] == tuple(TABLE6_TITLES)
