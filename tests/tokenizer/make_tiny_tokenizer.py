#!/usr/bin/env python3
"""Builds tests/tokenizer/data/tiny-qwen2/tokenizer.json: a small byte-level BPE tokenizer laid out
exactly as Qwen2/Qwen3 ship theirs (NFC normalizer, Split with Qwen2's regex + ByteLevel, ByteLevel
decoder, Qwen's added tokens), with its merges learned here from the repository's own docs/*.md
plus a few lines of other scripts, so it carries the project's licence and nothing of Qwen's.
    python3 tests/tokenizer/make_tiny_tokenizer.py [NUM_MERGES]   (default 1500)
The training split is a rough approximation of the regex (any merge list is a valid tokenizer;
only the encoder under test must follow the regex exactly).
"""
import collections
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/tokenizer/data/tiny-qwen2/tokenizer.json"
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
EXTRA = """Le benchmark mesure le coût de l'encodage d'images: déjà vu, naïve façade, été.
Die Übersetzung größerer Bildmengen dauert länger; Straße, Äpfel, Öl.
视觉编码器的吞吐量决定了首个词元的延迟。图像越大，视觉词元越多。
画像エンコーダの処理時間を測定します。トークン数は画像の大きさで決まる。
Обработка изображений занимает время; задержка первого токена растёт.
이미지 인코딩 비용을 측정합니다. 토큰 수는 이미지 크기에 따라 달라집니다.
emoji 🙂🚀 and math ∑ x² ≤ 10⁶, prices €12.50 £7 ¥300.
"""
ADDED = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
         "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
         "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]


def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def rough_words(text):
    """Letters with one leading non-letter, digits alone, punctuation runs, whitespace."""
    words, i = [], 0
    while i < len(text):
        j = i + 1
        if text[i].isalpha() or (i + 1 < len(text) and text[i + 1].isalpha() and not text[i].isdigit()):
            while j < len(text) and text[j].isalpha():
                j += 1
        elif not text[i].isdigit():
            while j < len(text) and not text[j].isalnum() and text[j].isspace() == text[i].isspace():
                j += 1
        words.append(text[i:j])
        i = j
    return words


def train(text, num_merges):
    b2u = bytes_to_unicode()
    counts = collections.Counter(rough_words(text))
    words = {tuple(b2u[b] for b in w.encode("utf-8")): c for w, c in counts.items()}
    vocab = {b2u[b]: i for i, b in enumerate(range(256))}
    merges = []
    for _ in range(num_merges):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append([a, b])
        vocab.setdefault(a + b, len(vocab))
        merged = {}
        for w, c in words.items():
            out, k = [], 0
            while k < len(w):
                if k + 1 < len(w) and w[k] == a and w[k + 1] == b:
                    out.append(a + b)
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        words = merged
    return vocab, merges


def main():
    num_merges = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    text = "".join(p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))) + EXTRA * 20
    vocab, merges = train(text, num_merges)
    added = [{"id": len(vocab) + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, c in enumerate(ADDED)]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {len(vocab)} tokens, {len(merges)} merges, {len(added)} added")


if __name__ == "__main__":
    main()
