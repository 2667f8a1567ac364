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


def test_version_components_keep_every_digit():
    assert parse_version("1.10.123") == (1, 10, 123)
    assert parse_version("2024.10.105") == (2024, 10, 105)
    assert compare_versions("1.100.0", "1.20.0") == 1


def test_version_with_trailing_text_is_refused():
    for text in ("1.2.3-beta", "1.2.3.4", "1.2x"):
        with pytest.raises(ValueError):
            parse_version(text)
