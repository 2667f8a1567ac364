import pytest
from repairkit import parse_duration


def test_hours_and_minutes():
    assert parse_duration("1h30m") == 5400


def test_days():
    assert parse_duration("2d") == 172800


def test_garbage_is_refused():
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_spaces_between_parts():
    assert parse_duration("1h 30m") == 5400
    assert parse_duration(" 2d 4h ") == 187200


def test_upper_case_units():
    assert parse_duration("1H30M") == 5400
    assert parse_duration("45S") == 45
