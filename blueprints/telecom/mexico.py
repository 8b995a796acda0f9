"""Mexican identifiers and places: CURP and RFC check digits, the 32 states, ICCIDs and their Luhn digit.

CURP: 18 characters (RENAPO); the 18th is a check digit over the first 17 with the alphabet
``0-9 A-N Ñ O-Z`` weighted 18..2, ``(10 - sum % 10) % 10``. RFC: 12 characters for a company (persona
moral), 13 for a person; the last is a check digit (SAT) over the others (a company's RFC is padded with a
leading space) with the alphabet ``0-9 A-N & O-Z space Ñ`` weighted 13..2, ``11 - sum % 11`` (11 -> 0,
10 -> A).
"""

from __future__ import annotations

import re
import unicodedata

_CURP = re.compile(r"^[A-Z][AEIOUX][A-Z]{2}\d{6}[HMX][A-Z]{2}[B-DF-HJ-NP-TV-Z]{3}[A-Z\d]\d$")
_CURP_ALPHABET = "0123456789ABCDEFGHIJKLMNÑOPQRSTUVWXYZ"
_RFC_COMPANY = re.compile(r"^[A-Z&Ñ]{3}\d{6}[A-Z\d]{2}[A\d]$")
_RFC_PERSON = re.compile(r"^[A-Z&Ñ]{4}\d{6}[A-Z\d]{2}[A\d]$")
_RFC_ALPHABET = "0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ Ñ"

# ISO 3166-2:MX code -> official name; the CURP's birth-state codes (RENAPO) differ and are not needed here.
STATES: dict[str, str] = {
    "AGU": "Aguascalientes",
    "BCN": "Baja California",
    "BCS": "Baja California Sur",
    "CAM": "Campeche",
    "CHP": "Chiapas",
    "CHH": "Chihuahua",
    "CMX": "Ciudad de México",
    "COA": "Coahuila",
    "COL": "Colima",
    "DUR": "Durango",
    "GUA": "Guanajuato",
    "GRO": "Guerrero",
    "HID": "Hidalgo",
    "JAL": "Jalisco",
    "MEX": "Estado de México",
    "MIC": "Michoacán",
    "MOR": "Morelos",
    "NAY": "Nayarit",
    "NLE": "Nuevo León",
    "OAX": "Oaxaca",
    "PUE": "Puebla",
    "QUE": "Querétaro",
    "ROO": "Quintana Roo",
    "SLP": "San Luis Potosí",
    "SIN": "Sinaloa",
    "SON": "Sonora",
    "TAB": "Tabasco",
    "TAM": "Tamaulipas",
    "TLA": "Tlaxcala",
    "VER": "Veracruz",
    "YUC": "Yucatán",
    "ZAC": "Zacatecas",
}

# Other ways the states are written: the abbreviations of the phone-number geocoder, common long forms.
_STATE_ALIASES: dict[str, str] = {
    "AGS": "AGU",
    "CAMP": "CAM",
    "CDMX": "CMX",
    "DF": "CMX",
    "FD": "CMX",
    "CHIS": "CHP",
    "CHIH": "CHH",
    "COAH": "COA",
    "DGO": "DUR",
    "GTO": "GUA",
    "HGO": "HID",
    "MICH": "MIC",
    "NL": "NLE",
    "QRO": "QUE",
    "QROO": "ROO",
    "TAMPS": "TAM",
    "TLAX": "TLA",
    "MEXICO": "MEX",
    "ESTADO DE MEXICO": "MEX",
    "DISTRITO FEDERAL": "CMX",
    "COAHUILA DE ZARAGOZA": "COA",
    "MICHOACAN DE OCAMPO": "MIC",
    "VERACRUZ DE IGNACIO DE LA LLAVE": "VER",
}


def _fold(text: str) -> str:
    """Upper case without accents, single spaces: how a state's name is compared."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(plain.upper().replace(".", " ").split())


_STATE_LOOKUP: dict[str, str] = {
    **{code: code for code in STATES},
    **{_fold(name): code for code, name in STATES.items()},
    **_STATE_ALIASES,
}


def state_code(text: str) -> str | None:
    """The ISO 3166-2:MX code of a state given by code, name or common abbreviation; None if unknown."""
    return _STATE_LOOKUP.get(_fold(text))


def _curp_check_digit(first17: str) -> str:
    total = sum(_CURP_ALPHABET.index(ch) * (18 - position) for position, ch in enumerate(first17))
    return str((10 - total % 10) % 10)


def curp_problem(curp: str) -> str | None:
    """Why ``curp`` is not a valid CURP, or None."""
    if not _CURP.fullmatch(curp):
        return "must be 18 characters in the CURP format (e.g. HEGG560427MVZRRL04)"
    if _curp_check_digit(curp[:17]) != curp[17]:
        return "check digit does not match"
    return None


def _rfc_check_digit(body: str) -> str:
    padded = body.rjust(12)
    total = sum(_RFC_ALPHABET.index(ch) * (13 - position) for position, ch in enumerate(padded))
    remainder = 11 - total % 11
    return "0" if remainder == 11 else "A" if remainder == 10 else str(remainder)


def rfc_problem(rfc: str, *, company: bool) -> str | None:
    """Why ``rfc`` is not a valid RFC of a company (12 characters) or a person (13), or None."""
    pattern = _RFC_COMPANY if company else _RFC_PERSON
    if not pattern.fullmatch(rfc):
        length = 12 if company else 13
        return f"must be {length} characters in the RFC format"
    if _rfc_check_digit(rfc[:-1]) != rfc[-1]:
        return "check digit does not match"
    return None


def with_curp_check_digit(first17: str) -> str:
    """A CURP completed with its check digit (test and demo data)."""
    return first17 + _curp_check_digit(first17)


def with_rfc_check_digit(body: str) -> str:
    """An RFC completed with its check digit (test and demo data)."""
    return body + _rfc_check_digit(body)


def luhn_digit(digits: str) -> str:
    """The Luhn check digit to append to ``digits`` (ISO/IEC 7812, used by ICCIDs)."""
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = int(ch)
        if position % 2 == 0:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return str((10 - total % 10) % 10)


def luhn_valid(number: str) -> bool:
    return number.isdigit() and len(number) > 1 and luhn_digit(number[:-1]) == number[-1]
