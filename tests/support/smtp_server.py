"""A real SMTP server on a free loopback port (aiosmtpd's threaded controller) that keeps every message
it accepts; ``refuse`` makes it answer the next RCPT TO for an address with a given reply."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from tests.support.servers import free_port


@dataclass
class Received:
    mail_from: str
    recipients: list[str]
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def text(self) -> str:
        body = self.message.get_body(preferencelist=("plain",))
        return body.get_content() if body is not None else ""


@dataclass
class SmtpServer:
    host: str = "127.0.0.1"
    port: int = 0
    received: list[Received] = field(default_factory=list)
    # address -> SMTP reply for RCPT TO (e.g. "550 5.1.1 no such user", "451 4.3.0 try later")
    refuse: dict[str, str] = field(default_factory=dict)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if address in self.refuse:
            return self.refuse[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content: Any = envelope.content
        raw = content if isinstance(content, bytes) else str(content).encode()
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.received.append(Received(str(envelope.mail_from), list(envelope.rcpt_tos), parsed))
        return "250 Message accepted"

    def to(self, address: str) -> list[Received]:
        return [r for r in self.received if address in r.recipients]


@contextmanager
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer(port=free_port())
    controller = Controller(server, hostname=server.host, port=server.port)
    controller.start()
    try:
        yield server
    finally:
        controller.stop()
