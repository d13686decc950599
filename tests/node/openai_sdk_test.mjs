// encbench serve checked by an independent client: the official openai npm SDK (v6).
// The SDK does not validate response schemas, so every field is asserted here.
//   node tests/node/openai_sdk_test.mjs --base-url http://127.0.0.1:PORT --model qwen2.5-vl-7b
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import OpenAI from 'openai';

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}
const baseURL = arg('--base-url', 'http://127.0.0.1:8000') + '/v1';
const model = arg('--model', 'qwen2.5-vl-7b');
const client = new OpenAI({ baseURL, apiKey: 'encbench', maxRetries: 0, timeout: 30000 });

// An 8x8 red RGB PNG, written with Python's zlib/struct (fixed bytes: no image library needed).
const PNG_8x8 =
  'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC';


// A noise PNG (incompressible, so the request body is over 1 MiB), built with node's zlib.
function crc32(buf) {
  let c, crc = 0xffffffff;
  for (let n = 0; n < buf.length; n++) {
    c = (crc ^ buf[n]) & 0xff;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    crc = (crc >>> 8) ^ c;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
function pngChunk(type, data) {
  const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function noisePng(width, height) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  let x = 12345;
  for (let i = 0; i < raw.length; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; x >>>= 0; raw[i] = x & 0xff; }
  for (let y = 0; y < height; y++) raw[y * (width * 3 + 1)] = 0;  // filter type none
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr), pngChunk('IDAT', zlib.deflateSync(raw)), pngChunk('IEND', Buffer.alloc(0))]);
}

const results = [];
async function check(name, fn) {
  try {
    await fn();
    results.push([name, 'ok']);
    console.log(`ok   ${name}`);
  } catch (e) {
    results.push([name, 'FAIL']);
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

function assertUsage(usage, completionTokens) {
  assert.ok(usage, 'usage present');
  assert.equal(typeof usage.prompt_tokens, 'number');
  assert.ok(usage.prompt_tokens > 0);
  assert.equal(usage.completion_tokens, completionTokens);
  assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
}

await check('models.list', async () => {
  const list = await client.models.list();
  assert.ok(list.data.some((m) => m.id === model), 'served model listed');
  assert.equal(list.data[0].object, 'model');
});

await check('chat non-streaming', async () => {
  const r = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Say hello' }],
    max_completion_tokens: 9,
    ignore_eos: true,
  });
  assert.match(r.id, /^chatcmpl-/);
  assert.equal(r.object, 'chat.completion');
  assert.equal(typeof r.created, 'number');
  assert.equal(r.model, model);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].index, 0);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.choices[0].message.content.trim().split(/\s+/).length, 9);
  assert.equal(r.choices[0].finish_reason, 'length');
  assertUsage(r.usage, 9);
  // "Say hello" = 9 bytes -> 3 tokens, + 4 per message + 3 assistant prefix (docs/server.md).
  assert.equal(r.usage.prompt_tokens, 3 + 4 + 3);
});

await check('chat streaming with usage', async () => {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Stream please' }],
    max_tokens: 12,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length === 1 + 12 + 1, `got ${chunks.length} chunks`);
  const id = chunks[0].id;
  for (const c of chunks) {
    assert.equal(c.id, id);
    assert.equal(c.object, 'chat.completion.chunk');
    assert.equal(c.model, model);
    assert.equal(typeof c.created, 'number');
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const content = chunks.slice(1, 13);
  content.forEach((c, i) => {
    assert.equal(c.choices.length, 1);
    assert.equal(c.choices[0].index, 0);
    assert.equal(typeof c.choices[0].delta.content, 'string');
    assert.ok(c.choices[0].delta.content.length > 0);
    assert.equal(c.choices[0].finish_reason, i === 11 ? 'length' : null);
  });
  const last = chunks[chunks.length - 1];
  assert.deepEqual(last.choices, []);
  assertUsage(last.usage, 12);
});

await check('completions streaming and non-streaming', async () => {
  const r = await client.completions.create({ model, prompt: 'abcdefgh', max_tokens: 4, ignore_eos: true });
  assert.match(r.id, /^cmpl-/);
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assertUsage(r.usage, 4);
  assert.equal(r.usage.prompt_tokens, 2);
  const stream = await client.completions.create({
    model, prompt: 'abcdefgh', max_tokens: 4, ignore_eos: true, stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.equal(chunks.length, 4 + 1);
  assert.equal(chunks[3].choices[0].finish_reason, 'length');
  assertUsage(chunks[4].usage, 4);
});

await check('image_url data URL counted in prompt tokens', async () => {
  const r = await client.chat.completions.create({
    model,
    messages: [{
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this image?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_8x8}` } },
      ],
    }],
    max_tokens: 3,
    ignore_eos: true,
  });
  assertUsage(r.usage, 3);
  // 8x8 -> smart_resize to 56x56 -> 4x4 patches -> 4 image tokens + 2 wrapper tokens;
  // text 22 bytes -> 6 tokens; + 4 per message + 3 assistant prefix.
  assert.equal(r.usage.prompt_tokens, 4 + 2 + 6 + 4 + 3);
});

await check('1.2 MB image body streamed', async () => {
  const png = noisePng(600, 500).toString('base64');
  assert.ok(png.length > 1024 * 1024);
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } }] }],
    max_tokens: 2,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  });
  let usage;
  for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
  // 500x600 -> 504x588 -> 36x42 patches -> 378 tokens, + 2 wrapper; + 4 per message + 3 prefix.
  assertUsage(usage, 2);
  assert.equal(usage.prompt_tokens, 378 + 2 + 4 + 3);
});

async function expectApiError(status, code, fn) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `expected APIError, got ${e}`);
    assert.equal(e.status, status, `status ${e.status}: ${e.message}`);
    if (code !== undefined) assert.equal(e.code, code);
    assert.equal(typeof e.error?.message, 'string');
    assert.ok('param' in e.error && 'type' in e.error);
    return e;
  }
  assert.fail(`expected HTTP ${status}`);
}

await check('error mapping', async () => {
  const unknown = await expectApiError(404, 'model_not_found', () =>
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }));
  assert.ok(unknown instanceof OpenAI.NotFoundError);
  const n2 = await expectApiError(400, 'invalid_value', () =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], n: 2 }));
  assert.ok(n2 instanceof OpenAI.BadRequestError);
  assert.equal(n2.param, 'n');
  await expectApiError(400, 'missing_field', () => client.chat.completions.create({ model }));
  await expectApiError(400, 'remote_media_not_supported', () =>
    client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } }] }],
    }));
  await expectApiError(400, 'unsupported_image_format', () =>  // three zero bytes: no known format
    client.chat.completions.create({
      model,
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }],
    }));
  const big = await expectApiError(413, 'body_too_large', () =>
    client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x'.repeat(3 * 1024 * 1024) }] }));
  assert.ok(big instanceof OpenAI.APIError);
  // Streaming requests that fail before the stream starts surface the same errors.
  await expectApiError(404, 'model_not_found', async () => {
    const s = await client.chat.completions.create({
      model: 'nope', messages: [{ role: 'user', content: 'x' }], stream: true,
    });
    for await (const _ of s) { /* drain */ }
  });
});

await check('server still healthy', async () => {
  const r = await fetch(baseURL.replace(/\/v1$/, '') + '/health');
  assert.equal(r.status, 200);
});

const failed = results.filter(([, s]) => s !== 'ok').length;
console.log(`${results.length - failed}/${results.length} checks passed`);
process.exit(failed ? 1 : 0);
