"""Outbound webhooks: the one implementation of signing, URL checks (SSRF) and the pinned POST.

Every area that POSTs to a URL a customer typed (telecom's lifecycle webhooks, agent notifications) uses
this module, so the rules cannot drift apart:

- **Signature** (Stripe's scheme): ``t=<unix>,v1=<hex>[,v1=<hex>]`` where each ``v1`` is HMAC-SHA256 of
  ``"{t}.{body}"`` keyed with a whole ``whsec_…`` secret. Each area picks its own header name.
- **URL check at configuration time** (:func:`check_url`, no DNS): https, a host, no credentials, no
  fragment; the host read the way the resolver will read it (IDNA with NFKC, so full-width and circled
  digits are digits; a final dot dropped; ``127.1``, ``0x7f.0.0.1``, ``2130706433`` and ``0177.0.0.1``
  parsed as ``inet_aton`` parses them), and then a literal address must be public and ``localhost`` is
  refused. Each area calls it when a URL is saved, so a partner hears of a refused URL at once instead
  of after a day of failed deliveries.
- **Address check at every delivery** (:func:`pinned_target`): the host name is resolved, *every* address
  must be public, and the connection is made to the checked address with the original ``Host`` header
  and TLS server name. A DNS answer changed between the check and the connection (DNS rebinding) cannot
  aim a request at the internal network, because nothing resolves the name a second time.

"Public" means ``is_global`` and none of private, loopback, link-local, multicast, reserved, site-local;
an IPv6 address that embeds an IPv4 one (``::ffff:a.b.c.d``, 6to4 ``2002::/16``, NAT64 ``64:ff9b::/96``)
is judged by the IPv4 address it reaches.

``allow_loopback`` is passed by each area from its own test-only setting
(``TELECOM_WEBHOOKS_ALLOW_HTTP_LOOPBACK``, ``NOTIFICATIONS_ALLOW_HTTP_LOOPBACK``): it lets loopback
addresses through and plain http to the loopback host names, for receivers the tests run on 127.0.0.1.

No Flask here: callers read their settings and pass plain values.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# Names the resolver answers without DNS, from the hosts file of common systems (Debian's ip6-*, Red Hat's
# localhost6) or by rule (RFC 6761: every name under .localhost is loopback).
_LOCAL_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localhost6",
        "localhost6.localdomain6",
        "ip6-localhost",
        "ip6-loopback",
    }
)
# A host name in its ASCII form: labels of letters, digits, "-" and "_" (found in real DNS names). Anything
# else (spaces, "%", "*") is no name a delivery could resolve, and glibc's inet_aton would even read
# "127.0.0.1 x" as 127.0.0.1.
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
# A host written as an IPv4 number in inet_aton's grammar: dotted parts, each decimal, octal (leading 0)
# or hex (0x). Such a host is never looked up in DNS: it is a number or it is invalid.
_IPV4_NUMBER = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+))*")
DEFAULT_EXCERPT_BYTES = 1024
# NAT64's well-known prefix (RFC 6052): on an IPv6-only network DNS64 answers every IPv4-only name with
# one of these, so it is judged by the IPv4 address in its last 32 bits rather than refused outright.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class AddressRefused(Exception):
    """The request must not be made: a scheme other than https, an unresolvable host, or an address that is
    not public. The message names the reason (areas store it in their delivery log)."""


class UrlRefused(ValueError):
    """:func:`check_url` refused a URL; the message says why, worded for the person who typed it."""


# Signatures --------------------------------------------------------------------------------------------


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """HMAC-SHA256 of ``"{timestamp}.{body}"`` keyed with the whole ``whsec_…`` string, as hex."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(signing_secrets: list[str], timestamp: int, body: bytes) -> str:
    """``t=<unix>,v1=<hex>[,v1=<hex>]``: one ``v1`` per valid secret (two while a rolled one overlaps)."""
    return ",".join([f"t={timestamp}", *(f"v1={sign(s, timestamp, body)}" for s in signing_secrets)])


# Addresses ---------------------------------------------------------------------------------------------


