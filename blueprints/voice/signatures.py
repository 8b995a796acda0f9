"""Twilio's request signature (``X-Twilio-Signature``) for form-encoded webhooks.

Twilio signs each webhook with HMAC-SHA1, keyed with the account's auth token, over the full URL it
called followed by every POST parameter as name then value, names in sorted order (a repeated name's
values sorted too), and sends the digest in base64. Behind a proxy on the default port it may have signed
the URL with or without ``:443``/``:80``, so both spellings are accepted, as Twilio's own SDKs do.

Written here rather than taken from the ``twilio`` package: that package requires aiohttp, and an
installed aiohttp is imported by Engine.IO at every start of every process (about 0.3 s of each CLI
command). The tests check this module against digests computed by the ``twilio`` SDK (test_signatures).
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Iterable, Mapping
from hashlib import sha1
from urllib.parse import SplitResult, urlsplit

DEFAULT_PORTS = {"https": 443, "http": 80}


def _signed_text(url: str, params: Mapping[str, str | Iterable[str]]) -> str:
    parts = [url]
    for name in sorted(params):
        value = params[name]
        values = [value] if isinstance(value, str) else sorted(set(value))
        parts.extend(name + v for v in values)
    return "".join(parts)


def compute_signature(token: str, url: str, params: Mapping[str, str | Iterable[str]]) -> str:
    """The value of ``X-Twilio-Signature`` that Twilio sends for this URL and these form parameters."""
    digest = hmac.new(token.encode(), _signed_text(url, params).encode(), sha1).digest()
    return base64.b64encode(digest).decode()


def _port_spellings(url: str) -> list[str]:
    """The URL as given, and with the scheme's default port added or removed."""
    parts: SplitResult = urlsplit(url)
    default = DEFAULT_PORTS.get(parts.scheme)
    if default is None or parts.hostname is None:
        return [url]
    host = parts.netloc.rsplit("@", 1)[-1]
    userinfo = parts.netloc[: len(parts.netloc) - len(host)]
    if parts.port is None:
        other = parts._replace(netloc=f"{userinfo}{host}:{default}")
    elif parts.port == default:
        other = parts._replace(netloc=f"{userinfo}{host.rsplit(':', 1)[0]}")
    else:
        return [url]
    return [url, other.geturl()]


def is_valid(token: str, url: str, params: Mapping[str, str | Iterable[str]], signature: str) -> bool:
    """Whether ``signature`` is Twilio's for this request (compared in constant time)."""
    if not token or not signature:
        return False
    return any(
        hmac.compare_digest(compute_signature(token, spelling, params), signature)
        for spelling in _port_spellings(url)
    )
