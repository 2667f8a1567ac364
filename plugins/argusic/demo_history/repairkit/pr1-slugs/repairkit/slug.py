"""URL slugs from titles."""

import unicodedata


def slugify(text: str, separator: str = "-") -> str:
    """Lower-case ASCII words joined by one `separator`; nothing leading or trailing."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words, word = [], []
    for char in ascii_text.lower():
        if char.isalnum():
            word.append(char)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return separator.join(words)
