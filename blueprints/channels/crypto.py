"""Access tokens at rest: Fernet (AES-128-CBC + HMAC-SHA256) with a key from ``CHANNEL_TOKEN_KEY``.

Without ``CHANNEL_TOKEN_KEY`` the key is derived from ``SECRET_KEY`` with HKDF, so a laptop install
works with no extra setting. ``CHANNEL_TOKEN_KEY`` may list several comma-separated keys: the first
encrypts, all decrypt (rotation without re-connecting every channel).
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app


class TokenDecryptionError(RuntimeError):
    pass


def derive_key(secret_key: str) -> bytes:
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"agentdesk-channel-tokens", info=b"fernet")
    return base64.urlsafe_b64encode(hkdf.derive(secret_key.encode()))


def _cipher() -> MultiFernet:
    configured = current_app.config.get("CHANNEL_TOKEN_KEY")
    if configured:
        keys = [k.strip().encode() for k in str(configured).split(",") if k.strip()]
    else:
        keys = [derive_key(current_app.config["SECRET_KEY"])]
    return MultiFernet([Fernet(k) for k in keys])


def encrypt_token(token: str) -> str:
    return _cipher().encrypt(token.encode()).decode()


def decrypt_token(ciphertext: str) -> str:
    try:
        return _cipher().decrypt(ciphertext.encode()).decode()
    except InvalidToken as exc:  # the key changed without keeping the old one in CHANNEL_TOKEN_KEY
        raise TokenDecryptionError("the access token cannot be decrypted with CHANNEL_TOKEN_KEY") from exc
