// Independent reference for encbench's tokenizer (harness/tokenizer): encodes each text of a JSON
// array with Hugging Face's tokenizers.js (@huggingface/tokenizers) and prints
// {"ids": [[...], ...], "decoded": ["...", ...]} on stdout (decoded: decode(ids) of each text).
//   node tests/node/tokenizer_reference.mjs TOKENIZER_JSON TEXTS_JSON
// Texts are encoded without special tokens added (add_special_tokens: false), as vLLM's random
// dataset does. Exits 3 when the npm package is missing (tests/node/install.sh installs it).
import { readFileSync } from "node:fs";

let Tokenizer;
try {
  ({ Tokenizer } = await import("@huggingface/tokenizers"));
} catch (e) {
  console.error("@huggingface/tokenizers is not installed (run tests/node/install.sh): " + e.message);
  process.exit(3);
}
const [tokenizerPath, textsPath] = process.argv.slice(2);
const tokenizerJson = JSON.parse(readFileSync(tokenizerPath, "utf8"));
const texts = JSON.parse(readFileSync(textsPath, "utf8"));
// Qwen2/Qwen3 ship tokenizer_config.json with clean_up_tokenization_spaces false (tokenizers.js
// defaults it to true; Hugging Face's Rust decoder never cleans up).
const tokenizer = new Tokenizer(tokenizerJson, { clean_up_tokenization_spaces: false });
const ids = texts.map((t) => tokenizer.encode(t, { add_special_tokens: false }).ids);
const decoded = ids.map((i) => (i.length === 0 ? "" : tokenizer.decode(i, { skip_special_tokens: false })));
process.stdout.write(JSON.stringify({ ids, decoded }));
