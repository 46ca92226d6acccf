"""Documents in other languages: method version 6 writes each scaffold in its document's language
(detected offline, named in the extraction prompts, recorded in the scaffold) and splits summaries
with their own language's rules; earlier versions are unchanged and say what they do with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scaffold_local import runs
from scaffold_local.cli import app
from scaffold_local.data.inputs import Document
from scaffold_local.judging.config import ModelConfig
from scaffold_local.judging.judge import Judge
from scaffold_local.method.language import detect
from scaffold_local.method.metrics import rouge_l
from scaffold_local.method.text import sha256_text, split_sentences
from scaffold_local.method.versions import method_version

from .helpers import RESPONDER_CONFIG, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "multilingual.jsonl"
runner = CliRunner()

GERMAN = ("Der Rat hat am Montag die neue Brücke beschlossen. Sie kostet z. B. mehr als geplant. "
          "Der Bau beginnt am 3. Oktober 2026.")
JAPANESE = "市は新しい橋を建てると発表した。費用は十億円である。工事は来年始まる。"
ARABIC = "أعلن المجلس عن جسر جديد. هل سيكتمل في الموعد؟ يقول المهندسون إن العمل سيستغرق عامين."
RUSSIAN = "Совет одобрил новый мост. Строительство начнётся в октябре. Мост обойдётся дороже, чем планировали."


pytestmark = pytest.mark.usefixtures("wide_console")


@pytest.mark.parametrize("text, sentences", [
    # German rules keep an ordinal date and "z. B." inside the sentence; the English rules split at both.
    (GERMAN, ["Der Rat hat am Montag die neue Brücke beschlossen.", "Sie kostet z. B. mehr als geplant.",
              "Der Bau beginnt am 3. Oktober 2026."]),
    (JAPANESE, ["市は新しい橋を建てると発表した。", "費用は十億円である。", "工事は来年始まる。"]),
    # "؟" ends a sentence; the Arabic comma "،" does not (pysbd's Arabic rules would split there).
    (ARABIC, ["أعلن المجلس عن جسر جديد.", "هل سيكتمل في الموعد؟", "يقول المهندسون إن العمل سيستغرق عامين."]),
    ("قال الوزير، بعد الاجتماع، إن الخطة جاهزة. وبدأ العمل أمس.",
     ["قال الوزير، بعد الاجتماع، إن الخطة جاهزة.", "وبدأ العمل أمس."]),
    (RUSSIAN, ["Совет одобрил новый мост.", "Строительство начнётся в октябре.", "Мост обойдётся дороже, чем планировали."]),
])
def test_version_6_splits_each_language_by_its_own_rules(text, sentences):
    assert split_sentences(text, "pysbd-language") == sentences


def test_the_english_rules_split_german_dates_and_abbreviations_apart():
    """Why version 6 exists: versions 2-5 keep splitting as they always have."""
    assert len(split_sentences(GERMAN, "pysbd")) == 5


def test_english_and_doubtful_texts_split_as_before():
    """Short Latin-script texts are close calls between languages (py3langid gives this one to Afrikaans):
    below the trusted probability the English rules split them, exactly as version 5 does."""
    from .test_text import CASES

    doubtful = "Anna met Merkel in Berlin on Monday. Sales rose in 2019."
    assert detect(doubtful).code != "en"
    for text in [doubtful, *(text for text, _ in CASES)]:
        assert split_sentences(text, "pysbd-language") == split_sentences(text, "pysbd")


def test_detection_names_the_language_and_stays_out_of_earlier_versions():
    assert [detect(t).code for t in (GERMAN, JAPANESE, ARABIC, RUSSIAN)] == ["de", "ja", "ar", "ru"]
    assert detect("12 345 !").code == "und"
    config = ModelConfig.load(str(RESPONDER_CONFIG))
    german = Document(doc_id="de", text=GERMAN, sha256=sha256_text(GERMAN))
    v6 = Judge(config, method_version(6)).extraction.requests(german)
    assert all("in German, the language of the document" in p.request.messages[0].content for p in v6)
    v5 = Judge(config, method_version(5)).extraction.requests(german)
    assert not any("language" in p.request.context for p in v5)
    assert all("the language of the document" not in p.request.messages[0].content for p in v5)


def test_rouge_l_counts_words_in_every_script():
    """Identical text scores 1; one word of four changed scores 3/4 (LCS 3 of 4 tokens each way);
    Japanese counts each character, Arabic and Cyrillic their words."""
    assert rouge_l(ARABIC, [ARABIC]) == pytest.approx(1.0)
    assert rouge_l("Совет одобрил новый мост", ["Совет одобрил старый мост"]) == pytest.approx(0.75)
    assert rouge_l("費用は十億円", ["費用は九億円"]) == pytest.approx(5 / 6)
    assert rouge_l("المجلس أعلن جسر جديد", ["المجلس أعلن جسر قديم"]) == pytest.approx(0.75)


def _languages_input(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [
        {"doc_id": "de", "document": GERMAN, "system": "a", "summary": "Der Bau beginnt am 3. Oktober 2026."},
        {"doc_id": "ja", "document": JAPANESE, "system": "a", "summary": "市は新しい橋を建てる。費用は十億円である。"},
        {"doc_id": "ar", "document": ARABIC, "system": "a", "summary": "أعلن المجلس عن جسر جديد. هل سيكتمل؟"},
    ])


def test_version_6_records_each_documents_language_and_show_prints_it(tmp_path):
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(_languages_input(tmp_path)), "-m", str(RESPONDER_CONFIG),
                                 "--store", str(store), "--method-version", "6"])
    assert result.exit_code == 0, result.output
    assert "not in English" not in result.output
    run_dir = next((store / "runs").iterdir())
    run = runs.load(run_dir)
    languages = {doc_id: run.scaffold(key).language for doc_id, key in run.spec.scaffold_keys.items()}
    assert languages == {"de": "de", "ja": "ja", "ar": "ar"}
    sentences = {c["doc_id"]: c["sentences"] for c in map(json.loads, (run_dir / "candidates.jsonl").open())}
    assert sentences == {"de": ["Der Bau beginnt am 3. Oktober 2026."], "ja": ["市は新しい橋を建てる。", "費用は十億円である。"],
                         "ar": ["أعلن المجلس عن جسر جديد.", "هل سيكتمل؟"]}
    shown = runner.invoke(app, ["show", str(run_dir), "--summary", "ja/a"])
    assert shown.exit_code == 0, shown.output
    assert "[2] 費用は十億円である。" in shown.output and "document language: Japanese (detected: ja" in shown.output


def test_an_earlier_version_says_which_documents_are_not_in_english(tmp_path):
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(_languages_input(tmp_path)), "-m", str(RESPONDER_CONFIG),
                                 "--store", str(store), "--method-version", "5"])
    assert result.exit_code == 0, result.output
    assert "3 documents are not in English (1 German, 1 Japanese, 1 Arabic)" in result.output
    assert "--method-version 6" in result.output
    stored = next((store / "scaffolds").rglob("*.json")).read_text(encoding="utf-8")
    assert '"language"' not in stored  # earlier versions' scaffold files keep their shape


@pytest.mark.real_model
def test_german_japanese_and_arabic_end_to_end_on_the_embedded_model(tmp_path):
    """The example file through the embedded SmolLM2-135M under version 6: every output kept (parsed,
    or failed with its raw text), each scaffold's language recorded, sentences split as written."""
    store = tmp_path / "store"
    result = runner.invoke(app, ["score", str(EXAMPLE), "-m", "smollm2-135m-llama-cpp", "--store", str(store), "--allow-partial",
                                 "--method-version", "6"])
    assert result.exit_code == 0, result.output
    assert "llama_context" not in result.output  # the engine's notes stay out of the user's screen
    run_dir = next((store / "runs").iterdir())
    run = runs.load(run_dir)
    assert {d: run.scaffold(k).language for d, k in run.spec.scaffold_keys.items()} == {
        "de-tram": "de", "ja-library": "ja", "ar-vaccine": "ar"}
    counts = {(c["doc_id"], c["system"]): len(c["sentences"]) for c in map(json.loads, (run_dir / "candidates.jsonl").open())}
    assert counts == {("de-tram", "complete"): 3, ("de-tram", "wrong"): 2, ("ja-library", "complete"): 3,
                      ("ja-library", "wrong"): 2, ("ar-vaccine", "complete"): 2, ("ar-vaccine", "wrong"): 3}
    records = [json.loads(line) for line in (run_dir / "records.jsonl").open()]
    assert records and all(r["parsed"] is not None or (r["failure"] and r["text"] is not None) for r in records)
    assert len(run.summaries) == 6