def switch_on(setting: object) -> bool:
    """An area's loopback switch as its setting holds it: a bool (tests set one) or an environment string
    (``1``, ``true``, ``yes``, ``on``). Areas read their switch through this both when a URL is saved and
    when it is called, so the two moments agree."""
    return str(setting).strip().lower() in ("1", "true", "yes", "on")


def is_loopback_host(host: str) -> bool:
    """A host name the loopback switch may reach over plain http (judged on the name, before DNS)."""
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def ip(host: str) -> Address | None:
    """The host as an IP address (``None`` for a name); an IPv4-mapped IPv6 address is its IPv4 address,
    so ``::ffff:10.0.0.1`` is checked, and connected to, as ``10.0.0.1``. A zone (``fe80::1%eth0``) is
    dropped: the address alone decides."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _public(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return _public(embedded)
        if address.is_site_local:  # fec0::/10: deprecated, but still routed inside some networks
            return False
    return address.is_global and not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def _reaches_loopback(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return embedded.is_loopback
    return address.is_loopback


def check_address(address: Address, *, allow_loopback: bool) -> None:
    """Raise :class:`AddressRefused` unless the address is public (or loopback, when allowed)."""
    if allow_loopback and _reaches_loopback(address):
        return
    if not _public(address):
        raise AddressRefused(f"{address} is not a public address")


# URLs --------------------------------------------------------------------------------------------------


def resolver_name(host: str) -> str:
    """The host as the resolver is handed it, or :class:`UrlRefused`. ``socket.getaddrinfo`` (and so
    every delivery) encodes a name with Python's IDNA codec, whose nameprep applies NFKC and case folding:
    full-width letters and digits (U+FF10 on), circled digits (U+2460 on) and the like arrive as their
    ASCII letters and digits, and the ideographic and full-width full stops separate labels like ``.``.
    A final dot only marks the name as absolute (``localhost.`` is ``localhost``)."""
    try:
        name = host.encode("idna").decode("ascii").lower()
    except UnicodeError:  # an empty or overlong label, or a character nameprep forbids
        raise UrlRefused("has an invalid host name") from None
    if name.endswith("."):
        name = name[:-1]
    if not _HOST_NAME.fullmatch(name):
        raise UrlRefused("has an invalid host name")
    return name


def is_local_name(name: str) -> bool:
    """A name (as :func:`resolver_name` gives it) that reaches this machine without asking DNS."""
    return name in _LOCAL_NAMES or name.endswith(".localhost")


def ipv4_number(name: str) -> ipaddress.IPv4Address | None:
    """The address a host written as a number stands for, parsed by ``inet_aton`` as the resolver parses
    it (``127.1``, ``0x7f.0.0.1``, ``2130706433`` and ``0177.0.0.1`` are all 127.0.0.1); ``None`` for a
    name. A number ``inet_aton`` refuses (``1.2.3.4.5``, ``08.0.0.1``) is :class:`UrlRefused`: the resolver
    would send it to DNS as a name, and a name of numeric labels only is no public host's."""
    if not _IPV4_NUMBER.fullmatch(name):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(name))
    except OSError:
        raise UrlRefused("has an invalid IP address") from None


