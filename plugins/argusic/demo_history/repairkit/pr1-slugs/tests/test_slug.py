from repairkit import slugify


def test_plain_word():
    assert slugify("hello") == "hello"


def test_accents_are_dropped():
    assert slugify("Café") == "cafe"


def test_custom_separator():
    assert slugify("a b", separator="_") == "a_b"


def test_slug_collapses_runs_of_punctuation():
    assert slugify("Release Notes: Spring 2025") == "release-notes-spring-2025"
    assert slugify("a -- b", separator="_") == "a_b"


def test_slug_has_no_leading_or_trailing_separator():
    assert slugify("  (Draft) Hello, World!  ") == "draft-hello-world"
    assert slugify("!!!") == ""
