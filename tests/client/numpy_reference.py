#!/usr/bin/env python3
"""numpy's own draws, the reference for tests/client/numpy_random_test.cpp (one number a line).

  generator SEED                  np.random.default_rng(SEED): a fixed mix of integers() and random()
  gamma SEED SHAPE SCALE N        np.random.seed(SEED), then N scalar np.random.gamma(SHAPE, SCALE)
  schedule SEED N RATE BURST      vLLM's get_request delays (serve.py): gamma gaps, cumulative, rescaled
  random SEED N LO HI OLO OHI VOCAB ALLOWED PREFIX
                                  vLLM's RandomDataset draws: input lens, output lens, offsets, prefix indices
  permutation SEED N              np.random.default_rng(SEED).permutation(N) (a loaded HF Dataset's shuffle)
  hf_stream SEED N BUFFER         the row order of a streamed one-shard HF dataset after shuffle(SEED,
                                  BUFFER): datasets' BufferShuffledExamplesIterable, transcribed
  legacy_pick SEED ROWS N         pandas' DataFrame.sample(N, random_state=SEED) of ROWS rows, as pandas
                                  draws it: RandomState(SEED).permutation(ROWS)[:N], or randint(0, ROWS, N)
                                  when N > ROWS (replace=True; pandas itself is not installed here)
  py_choices SEED N K             random.seed(SEED); random.choices(range(N), k=K) (sonnet's line draws)
  py_rows SEED N WANT             vLLM's custom/ShareGPT rows: random.seed; random.shuffle(range(N)); the
                                  first WANT; then random.seed; random.choices for the missing ones
  mm_draws SEED                   default_rng(SEED): integers, uint8 arrays and choice(p=...) interleaved
  pyhash HASHSEED KEY...          hash(KEY) & 0xFFFFFFFF in a python3 run with PYTHONHASHSEED=HASHSEED
  random_mm TOK SEED N IN OUT R PREFIX BASE ITEMS_R LIMIT BUCKETS
                                  vLLM's RandomMultiModalDataset.sample with the toy tokenizer TOK (below):
                                  per request prompt_len, output_len, ids, item count, each item's h, w, pixels
  prefix_rep TOK SEED N PREFIX SUFFIX NUM_PREFIXES
                                  vLLM's PrefixRepetitionRandomDataset.sample with TOK: per request
                                  prompt_len, the prompt's characters; then 3 np.random.gamma(1, 1) after it
  timed_trace TOKENIZER_JSON TRACE CHUNK HASHSEED
                                  vLLM's TimedTrace._expand_prompt for each row: its length, its ids
The toy tokenizer TOK is a byte-level tokenizer.json of the 256 byte tokens plus merges of two
distinct letters, so decode and encode are a few lines here (no `tokenizers` needed).
"""
import json
import math
import os
import random
import subprocess
import sys
import unicodedata

import numpy as np


def out(values):
    for v in values:
        print(repr(float(v)) if isinstance(v, (float, np.floating)) else int(v))


def main(argv):
    mode = argv[1]
    if mode == "generator":
        g = np.random.default_rng(int(argv[2]))
        out(g.integers(0, 100, size=50))
        out(g.integers(5, 1000000, size=20))
        out(g.integers(0, 2**40, size=10))
        out(g.integers(0, 2**32, size=5))
        out(g.random(size=7))
        out(g.integers(-3, 4, size=9))
        out(g.integers(0, 2**62, size=3))
        out([g.integers(0, 151643)])
    elif mode == "gamma":
        np.random.seed(int(argv[2]))
        shape, scale, n = float(argv[3]), float(argv[4]), int(argv[5])
        out([np.random.gamma(shape=shape, scale=scale) for _ in range(n)])
    elif mode == "schedule":
        np.random.seed(int(argv[2]))
        n, rate, burstiness = int(argv[3]), float(argv[4]), float(argv[5])
        theta = 1.0 / (rate * burstiness)
        delay_ts = [float(np.random.gamma(shape=burstiness, scale=theta)) for _ in range(n)]
        for i in range(1, n):
            delay_ts[i] += delay_ts[i - 1]
        factor = (n / rate) / delay_ts[-1]
        out([d * factor for d in delay_ts])
    elif mode == "random":
        seed, n, lo, hi, olo, ohi, vocab, allowed, prefix = (int(a) for a in argv[2:11])
        g = np.random.default_rng(seed)
        out(g.integers(lo, hi + 1, size=n))
        out(g.integers(olo, ohi + 1, size=n))
        out(g.integers(0, vocab, size=n))
        out(g.integers(0, allowed, size=prefix) if prefix > 0 else [])
    elif mode == "permutation":
        out(np.random.default_rng(int(argv[2])).permutation(int(argv[3])))
    elif mode == "hf_stream":
        rng = np.random.default_rng(int(argv[2]))
        n, buffer_size = int(argv[3]), int(argv[4])

        def indices():
            while True:
                yield from (int(i) for i in rng.integers(0, buffer_size, size=1000))

        it = indices()
        buffer, order = [], []
        for x in range(n):
            if len(buffer) == buffer_size:
                i = next(it)
                order.append(buffer[i])
                buffer[i] = x
            else:
                buffer.append(x)
        rng.shuffle(buffer)
        out(order + buffer)
    elif mode == "legacy_pick":
        rs = np.random.RandomState(int(argv[2]))
        rows, n = int(argv[3]), int(argv[4])
        out(rs.permutation(rows)[:n] if n <= rows else rs.randint(0, rows, size=n))
    elif mode == "py_choices":
        random.seed(int(argv[2]))
        out(random.choices(range(int(argv[3])), k=int(argv[4])))
    elif mode == "py_rows":
        seed, n, want = int(argv[2]), int(argv[3]), int(argv[4])
        rows = list(range(n))
        random.seed(seed)
        random.shuffle(rows)
        rows = rows[:want]
        if len(rows) < want:
            random.seed(seed)
            rows += random.choices(rows, k=want - len(rows))
        out(rows)
    elif mode in EXTRA_MODES:
        EXTRA_MODES[mode](argv[2:])
    else:
        raise SystemExit("unknown mode " + mode)


