"""URL slugs from titles."""

import unicodedata


def slugify(text: str, separator: str = "-") -> str:
    """Lower-case ASCII letters and digits, every other character replaced by `separator`."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    out = []
    for char in ascii_text.lower():
        out.append(char if char.isalnum() else separator)
    return "".join(out)
