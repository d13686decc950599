// Writes parquet files in the layouts of lmarena-ai/vision-arena-bench-v0.1 and
// lmarena-ai/VisionArena-Chat as the `datasets` library stores them (3-level LIST columns, image
// columns as struct<bytes: binary, path: string>), with two independent writers:
//   hyparquet-writer: data page v2, dictionary encoding, SNAPPY / ZSTD (the zstd CLI) / GZIP
//     (node's zlib) / UNCOMPRESSED, several row groups;
//   parquetjs-lite: data page v1, PLAIN, SNAPPY / GZIP, several row groups.
// Beside each file, NAME.jsonl holds the same rows in the JSONL export layout of docs/client.md
// (images as {bytes: base64}), written from the rows themselves, not read back from the parquet.
// Every file is read back with hyparquet (a third, independent reader) and compared with its rows.
//   node make_parquet_fixtures.mjs OUTDIR                 small fixtures (tests/parquet/data)
//   node make_parquet_fixtures.mjs --large OUTDIR [ROWS]  ROWS (500) bench rows with ~0.5 MB noise PNGs
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { execFileSync } from 'node:child_process'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { parquetReadObjects } from 'hyparquet'
import parquetjs from 'parquetjs-lite'

// ---- a PNG encoder (RGB, 8 bits, filter 0), enough for test images
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
function crc32(buf) {
  let c = 0xffffffff
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, 'ascii')
  data.copy(out, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}
function png(width, height, pixel) {
  const raw = Buffer.alloc((width * 3 + 1) * height)
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y)
      raw.set([r, g, b], y * (width * 3 + 1) + 1 + x * 3)
    }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr),
    chunk('IDAT', zlib.deflateSync(raw, { level: 1 })), chunk('IEND', Buffer.alloc(0))])
}
// a deterministic generator (xorshift32) so the fixtures are the same on every run
function rng(seed) {
  let s = seed >>> 0 || 1
  return () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s }
}

// ---- the rows
const questions = ['What is shown in this image?', 'Describe the colors.', 'How many shapes are there?',
  'Read the text in the picture.', 'Write a caption.', 'Which corner is brightest?', 'Explain the chart.']
function smallImages() {
  return Array.from({ length: 6 }, (_, i) => png(4 + i, 3 + i, (x, y) => [(40 * i + x * 20) & 255, (y * 30 + i) & 255, (i * 50) & 255]))
}
function benchRows(n, images) {
  return Array.from({ length: n }, (_, i) => ({
    question_id: `q-${i}`,
    category: i % 3 === 0 ? 'ocr' : 'captioning',
    turns: [[{ content: `${questions[i % questions.length]} (row ${i})`, role: 'user' }]],
    images: i % 5 === 4 ? [{ bytes: images[i % images.length], path: null }, { bytes: images[(i + 1) % images.length], path: null }]
                        : [{ bytes: images[i % images.length], path: i % 2 ? null : `img_${i % images.length}.png` }],
  }))
}
function chatRows(n, images) {
  return Array.from({ length: n }, (_, i) => ({
    conversation_id: `c-${i}`,
    model: i % 2 ? 'model-a' : 'model-b',
    num_turns: 1 + (i % 3),
    conversation: Array.from({ length: 1 + (i % 3) }, (_, t) => [
      { content: `${questions[(i + t) % questions.length]} (conversation ${i}, turn ${t})`, role: 'user' },
      { content: `An answer to turn ${t}.`, role: 'assistant' }]),
    images: [{ bytes: images[i % images.length], path: null }],
  }))
}

// ---- the parquet schemas as pyarrow writes datasets' features
const utf8 = (name) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' })
const messageList = (name) => [
  { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'OPTIONAL', num_children: 2 },
  utf8('content'), utf8('role')]
