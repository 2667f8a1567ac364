import pytest
from repairkit import parse_duration


def test_hours_and_minutes():
    assert parse_duration("1h30m") == 5400


def test_days():
    assert parse_duration("2d") == 172800


def test_garbage_is_refused():
    with pytest.raises(ValueError):
        parse_duration("soon")
