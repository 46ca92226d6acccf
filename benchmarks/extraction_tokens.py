"""What an extraction's generated tokens are spent on: the judge's tokenizer over scaffolds written as the extraction
schema has the judge write them (each view's JSON, its keys in the schema's order), split into the text of the items
(facts, questions, answers, names, attributes) and the structure around it (keys, punctuation, label words); then the
same outputs with every key renamed to the shortest single-token word, to see what shorter keys would save.

    .venv/bin/python benchmarks/extraction_tokens.py [--scaffolds examples/news.scaffolds.jsonl] [--model CONFIG]
        [--out benchmarks/results/extraction_tokens]

Seconds, no engine (the tokenizer alone): not in CI. Writes <out>.json and <out>.md.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: `benchmarks` importable

from scaffold_local.backends.embedded import locate_gguf  # noqa: E402
from scaffold_local.method import SchemaLimits, method_version, views_of  # noqa: E402
from scaffold_local.runs import ModelConfig  # noqa: E402

# The shortest word for each key the extraction schemas hold that is longer than one token in its JSON context.
SHORTER = {"expected_answer": "answer", "provenance": "from", "attributes": "has", "attribute": "text"}
# Where each scaffold item's fields come from (the scaffold file's names): what the judge wrote under each key.
WRITTEN_AS = {"fact": "text", "attribute": "text"}
TEXT_KEYS = {"fact", "question", "expected_answer", "provenance", "name", "attribute"}


@cache
def extraction_keys(view: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """A view's extraction output: its list key, the keys of one item, and the keys of nested item lists."""
    schema = views_of(method_version())[view].extraction_model(SchemaLimits(), method_version()).model_json_schema()
    (list_key, listed), = schema["properties"].items()
    definitions = schema.get("$defs", {})
    item = definitions[listed["items"]["$ref"].rsplit("/", 1)[-1]]
    nested = {key: list(definitions[p["items"]["$ref"].rsplit("/", 1)[-1]]["properties"])
              for key, p in item["properties"].items() if p.get("type") == "array"}
    return list_key, list(item["properties"]), nested


def written(view: str, items: list[dict[str, Any]], rename: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The output the judge wrote for a scaffold's view, keys renamed, and the item texts in it."""
    list_key, keys, nested = extraction_keys(view)
    texts: list[str] = []

    def one(item: dict[str, Any], item_keys: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in item_keys:
            if key in nested:
                out[rename.get(key, key)] = [one(sub, nested[key]) for sub in item[key]]
                continue
            value = item[WRITTEN_AS.get(key, key)]
            out[rename.get(key, key)] = value
            if key in TEXT_KEYS:
                texts.append(value)
        return out

    return {rename.get(list_key, list_key): [one(item, keys) for item in items]}, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scaffolds", type=Path, default=ROOT / "examples" / "news.scaffolds.jsonl")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-llama-cpp")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "extraction_tokens")
    args = parser.parse_args()
    import llama_cpp

    model = ModelConfig.load(args.model).model
    gguf = locate_gguf(model.removeprefix("embedded:"))
    vocabulary = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)

    def tokens(text: str) -> int:
        return len(vocabulary.tokenize(text.encode(), add_bos=False, special=False))

    rows = []
    for view in ("facts", "questions", "entities"):
        total = text = shorter = 0
        for line in args.scaffolds.read_text(encoding="utf-8").splitlines():
            scaffold = json.loads(line)
            output, texts = written(view, scaffold[view], {})
            total += tokens(json.dumps(output, ensure_ascii=False, separators=(", ", ": ")))
            text += sum(tokens(t) for t in texts)
            renamed, _ = written(view, scaffold[view], SHORTER)
            shorter += tokens(json.dumps(renamed, ensure_ascii=False, separators=(", ", ": ")))
        rows.append({"view": view, "tokens": total, "item_text": text, "structure": total - text,
                     "with_shorter_keys": shorter})
    all_tokens = sum(r["tokens"] for r in rows)
    saved = all_tokens - sum(r["with_shorter_keys"] for r in rows)
    result = {"command": shlex.join(["python", *sys.argv]), "model": model, "scaffolds": str(args.scaffolds.name),
              "shorter_keys": SHORTER, "rows": rows, "saved_by_shorter_keys": round(saved / all_tokens, 4)}
    lines = [f"`{result['command']}`", "",
             f"Generated tokens of the extraction outputs behind `{args.scaffolds.name}` (the judge's tokenizer, "
             f"{model}; each view's JSON as the schema orders it):", "",
             "| view | tokens | item text | structure (keys, punctuation, labels) | with shorter keys |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {r['view']} | {r['tokens']} | {r['item_text']} | {r['structure']} ({r['structure'] / r['tokens']:.0%}) "
              f"| {r['with_shorter_keys']} |" for r in rows]
    lines += ["", f"Shorter keys ({', '.join(f'{a} -> {b}' for a, b in SHORTER.items())}) save {saved} of "
              f"{all_tokens} tokens ({saved / all_tokens:.1%}); the facts' keys (`fact`, `label`) are one token each "
              "already, and item ids are numbered after extraction, never generated."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
