import pytest
from repairkit import compare_versions, parse_version


def test_parse_three_parts():
    assert parse_version("1.4.2") == (1, 4, 2)


def test_missing_patch_is_zero():
    assert parse_version("2.0") == (2, 0, 0)


def test_compare():
    assert compare_versions("1.4.2", "1.5.0") == -1
    assert compare_versions("2.0", "2.0.0") == 0


def test_not_a_version():
    with pytest.raises(ValueError):
        parse_version("latest")
