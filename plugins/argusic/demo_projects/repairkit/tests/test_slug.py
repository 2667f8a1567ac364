from repairkit import slugify


def test_plain_word():
    assert slugify("hello") == "hello"


def test_accents_are_dropped():
    assert slugify("Café") == "cafe"


def test_custom_separator():
    assert slugify("a b", separator="_") == "a_b"
