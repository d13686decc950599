#!/usr/bin/env python3
"""Writes tests/fuzz/corpus/fuzz_tokenizer_json/: first byte 0 + a tokenizer.json (valid small
ones of each supported layout, and the refusals), first byte 1 + a text to encode. Run from the
repository root after tests/tokenizer/make_tiny_tokenizer.py:
    python3 tests/fuzz/make_tokenizer_seeds.py
"""
import copy
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fuzz/corpus/fuzz_tokenizer_json"
TINY = ROOT / "tests/tokenizer/data/tiny-qwen2/tokenizer.json"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def write(name, first, data):
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_bytes(bytes([first]) + (data if isinstance(data, bytes) else data.encode()))


def small(doc):
    """The tiny tokenizer cut to its first 40 merges (and the tokens they make)."""
    d = copy.deepcopy(doc)
    merges = d["model"]["merges"][:40]
    keep = {t for t, i in d["model"]["vocab"].items() if i < 256} | {a + b for a, b in merges}
    d["model"]["vocab"] = {t: i for t, i in d["model"]["vocab"].items() if t in keep}
    d["model"]["merges"] = merges
    d["added_tokens"] = d["added_tokens"][:3]
    return d


def main():
    tiny = json.loads(TINY.read_text(encoding="utf-8"))
    base = small(tiny)
    write("qwen2-small.json", 0, json.dumps(base, ensure_ascii=False))
    write("qwen2-tiny-full.json", 0, TINY.read_bytes())
    llama = copy.deepcopy(base)
    llama["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = LLAMA3
    llama["model"]["ignore_merges"] = True
    llama["post_processor"] = {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "special_tokens": {"<|endoftext|>": {"ids": [base["added_tokens"][0]["id"]]}}}
    write("llama3-template.json", 0, json.dumps(llama, ensure_ascii=False))
    gpt2 = copy.deepcopy(base)
    gpt2["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}
    gpt2["normalizer"] = None
    gpt2["model"]["merges"] = [" ".join(m) for m in gpt2["model"]["merges"]]
    write("gpt2-string-merges.json", 0, json.dumps(gpt2, ensure_ascii=False))
    bad = {
        "not-json.json": "{\"model\": {\"type\": \"BPE\", ",
        "wordpiece.json": dict(base, model=dict(base["model"], type="WordPiece")),
        "missing-merge-token.json": dict(base, model=dict(base["model"], merges=base["model"]["merges"] + [["zz", "q"]])),
        "bad-regex.json": None,
        "huge-id.json": dict(base, model=dict(base["model"], vocab=dict(base["model"]["vocab"], zzz=2 ** 40))),
    }
    regex = copy.deepcopy(base)
    regex["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\w+"
    bad["bad-regex.json"] = regex
    for name, doc in bad.items():
        write(name, 0, doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False))
    texts = json.loads((ROOT / "tests/tokenizer/data/corpus.json").read_text(encoding="utf-8"))
    for i, t in enumerate(texts[:: max(1, len(texts) // 12)]):
        write(f"text-{i:02d}.txt", 1, t)
    write("text-invalid-utf8.txt", 1, b"ab\xe2\x82 \xff\xc3\xa9e\xcc\x81<|im_end|>x")


if __name__ == "__main__":
    main()