const imageList = [
  { name: 'images', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'OPTIONAL', num_children: 2 },
  { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' }, utf8('path')]
const layouts = {
  bench: { columns: ['question_id', 'category', 'turns', 'images'],
    schema: [{ name: 'schema', num_children: 4 }, utf8('question_id'), utf8('category'), ...messageList('turns'), ...imageList] },
  chat: { columns: ['conversation_id', 'model', 'num_turns', 'conversation', 'images'],
    schema: [{ name: 'schema', num_children: 5 }, utf8('conversation_id'), utf8('model'),
      { name: 'num_turns', type: 'INT64', repetition_type: 'OPTIONAL' }, ...messageList('conversation'), ...imageList] },
}
const compressors = {
  ZSTD: (bytes) => new Uint8Array(execFileSync('zstd', ['-q', '-c', '-3'], { input: Buffer.from(bytes) })),
  GZIP: (bytes) => new Uint8Array(zlib.gzipSync(bytes)),
}

function writeHyparquet(file, layout, rows, codec, rowGroupSize, encoding) {
  const { columns, schema } = layouts[layout]
  const value = (name, v) => (name === 'num_turns' ? BigInt(v) : v)  // INT64 values are bigints to hyparquet-writer
  const columnData = columns.map((name) => ({ name, data: rows.map((r) => value(name, r[name])), ...(encoding ? { encoding } : {}) }))
  const buffer = parquetWriteBuffer({ columnData, schema, codec, compressors, rowGroupSize, statistics: false })
  fs.writeFileSync(file, Buffer.from(buffer))
}

// parquetjs-lite: the same 3-level lists, written as nested groups {list: [{element: ...}]}
// (parquetjs-lite takes the codec per leaf)
const pjMessages = (compression) => ({ type: 'LIST', optional: true, fields: { list: { repeated: true, fields: { element: {
  type: 'LIST', optional: true, fields: { list: { repeated: true, fields: { element: { optional: true, fields: {
    content: { type: 'UTF8', optional: true, compression }, role: { type: 'UTF8', optional: true, compression } } } } } } } } } } })
const pjImages = (compression) => ({ type: 'LIST', optional: true, fields: { list: { repeated: true, fields: { element: { optional: true, fields: {
  bytes: { type: 'BYTE_ARRAY', optional: true, compression }, path: { type: 'UTF8', optional: true, compression } } } } } } })
const pjWrap = (messages) => ({ list: messages.map((turn) => ({ element: { list: turn.map((m) => ({ element: m })) } })) })
const pjImageRow = (images) => ({ list: images.map((im) => ({ element: im.path === null ? { bytes: Buffer.from(im.bytes) } : { bytes: Buffer.from(im.bytes), path: im.path } })) })

async function writeParquetjs(file, layout, rows, compression, rowGroupSize) {
  const spec = layout === 'bench'
    ? { question_id: { type: 'UTF8', optional: true, compression }, category: { type: 'UTF8', optional: true, compression },
        turns: pjMessages(compression), images: pjImages(compression) }
    : { conversation_id: { type: 'UTF8', optional: true, compression }, model: { type: 'UTF8', optional: true, compression },
        num_turns: { type: 'INT64', optional: true, compression }, conversation: pjMessages(compression), images: pjImages(compression) }
  const schema = new parquetjs.ParquetSchema(spec)
  const writer = await parquetjs.ParquetWriter.openFile(schema, file, { useDataPageV2: false, rowGroupSize })
  for (const r of rows) {
    await writer.appendRow(layout === 'bench'
      ? { question_id: r.question_id, category: r.category, turns: pjWrap(r.turns), images: pjImageRow(r.images) }
      : { conversation_id: r.conversation_id, model: r.model, num_turns: r.num_turns, conversation: pjWrap(r.conversation), images: pjImageRow(r.images) })
  }
  await writer.close()
}

function writeJsonl(file, layout, rows) {
  const key = layout === 'bench' ? 'turns' : 'conversation'
  const lines = rows.map((r) => JSON.stringify({ [key]: r[key], images: r.images.map((im) => ({ bytes: Buffer.from(im.bytes).toString('base64') })) }))
  fs.writeFileSync(file, lines.join('\n') + '\n')
}

// hyparquet reads each file back: the rows it holds must be the rows written
async function checkReadBack(file, layout, rows) {
  const key = layout === 'bench' ? 'turns' : 'conversation'
  const buf = fs.readFileSync(file)
  const decompressors = {
    ZSTD: (input) => new Uint8Array(execFileSync('zstd', ['-q', '-d', '-c'], { input: Buffer.from(input) })),
    GZIP: (input) => new Uint8Array(zlib.gunzipSync(input)),
  }
  const got = await parquetReadObjects({ file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length), utf8: false,
    columns: [key, 'images'], compressors: decompressors })
  if (got.length !== rows.length) throw new Error(`${file}: ${got.length} rows read back, ${rows.length} written`)
  got.forEach((g, i) => {
    const text = (v) => (typeof v === 'string' ? v : Buffer.from(v).toString('utf8'))
    const want = rows[i]
    if (text(g[key][0][0].content) !== want[key][0][0].content) throw new Error(`${file}: row ${i} text differs`)
    if (Buffer.compare(Buffer.from(g.images[0].bytes), Buffer.from(want.images[0].bytes)) !== 0) throw new Error(`${file}: row ${i} image differs`)
  })
}

async function emit(dir, name, layout, rows, write) {
  const file = path.join(dir, `${name}.parquet`)
  await write(file)
  await checkReadBack(file, layout, rows)
  writeJsonl(path.join(dir, `${name}.jsonl`), layout, rows)
}

async function main() {
  const args = process.argv.slice(2)
  if (args[0] === '--large') {
    const dir = args[1], n = Number(args[2] ?? 500)
    fs.mkdirSync(dir, { recursive: true })
    const next = rng(12345)
    // 408 x 408 RGB noise: a PNG of about 0.5 MB that no codec shrinks
    const images = Array.from({ length: n }, () => png(408, 408, () => [next() & 255, next() & 255, next() & 255]))
    const rows = benchRows(n, images).map((r, i) => ({ ...r, images: [{ bytes: images[i], path: null }] }))
    await emit(dir, 'bench_large', 'bench', rows, (f) => writeHyparquet(f, 'bench', rows, 'SNAPPY', 100))
    return
  }
  const dir = args[0]
  fs.mkdirSync(dir, { recursive: true })
  const images = smallImages()
  const bench = benchRows(23, images), chat = chatRows(11, images)
  await emit(dir, 'bench_v2_snappy_dict', 'bench', bench, (f) => writeHyparquet(f, 'bench', bench, 'SNAPPY', 5, 'RLE_DICTIONARY'))
  await emit(dir, 'bench_v2_zstd', 'bench', bench, (f) => writeHyparquet(f, 'bench', bench, 'ZSTD', 10))
  await emit(dir, 'bench_v2_plain_uncompressed', 'bench', bench, (f) => writeHyparquet(f, 'bench', bench, 'UNCOMPRESSED', 100, 'PLAIN'))
  await emit(dir, 'bench_v1_gzip', 'bench', bench, (f) => writeParquetjs(f, 'bench', bench, 'GZIP', 6))
  await emit(dir, 'chat_v2_gzip_dict', 'chat', chat, (f) => writeHyparquet(f, 'chat', chat, 'GZIP', 4, 'RLE_DICTIONARY'))
  await emit(dir, 'chat_v1_snappy', 'chat', chat, (f) => writeParquetjs(f, 'chat', chat, 'SNAPPY', 3))
  // bad input: a codec encbench does not read (BROTLI, here stored as is), and images as text
  const few = bench.slice(0, 3)
  const { schema } = layouts.bench
  fs.writeFileSync(path.join(dir, 'bad_codec_brotli.parquet'), Buffer.from(parquetWriteBuffer({
    columnData: layouts.bench.columns.map((name) => ({ name, data: few.map((r) => r[name]) })), schema, codec: 'BROTLI',
    compressors: { BROTLI: (bytes) => bytes }, statistics: false })))
  fs.writeFileSync(path.join(dir, 'bad_images_as_text.parquet'), Buffer.from(parquetWriteBuffer({
    columnData: [{ name: 'turns', data: few.map((r) => r.turns) }, { name: 'images', data: few.map(() => 'not an image') }],
    schema: [{ name: 'schema', num_children: 2 }, ...messageList('turns'), utf8('images')], statistics: false })))
}
await main()
