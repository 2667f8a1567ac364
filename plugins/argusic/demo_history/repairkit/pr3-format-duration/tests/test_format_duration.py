import pytest
from repairkit import parse_duration
from repairkit.durations import format_duration


def test_format_duration_largest_units_first():
    assert format_duration(5400) == "1h30m"
    assert format_duration(90061) == "1d1h1m1s"
    assert format_duration(45) == "45s"


def test_format_duration_of_zero():
    assert format_duration(0) == "0s"


def test_format_duration_reads_back():
    for seconds in (1, 59, 60, 3599, 86400, 172861):
        assert parse_duration(format_duration(seconds)) == seconds


def test_format_duration_refuses_negative_and_non_integers():
    with pytest.raises(ValueError):
        format_duration(-1)
    with pytest.raises(TypeError):
        format_duration(1.5)
    with pytest.raises(TypeError):
        format_duration(True)


def test_format_duration_is_exported():
    import repairkit

    assert repairkit.format_duration is format_duration
