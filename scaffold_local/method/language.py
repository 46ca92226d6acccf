"""The language of a text, detected offline with py3langid (a fork of langid.py: its model ships in
the package, classification is deterministic and takes about a millisecond after a one-second load).

Method version 6 asks the judge to write each scaffold in its document's language and splits
summaries with the rules of their document's language; earlier versions do neither (versions.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

UNDETERMINED = "und"  # ISO 639's code for a language that could not be determined
# Below this probability a detection is not trusted: short Latin-script texts are often close calls
# (py3langid gives "Anna met Merkel in Berlin on Monday. Sales rose in 2019." to Afrikaans at 0.14).
TRUSTED = 0.9

# English names for the prompts (the judge reads "German", not "de"); other codes are named by code.
NAMES = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan",
    "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek", "en": "English", "es": "Spanish",
    "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French", "he": "Hebrew", "hi": "Hindi",
    "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian", "it": "Italian", "ja": "Japanese",
    "kk": "Kazakh", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "mr": "Marathi", "ms": "Malay",
    "my": "Burmese", "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian",
    "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili",
    "ta": "Tamil", "th": "Thai", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese",
    "zh": "Chinese",
}


def name(code: str) -> str:
    """A language's English name, or its code where the table has none."""
    return NAMES.get(code, code)


@dataclass(frozen=True)
class Detected:
    code: str  # ISO 639-1, or "und"
    probability: float


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@lru_cache(maxsize=8192)
def detect(text: str) -> Detected:
    """The most likely language of `text` and its probability; "und" for a text without letters."""
    if not any(ch.isalpha() for ch in text):
        return Detected(UNDETERMINED, 0.0)
    code, probability = _identifier().classify(text)
    return Detected(code, round(float(probability), 4))


def trusted(text: str) -> str | None:
    """The language of `text` where its detection can be trusted: a probability of at least TRUSTED,
    or a text mostly in non-Latin letters (short Arabic or Japanese texts score lower, yet their
    script leaves little doubt); else None."""
    detected = detect(text)
    letters = [ch for ch in text if ch.isalpha()]
    own_script = sum(not ch.isascii() for ch in letters) > len(letters) / 2
    return detected.code if detected.probability >= TRUSTED or (own_script and detected.code != UNDETERMINED) else None


def detector_version() -> str:
    from importlib.metadata import version

    return f"py3langid-{version('py3langid')}"