def mm_draws(args):
    g = np.random.default_rng(int(args[0]))
    out([g.integers(0, 151643)])
    out(g.integers(0, 256, (5, 7, 3), dtype=np.uint8).ravel())
    buckets = [[4, 6, 1], [8, 5, 1], [2, 2, 1]]
    for _ in range(20):
        row = g.choice(buckets, p=[0.2, 0.5, 0.3])
        out([buckets.index(list(row))])
    out(g.integers(0, 256, (2, 3, 3), dtype=np.uint8).ravel())
    out([buckets.index(list(g.choice(buckets[:1], p=[1.0])))])
    out([g.integers(1, 4)])
    out([g.integers(1, 2)])  # one value: numpy draws nothing (vLLM's item count at range ratio 0)
    out(g.integers(0, 256, (1, 1, 3), dtype=np.uint8).ravel())


def pyhash(args):
    code = "import sys\nfor k in sys.argv[1:]: print(hash(k) & 0xFFFFFFFF)"
    env = dict(os.environ, PYTHONHASHSEED=args[0])
    sys.stdout.write(subprocess.run([sys.executable, "-c", code] + args[1:], env=env, check=True,
                                    capture_output=True, text=True).stdout)


def bytes_to_unicode():
    """GPT-2's byte -> character map (the published algorithm)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


class ToyTokenizer:
    """A byte-level BPE tokenizer.json of the 256 byte tokens plus merges of two distinct letters:
    letters are never split by the pre-tokenizer, so BPE is the merges applied in rank order."""

    def __init__(self, path):
        with open(path) as f:
            doc = json.load(f)
        self.vocab = doc["model"]["vocab"]
        self.id_to_token = {v: k for k, v in self.vocab.items()}
        self.merges = [tuple(m) for m in doc["model"]["merges"]]
        self.vocab_size = len(self.vocab)
        self.added_tokens_decoder = {}
        self.all_special_ids = []
        self.byte_char = bytes_to_unicode()
        self.char_byte = {c: b for b, c in self.byte_char.items()}

    def num_special_tokens_to_add(self):
        return 0

    def decode(self, ids):
        raw = bytes(self.char_byte[c] for i in ids for c in self.id_to_token[int(i)])
        return raw.decode("utf-8", "replace")  # the ByteLevel decoder's lossy UTF-8

    def encode(self, text, add_special_tokens=False):
        parts = [self.byte_char[b] for b in unicodedata.normalize("NFC", text).encode("utf-8")]
        for left, right in self.merges:
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and parts[i] == left and parts[i + 1] == right:
                    merged.append(left + right)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        return [self.vocab[p] for p in parts]


# vllm/benchmarks/datasets/datasets.py @ 003cf0297cf60998854c652a0ca2b310dd3375af, copied in
# structure (gen_prompt_decode_to_target_len, RandomDataset.get_prefix / generate_token_sequence,
# RandomMultiModalDataset, PrefixRepetitionRandomDataset); get_sampling_params as in
# vllm/benchmarks/datasets/random.py @ 237145ea190a901f93c570f157091fe43835bc63.
def gen_prompt_decode_to_target_len(tokenizer, token_sequence, target_token_len, max_retry=10,
                                    add_special_tokens=False, rng=None):
    remain_num_try = max_retry
    token_mismatch = 0
    while True:
        prompt = tokenizer.decode(token_sequence)
        token_sequence = tokenizer.encode(prompt, add_special_tokens=add_special_tokens)
        if remain_num_try <= 0:
            if len(token_sequence) != target_token_len:
                token_mismatch = len(token_sequence) - target_token_len
            break
        if len(token_sequence) == target_token_len:
            break
        elif len(token_sequence) < target_token_len:
            if rng is not None:
                extra_tokens = rng.integers(0, tokenizer.vocab_size,
                                            size=target_token_len - len(token_sequence)).tolist()
            else:
                extra_tokens = np.random.randint(0, tokenizer.vocab_size,
                                                 size=target_token_len - len(token_sequence)).tolist()
            token_sequence.extend(extra_tokens)
        elif len(token_sequence) > target_token_len:
            token_sequence = token_sequence[:target_token_len]
        remain_num_try -= 1
    return prompt, token_sequence, token_mismatch


class RandomMultiModal:
    def __init__(self, seed):
        self._rng = np.random.default_rng(seed)

    def get_sampling_params(self, num_requests, range_ratio, input_len, output_len, tokenizer):
        real_input_len = max(0, int(input_len) - int(tokenizer.num_special_tokens_to_add()))
        input_low = math.floor(real_input_len * (1 - range_ratio))
        input_high = math.ceil(real_input_len * (1 + range_ratio))
        output_low = max(math.floor(output_len * (1 - range_ratio)), 1)
        output_high = max(math.ceil(output_len * (1 + range_ratio)), 1)
        input_lens = self._rng.integers(input_low, input_high + 1, size=num_requests)
        output_lens = self._rng.integers(output_low, output_high + 1, size=num_requests)
        offsets = self._rng.integers(0, tokenizer.vocab_size, size=num_requests)
        return input_lens, output_lens, offsets

    def get_prefix(self, tokenizer, allowed_tokens, prefix_len):
        if prefix_len <= 0:
            return []
        prefix_tokens = allowed_tokens[self._rng.integers(0, len(allowed_tokens), size=prefix_len)].tolist()
        _, adjusted_tokens, _ = gen_prompt_decode_to_target_len(tokenizer, prefix_tokens, prefix_len, rng=self._rng)
        return adjusted_tokens

    def generate_token_sequence(self, tokenizer, prefix_token_ids, prefix_len, input_len, offset, index,
                                allowed_tokens):
        inner_seq = allowed_tokens[(offset + index + np.arange(input_len)) % len(allowed_tokens)].tolist()
        token_sequence = prefix_token_ids + inner_seq
        total_input_len = prefix_len + int(input_len)
        prompt, adjusted, mismatch = gen_prompt_decode_to_target_len(tokenizer, token_sequence, total_input_len,
                                                                     rng=self._rng)
        return prompt, adjusted, mismatch

    def normalize_bucket_config(self, bucket_config):
        bucket_config = {k: v for k, v in bucket_config.items() if v > 0}
        total = sum(bucket_config.values())
        return {k: v / total for k, v in bucket_config.items()}

    def get_mm_item_iterator(self, min_num, max_num, bucket_config, limit):
        request_num_mm_items = int(self._rng.integers(min_num, max_num + 1))
        if request_num_mm_items == 0:
            return
        counter = 0
        bucket_config_copy = bucket_config.copy()
        while counter < request_num_mm_items:
            mm_item_config = self._rng.choice(list(bucket_config_copy.keys()), p=list(bucket_config_copy.values()))
            if counter < limit:
                counter += 1
                yield mm_item_config
            else:
                break

    def sample(self, tokenizer, num_requests, prefix_len, range_ratio, input_len, output_len, limit, base_items,
               items_ratio, bucket_config, emit):
        input_lens, output_lens, offsets = self.get_sampling_params(num_requests, range_ratio, input_len,
                                                                    output_len, tokenizer)
        bucket_config = self.normalize_bucket_config(bucket_config)
        max_num = min(limit, math.ceil(base_items * (1 + items_ratio)))
        min_num = max(0, math.floor(base_items * (1 - items_ratio)))
        prohibited_tokens = [t for t, tok in tokenizer.added_tokens_decoder.items() if tok.special]
        allowed_tokens = np.array(list(set(np.arange(tokenizer.vocab_size)) - set(prohibited_tokens)))
        prefix_token_ids = self.get_prefix(tokenizer, allowed_tokens, prefix_len)
        for i in range(num_requests):
            _, adjusted, _ = self.generate_token_sequence(tokenizer, prefix_token_ids, prefix_len,
                                                          int(input_lens[i]), int(offsets[i]), i, allowed_tokens)
            items = []
            for config in self.get_mm_item_iterator(min_num, max_num, bucket_config, limit):
                height, width = int(config[0]), int(config[1])
                pixels = self._rng.integers(0, 256, (height, width, 3), dtype=np.uint8)  # generate_synthetic_image
                items.append((height, width, pixels.ravel()))
            emit(len(adjusted), int(output_lens[i]), adjusted, items)


def random_mm(args):
    tok = ToyTokenizer(args[0])
    seed, n, input_len, output_len = (int(a) for a in args[1:5])
    range_ratio = float(args[5])
    prefix_len, base_items = int(args[6]), int(args[7])
    items_ratio, limit = float(args[8]), int(args[9])
    buckets = eval(args[10])  # vLLM parses it with ast.literal_eval

    def emit(prompt_len, out_len, ids, items):
        out([prompt_len, out_len, len(ids)] + list(ids) + [len(items)])
        for h, w, pixels in items:
            out([h, w])
            out(pixels)

    RandomMultiModal(seed).sample(tok, n, prefix_len, range_ratio, input_len, output_len, limit, base_items,
                                  items_ratio, buckets, emit)


def prefix_rep(args):
    tokenizer = ToyTokenizer(args[0])
    seed, num_requests, prefix_len, suffix_len, num_prefixes = (int(a) for a in args[1:6])
    random.seed(seed)  # PrefixRepetitionRandomDataset.__init__
    np.random.seed(seed)
    vocab_size = tokenizer.vocab_size
    prompts_per_prefix, remainder = divmod(num_requests, num_prefixes)

    def _generate_exact_length_tokens(target_length):
        tokens = np.random.randint(0, vocab_size, size=target_length).tolist()
        _, adjusted_tokens, token_mismatch = gen_prompt_decode_to_target_len(tokenizer, tokens, target_length)
        return adjusted_tokens, token_mismatch

    requests = []
    for prefix_index in range(num_prefixes):
        prefix_tokens, _ = _generate_exact_length_tokens(prefix_len)
        for _ in range(prompts_per_prefix + (prefix_index < remainder)):
            suffix_tokens, _ = _generate_exact_length_tokens(suffix_len)
            combined_tokens = prefix_tokens + suffix_tokens
            requests.append((tokenizer.decode(combined_tokens), len(combined_tokens)))
    random.shuffle(requests)
    for prompt, prompt_len in requests:
        out([prompt_len, len(prompt.encode())] + list(prompt.encode()))
    out([np.random.gamma(1.0, 1.0) for _ in range(3)])  # serve.py's get_request draws after the dataset


def timed_trace(args):
    with open(args[0]) as f:
        doc = json.load(f)
    vocab = dict(doc["model"]["vocab"])  # tokenizer.get_vocab(): the model's tokens and the added ones
    for added in doc["added_tokens"]:
        vocab[added["content"]] = added["id"]
    special = {a["id"] for a in doc["added_tokens"] if a["special"]}
    vocab_values_sorted = sorted(v for v in vocab.values() if v not in special)
    rows = [json.loads(line) for line in open(args[1]) if line.strip()]
    chunk_size = int(args[2])
    keys = sorted({f"{h}:{size}" for row in rows for h in row.get("hash_ids", []) for size in range(chunk_size + 1)})
    code = "import sys\nfor k in sys.argv[1:]: print(hash(k) & 0xFFFFFFFF)"
    env = dict(os.environ, PYTHONHASHSEED=args[3])
    hashes = subprocess.run([sys.executable, "-c", code] + keys, env=env, check=True, capture_output=True,
                            text=True).stdout.split()
    key_seed = dict(zip(keys, (int(h) for h in hashes)))
    cache = {}
    for row in rows:  # TimedTrace._expand_prompt
        target_input_size, prompt = row["input_length"], []
        for h in row.get("hash_ids", []):
            expanded_size = chunk_size if target_input_size >= chunk_size else target_input_size
            key = f"{h}:{expanded_size}"
            if key not in cache:
                cache[key] = random.Random(key_seed[key]).choices(vocab_values_sorted, k=expanded_size)
            prompt.extend(cache[key])
            target_input_size -= expanded_size
            if target_input_size <= 0:
                break
        out([len(prompt)] + prompt)


EXTRA_MODES = {"mm_draws": mm_draws, "pyhash": pyhash, "random_mm": random_mm, "prefix_rep": prefix_rep,
               "timed_trace": timed_trace}


if __name__ == "__main__":
    main(sys.argv)