def check_url(url: str, *, allow_loopback: bool) -> str:
    """The URL as stored (path ``/`` when empty, no fragment), or :class:`UrlRefused`: https, a host, no
    credentials, no fragment, a valid port, the host read as the resolver reads it
    (:func:`resolver_name`, :func:`ipv4_number`), not ``localhost``, an address only if public. Names are
    not resolved here (that happens at every delivery, see :func:`pinned_target`): saving a URL makes no
    network call, and a name that resolves to a private address is refused at its first delivery."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise UrlRefused("not a valid URL") from None
    host = (parts.hostname or "").lower()
    if not host:
        raise UrlRefused("must be an absolute https URL")
    if parts.scheme != "https" and not (parts.scheme == "http" and allow_loopback and is_loopback_host(host)):
        raise UrlRefused("must use https")
    if parts.username is not None or parts.password is not None:
        raise UrlRefused("must not carry credentials; authenticate deliveries by their signature")
    if parts.fragment:
        raise UrlRefused("must not have a fragment")
    if port == 0:
        raise UrlRefused("has an invalid port")
    address: Address | None
    if ":" in host:  # an IPv6 literal (urlsplit has taken off its brackets)
        address = ip(host)
        if address is None:
            raise UrlRefused("has an invalid IP address")
    else:
        name = resolver_name(host)
        if is_local_name(name) and not allow_loopback:
            raise UrlRefused("must not point at this server or a private network")
        address = ipv4_number(name)
    if address is not None:
        try:
            check_address(address, allow_loopback=allow_loopback)
        except AddressRefused:
            raise UrlRefused("must not point at a private, loopback or link-local address") from None
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))


@dataclass(frozen=True)
class Target:
    """Where to connect: ``url`` has the checked address in place of the host name; ``headers`` and
    ``extensions`` (httpx) carry the original name as ``Host`` and as the TLS server name, so virtual
    hosting and certificate verification still see the name the customer configured."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, Any] = field(default_factory=dict)


def pinned_target(url: str, *, allow_loopback: bool) -> Target:
    """Resolve the URL's host once, check every address, and pin the request to the first of them.
    Raises :class:`AddressRefused`. Resolution goes through ``socket.getaddrinfo`` at call time (tests
    replace it to play a rebinding resolver)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise AddressRefused("not a valid URL") from None
    host = (parts.hostname or "").lower()
    if parts.scheme != "https" and not (parts.scheme == "http" and allow_loopback and is_loopback_host(host)):
        raise AddressRefused("only https webhooks are called")
    if not host:
        raise AddressRefused("the URL has no host")
    literal = ip(host)
    if literal is not None:
        check_address(literal, allow_loopback=allow_loopback)
        return Target(url)
    try:
        # The wire carries the ASCII form; an IDN that has none is not a host we can call.
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise AddressRefused(f"{host} is not a valid host name") from None
    try:
        infos = socket.getaddrinfo(
            ascii_host, port or (443 if parts.scheme == "https" else 80), type=socket.SOCK_STREAM
        )
    except OSError as exc:
        raise AddressRefused(f"{host} does not resolve ({exc.strerror or exc})") from None
    addresses = [a for a in (ip(str(info[4][0])) for info in infos) if a is not None]
    if not addresses:
        raise AddressRefused(f"{host} does not resolve")
    for address in addresses:  # every answer: a resolver may rotate them between two lookups
        check_address(address, allow_loopback=allow_loopback)
    pinned = addresses[0]
    netloc = f"[{pinned}]" if pinned.version == 6 else str(pinned)
    if port:
        netloc += f":{port}"
    host_header = ascii_host if not port else f"{ascii_host}:{port}"
    target = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return Target(target, {"Host": host_header}, {"sni_hostname": ascii_host})


# The POST ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """The receiver's answer: its status and the first bytes of its body (a log excerpt, not the body)."""

    status: int
    excerpt: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    allow_loopback: bool,
    timeout: float,
    excerpt_bytes: int = DEFAULT_EXCERPT_BYTES,
) -> Answer:
    """POST ``body`` to ``url`` over a connection pinned to the checked address (:func:`pinned_target`).
    No redirects (a 3xx is an answer like any other), no proxies from the environment, ``timeout`` for
    each phase (connect, write, read). Reads at most ``excerpt_bytes`` of the answer, so a huge or
    endless body cannot hold the worker.

    Raises :class:`AddressRefused` before any connection; ``httpx.TimeoutException`` and other
    ``httpx.HTTPError`` for the connection itself: each area words those for its own delivery log."""
    target = pinned_target(url, allow_loopback=allow_loopback)
    with (
        httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False, trust_env=False) as client,
        client.stream(
            "POST",
            target.url,
            content=body,
            headers={**headers, **target.headers},
            extensions=target.extensions,
        ) as response,
    ):
        excerpt = b""
        for chunk in response.iter_bytes():
            excerpt += chunk
            if len(excerpt) >= excerpt_bytes:
                break
        return Answer(response.status_code, excerpt[:excerpt_bytes])
