"""core.outbound, the one outbound-webhook module: signature vectors (computed with ``openssl dgst
-sha256 -hmac``, not with the code under test), URLs and addresses refused before any connection
(IPv4-mapped IPv6, 6to4 and NAT64 included; host names resolving to loopback or private addresses through a
patched resolver), and the POST pinned to the checked address, proven against a real receiver on 127.0.0.1
with a resolver that changes its answer after the check (DNS rebinding)."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask

from blueprints.notifications import senders
from core import outbound
from core.environments import environment_app, in_environment
from tests.core.refused_urls import ACCEPTED, REFUSED, circled, full_width, full_width_dots
from tests.support.webhook_receiver import WebhookReceiver, verify_signature, webhook_receiver

TIMEOUT = 1.0
BODY = b'{"id":"evt_1","object":"event"}'


@pytest.fixture(scope="module")
def receiver_server() -> Iterator[WebhookReceiver]:
    with webhook_receiver() as server:
        yield server


@pytest.fixture
def receiver(receiver_server: WebhookReceiver) -> WebhookReceiver:
    receiver_server.received.clear()
    receiver_server.answers.clear()
    receiver_server.secret = ""
    return receiver_server


Answers = dict[str, list[list[str]]]


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> Callable[[Answers], list[str]]:
    """``resolver({"name": [first answer, later answers]})`` replaces DNS for those names: each lookup
    takes the next answer (the last one repeats), other names resolve for real. Returns the list of names
    looked up, in order, so a test can count lookups."""
    real = socket.getaddrinfo
    looked_up: list[str] = []

    def install(answers: Answers) -> list[str]:
        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else str(host)
            if name not in answers:
                return real(host, port, *args, **kwargs)
            looked_up.append(name)
            seen = looked_up.count(name)
            addresses = answers[name][min(seen, len(answers[name])) - 1]
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (a, port, 0, 0) if ":" in a else (a, port),
                )
                for a in addresses
            ]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        return looked_up

    return install


# Signatures --------------------------------------------------------------------------------------------


def test_signature_vectors() -> None:
    assert (
        outbound.sign("whsec_test_secret", 1795428000, BODY)
        == "44d07c81d8e9727b270fe2aecca442bb89a727ee9ef471868bdbd2ee54fd68a0"
    )
    # non-ASCII secret and body: both are signed as their UTF-8 bytes
    assert (
        outbound.sign("whsec_ñ", 1700000000, '{"texto":"Sofía ✓"}'.encode())
        == "0af44bff1a771630ded10efc20668d26619f748982992cc17ceb16ed909e3723"
    )


def test_signature_header_carries_one_v1_per_secret() -> None:
    assert outbound.signature_header(["whsec_test_secret", "whsec_old_secret"], 1795428000, BODY) == (
        "t=1795428000,"
        "v1=44d07c81d8e9727b270fe2aecca442bb89a727ee9ef471868bdbd2ee54fd68a0,"
        "v1=3874f54ea84ef0966dca35f052f245532317c1f557875644a4c9b7149c03e261"
    )
    assert outbound.signature_header(["whsec_test_secret"], 1795428000, BODY) == (
        "t=1795428000,v1=44d07c81d8e9727b270fe2aecca442bb89a727ee9ef471868bdbd2ee54fd68a0"
    )


# URLs checked when configured (no DNS) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://hooks.example.com/x", "https"),
        ("ftp://hooks.example.com/x", "https"),
        ("hooks.example.com/x", "https"),
        ("https://user:pw@hooks.example.com/x", "credentials"),
        ("https://hooks.example.com/x#top", "fragment"),
        ("https://hooks.example.com:0/x", "port"),
        ("https://hooks.example.com:99999/x", "not a valid URL"),
        ("https://localhost/x", "this server"),
        ("https://api.localhost/x", "this server"),
        ("https://127.0.0.1/x", "private"),
        ("https://10.1.2.3/x", "private"),
        ("https://100.64.0.1/x", "private"),  # carrier-grade NAT
        ("https://169.254.169.254/latest/meta-data", "private"),  # cloud metadata
        ("https://0.0.0.0/x", "private"),  # reaches this machine on Linux
        ("https://224.0.0.1/x", "private"),  # multicast
        ("https://240.0.0.1/x", "private"),  # reserved
        ("https://[::1]/x", "private"),
        ("https://[fd00::1]/x", "private"),  # unique local
        ("https://[fe80::1%25eth0]/x", "private"),  # link-local with a zone
        ("https://[fec0::1]/x", "private"),  # site-local
        ("https://[ff02::1]/x", "private"),  # multicast
        ("https://[::ffff:10.0.0.1]/x", "private"),  # IPv4-mapped
        ("https://[::ffff:127.0.0.1]/x", "private"),
        ("https://[2002:a00:1::1]/x", "private"),  # 6to4 of 10.0.0.1
        ("https://[64:ff9b::a9fe:a9fe]/x", "private"),  # NAT64 of 169.254.169.254
        ("https://[::a00:1]/x", "private"),  # IPv4-compatible (reserved)
    ],
)
def test_check_url_refuses(url: str, words: str) -> None:
    with pytest.raises(outbound.UrlRefused, match=words):
        outbound.check_url(url, allow_loopback=False)


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("https://hooks.example.com", "https://hooks.example.com/"),
        (" https://Hooks.Example.com:8443/in?x=1 ", "https://Hooks.Example.com:8443/in?x=1"),
        ("https://8.8.8.8/x", "https://8.8.8.8/x"),
        ("https://[2606:4700::1111]/x", "https://[2606:4700::1111]/x"),
        ("https://[2002:808:808::1]/x", "https://[2002:808:808::1]/x"),  # 6to4 of a public address
        ("https://[64:ff9b::808:808]/x", "https://[64:ff9b::808:808]/x"),  # NAT64 of a public address
    ],
)
def test_check_url_accepts_public_https(url: str, stored: str) -> None:
    assert outbound.check_url(url, allow_loopback=False) == stored


def test_loopback_switch_opens_loopback_only() -> None:
    for url in ("http://127.0.0.1:5000/x", "http://localhost:5000/x", "https://[::1]/x", "http://[::1]/x"):
        assert outbound.check_url(url, allow_loopback=True) == url
        with pytest.raises(outbound.UrlRefused):
            outbound.check_url(url, allow_loopback=False)
    # the switch is about loopback: plain http elsewhere and private networks stay refused
    with pytest.raises(outbound.UrlRefused, match="https"):
        outbound.check_url("http://hooks.example.com/x", allow_loopback=True)
    with pytest.raises(outbound.UrlRefused, match="private"):
        outbound.check_url("https://10.0.0.1/x", allow_loopback=True)


@pytest.mark.parametrize(("url", "words"), REFUSED)
def test_check_url_reads_hosts_as_the_resolver_does(url: str, words: str) -> None:
    with pytest.raises(outbound.UrlRefused, match=words):
        outbound.check_url(url, allow_loopback=False)


@pytest.mark.parametrize(
    "host",
    [
        "127.1",
        "0x7f.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0xa9fea9fe",
        "10.1",
        "00000000000000000127.0.0.1",  # octal 0127 is 87
        full_width("127.0.0.1"),
        full_width_dots("169.254.169.254"),
        f"{circled('127')}.0.0.1",
    ],
)
def test_numeric_hosts_are_the_addresses_the_resolver_connects_to(host: str) -> None:
    # AI_NUMERICHOST: the system resolver parses the number and asks no DNS server
    [info, *_] = socket.getaddrinfo(host, 443, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    assert str(outbound.ipv4_number(outbound.resolver_name(host))) == info[4][0]


@pytest.mark.parametrize(
    "url",
    [
        ACCEPTED,
        "https://hooks.example.com./x",  # an absolute name is still a name
        f"https://{full_width('hooks')}.example.com/x",  # resolved (as hooks.example.com) at delivery
        "https://0x08080808/x",  # 8.8.8.8, public
        "https://1e100.net/x",  # labels of digits and letters are names, not numbers
    ],
)
def test_check_url_accepts_public_names_in_any_spelling(url: str) -> None:
    assert outbound.check_url(url, allow_loopback=False) == url


def test_loopback_switch_reads_bools_and_environment_strings() -> None:
    assert all(outbound.switch_on(v) for v in (True, 1, "1", "true", " Yes ", "on"))
    assert not any(outbound.switch_on(v) for v in (False, 0, None, "", "0", "false", "off"))


def test_loopback_switch_opens_every_spelling_of_loopback_only() -> None:
    for url in ("https://127.1/x", f"https://{full_width('localhost')}/x", "https://localhost./x"):
        assert outbound.check_url(url, allow_loopback=True) == url
    with pytest.raises(outbound.UrlRefused, match="private"):
        outbound.check_url("https://0xa.0.0.1/x", allow_loopback=True)


# Addresses checked at every delivery ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "refused"),
    [
        (["127.0.0.1"], "127.0.0.1"),
        (["10.0.0.7"], "10.0.0.7"),
        (["::ffff:10.0.0.7"], "10.0.0.7"),  # an AAAA answer that is an IPv4-mapped private address
        (["fd12::7"], "fd12::7"),
        (["93.184.216.34", "192.168.1.5"], "192.168.1.5"),  # every answer is checked, not the first
    ],
)
def test_host_resolving_to_a_private_address_is_refused(
    resolver: Callable[[Answers], list[str]], answer: list[str], refused: str
) -> None:
    resolver({"hooks.partner.example": [answer]})
    with pytest.raises(outbound.AddressRefused, match=f"{refused} is not a public address"):
        outbound.pinned_target("https://hooks.partner.example/x", allow_loopback=False)


def test_public_answer_is_pinned_with_host_and_server_name(resolver: Callable[[Answers], list[str]]) -> None:
    resolver({"hooks.partner.example": [["93.184.216.34", "2606:2800:220:1::1"]]})
    target = outbound.pinned_target("https://hooks.partner.example/in?x=1", allow_loopback=False)
    assert target.url == "https://93.184.216.34/in?x=1"
    assert target.headers == {"Host": "hooks.partner.example"}
    assert target.extensions == {"sni_hostname": "hooks.partner.example"}
    resolver({"v6.partner.example": [["2606:2800:220:1::1"]]})
    target = outbound.pinned_target("https://v6.partner.example:8443", allow_loopback=False)
    assert target.url == "https://[2606:2800:220:1::1]:8443/"
    assert target.headers == {"Host": "v6.partner.example:8443"}


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://hooks.partner.example/x", "only https webhooks are called"),
        ("ftp://hooks.partner.example/x", "only https webhooks are called"),
        ("https:///x", "no host"),
        ("https://nowhere.invalid/x", "does not resolve"),
        ("https://[::ffff:169.254.169.254]/x", "169.254.169.254 is not a public address"),
    ],
)
def test_delivery_refused_before_connecting(url: str, words: str) -> None:
    with pytest.raises(outbound.AddressRefused, match=words):
        outbound.pinned_target(url, allow_loopback=False)


# The pinned POST, against a real receiver ---------------------------------------------------------------


def test_post_reaches_the_checked_address_even_when_dns_changes(
    receiver: WebhookReceiver, resolver: Callable[[Answers], list[str]]
) -> None:
    """DNS rebinding: the name answers 127.0.0.1 (allowed by the switch) at the check, then an address
    where nothing listens. The request arrives at the checked address, with the name as Host, and the
    name is looked up once: the connection never asked DNS again."""
    receiver.secret = "whsec_test_secret"
    looked_up = resolver({"localhost": [["127.0.0.1"], ["10.255.255.1"]]})
    port = receiver.url("/").rsplit(":", 1)[1].split("/")[0]
    header = outbound.signature_header([receiver.secret], int(time.time()), BODY)
    answer = outbound.post(
        f"http://localhost:{port}/hook?x=1",
        BODY,
        {"Content-Type": "application/json", "AgentDesk-Signature": header},
        allow_loopback=True,
        timeout=TIMEOUT,
    )
    assert (answer.status, answer.ok, answer.excerpt) == (200, True, b"ok")
    [request] = receiver.at("/hook")
    assert request.headers["Host"] == f"localhost:{port}"
    assert request.body == BODY and request.verified
    assert verify_signature(request.body, request.headers["Agentdesk-Signature"], receiver.secret)
    assert looked_up == ["localhost"]


def test_post_refuses_loopback_without_the_switch(
    receiver: WebhookReceiver, resolver: Callable[[Answers], list[str]]
) -> None:
    resolver({"hooks.partner.example": [["127.0.0.1"]]})
    for url in (receiver.url("/hook"), "https://hooks.partner.example/hook"):
        with pytest.raises(outbound.AddressRefused):
            outbound.post(url, BODY, {}, allow_loopback=False, timeout=TIMEOUT)
    assert receiver.received == []


def test_post_reads_an_excerpt_and_follows_no_redirect(receiver: WebhookReceiver) -> None:
    receiver.answers["/moved"] = [302]
    receiver.answers["/broken"] = [500]
    moved = outbound.post(receiver.url("/moved"), BODY, {}, allow_loopback=True, timeout=TIMEOUT)
    broken = outbound.post(
        receiver.url("/broken"), BODY, {}, allow_loopback=True, timeout=TIMEOUT, excerpt_bytes=8
    )
    assert (moved.status, moved.ok) == (302, False)
    assert (broken.status, broken.excerpt) == (500, b"receiver")
    assert [r.path for r in receiver.received] == ["/moved", "/broken"]


# The notifications area now delivers through the pinned POST ------------------------------------------


def test_notification_webhook_is_pinned_to_the_checked_address(
    app: Flask, receiver: WebhookReceiver, resolver: Callable[[Answers], list[str]]
) -> None:
    environment_app(app, "live").config["NOTIFICATIONS_ALLOW_HTTP_LOOPBACK"] = True
    environment_app(app, "live").config["NOTIFICATIONS_WEBHOOK_TIMEOUT_SECONDS"] = TIMEOUT
    organization_id = uuid.uuid4()
    looked_up = resolver({"localhost": [["127.0.0.1"], ["10.255.255.1"]]})
    port = receiver.url("/").rsplit(":", 1)[1].split("/")[0]
    with in_environment(app, "live"):
        receiver.secret = senders.signing_secret(organization_id)
        sent = senders.post_webhook(
            organization_id, f"http://localhost:{port}/notify", {"id": "ntf_1"}, "ndl_1"
        )
        refused = senders.post_webhook(
            organization_id, "https://[::ffff:10.0.0.8]/notify", {"id": "ntf_2"}, "ndl_2"
        )
    assert (sent.ok, sent.code) == (True, 200)
    [request] = receiver.at("/notify")
    assert request.verified and request.headers["Host"] == f"localhost:{port}"
    assert request.headers["Agentdesk-Notification-Id"] == "ntf_1"
    assert looked_up == ["localhost"]
    assert (refused.ok, refused.retry, refused.error) == (
        False,
        False,
        "address refused: 10.0.0.8 is not a public address",
    )
