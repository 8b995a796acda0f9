"""``blueprints.voice.signatures`` against digests computed by Twilio's own SDK (``twilio`` 9.x,
``RequestValidator.compute_signature``); the first is also the example of Twilio's security documentation.
The SDK is a test dependency only (it requires aiohttp, see the module)."""

from __future__ import annotations

from blueprints.voice.signatures import compute_signature, is_valid

TOKEN = "12345"
PARAMS = {
    "CallSid": "CA1234567890ABCDE",
    "Caller": "+14158675309",
    "Digits": "1234",
    "From": "+14158675309",
    "To": "+18005551212",
}
URL = "https://mycompany.com/myapp.php?foo=1&bar=2"


def test_the_digest_is_twilios() -> None:
    assert compute_signature(TOKEN, URL, PARAMS) == "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    assert (
        compute_signature(TOKEN, "https://mycompany.com:443/myapp.php?foo=1&bar=2", PARAMS)
        == "kvajT1Ptam85bY51eRf/AJRuM3w="
    )
    assert (
        compute_signature(TOKEN, "http://localhost:5000/webhooks/twilio/voice/status", PARAMS)
        == "b6SaliL3iOU+HM8637Snwjtjuak="
    )


def test_repeated_names_and_non_ascii_values_sign_as_twilio_does() -> None:
    params = {"a": ["2", "1", "2"], "b": "é ü"}
    assert compute_signature(TOKEN, "https://voice.example/x", params) == "X3SZZ6zTGLWr8qRDFLnjqMkJ1cM="


def test_the_default_port_may_be_written_or_not() -> None:
    assert is_valid(
        TOKEN, "https://mycompany.com:443/myapp.php?foo=1&bar=2", PARAMS, "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    )
    assert is_valid(TOKEN, URL, PARAMS, "kvajT1Ptam85bY51eRf/AJRuM3w=")
    assert not is_valid(
        TOKEN, "https://mycompany.com:8443/myapp.php?foo=1&bar=2", PARAMS, "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    )


def test_anything_changed_is_refused() -> None:
    good = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
    assert is_valid(TOKEN, URL, PARAMS, good)
    assert not is_valid("54321", URL, PARAMS, good)
    assert not is_valid(TOKEN, URL.replace("foo=1", "foo=2"), PARAMS, good)
    assert not is_valid(TOKEN, URL, {**PARAMS, "Digits": "1235"}, good)
    assert not is_valid(TOKEN, URL, PARAMS, "")
    assert not is_valid("", URL, PARAMS, good)


def test_the_sdk_agrees_on_varied_forms() -> None:
    """Twilio's SDK (a test dependency) and ours, over forms like Twilio's callbacks: repeated names,
    empty values, non-ASCII, query strings and both port spellings."""
    from twilio.request_validator import RequestValidator

    forms = [
        {},
        PARAMS,
        {"CallSid": "CA" + "0" * 32, "CallStatus": "in-progress", "SequenceNumber": "2", "Empty": ""},
        {"SpeechResult": "¿Cuánto cuesta el plan? ñandú", "Confidence": "0.93"},
    ]
    urls = [URL, "https://voice.example:443/webhooks/twilio/voice/status", "http://127.0.0.1:5000/x?a=1&a=2"]
    for token in (TOKEN, "f0e1d2c3b4a5968778695a4b3c2d1e0f"):
        sdk = RequestValidator(token)
        for url in urls:
            for form in forms:
                expected = sdk.compute_signature(url, form)
                assert compute_signature(token, url, form) == expected
                assert is_valid(token, url, form, expected) == sdk.validate(url, form, expected)
