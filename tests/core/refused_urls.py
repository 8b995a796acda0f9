"""Webhook URLs every area refuses when they are saved (``core.outbound.check_url``), shared by the tests of
the check itself and of the areas that save URLs (agent notifications, telecom lifecycle webhooks).

Each names a loopback, link-local or private address in a spelling the resolver accepts, a local name, a
URL with credentials, or a host no resolver would take. The look-alike characters are built from their
ASCII forms, so the lists read plainly and the source holds no ambiguous characters."""

from __future__ import annotations


def full_width(text: str) -> str:
    """ASCII letters and digits as their full-width forms (U+FF10 on); other characters as they are."""
    return "".join(chr(ord(c) + 0xFEE0) if c.isascii() and c.isalnum() else c for c in text)


def full_width_dots(text: str) -> str:
    """Every printable ASCII character, the dots too, as its full-width form (``.`` is U+FF0E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def circled(digits: str) -> str:
    """Digits as the circled digits (U+2460 is 1, U+24EA is 0); other characters as they are."""
    return "".join(
        ("\u24ea" if c == "0" else chr(0x245F + int(c))) if c.isascii() and c.isdigit() else c for c in digits
    )


IDEOGRAPHIC_FULL_STOP = "\u3002"

# (URL, words of the refusal): the address forms are all 127.0.0.1, 169.254.169.254, 10.0.0.1 or 0.0.0.0.
REFUSED: list[tuple[str, str]] = [
    ("https://127.0.0.1/", "private"),
    ("https://169.254.169.254/latest/meta-data", "private"),
    ("https://user:pw@hooks.example.com/x", "credentials"),
    ("https://127.1/x", "private"),
    ("https://0x7f.0.0.1/x", "private"),
    ("https://2130706433/x", "private"),
    ("https://0177.0.0.1/x", "private"),
    ("https://0x7f000001/x", "private"),
    (f"https://{full_width('127.0.0.1')}/x", "private"),
    (f"https://{full_width_dots('127.0.0.1')}/x", "private"),
    (f"https://{'127.0.0.1'.replace('.', IDEOGRAPHIC_FULL_STOP)}/x", "private"),
    (f"https://{circled('127')}.0.0.1/x", "private"),
    (f"https://{circled('169')}.{circled('254')}.169.254/x", "private"),
    ("https://0xa9fea9fe/x", "private"),
    ("https://10.1/x", "private"),
    ("https://127.0.0.1./x", "private"),
    ("https://0/x", "private"),
    (f"https://{full_width('localhost')}/x", "this server"),
    (f"https://{full_width('LOCALHOST')}/x", "this server"),
    ("https://localhost./x", "this server"),
    ("https://api.localhost./x", "this server"),
    ("https://ip6-localhost/x", "this server"),
    ("https://localhost.localdomain/x", "this server"),
    ("https://1.2.3.4.5/x", "invalid IP address"),
    ("https://08.0.0.1/x", "invalid IP address"),
    ("https://hooks..example.com/x", "invalid host name"),
    ("https://hooks%2eexample.com/x", "invalid host name"),
]

ACCEPTED = "https://hooks.example.com/x"
