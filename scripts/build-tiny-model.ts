/**
 * Builds a tiny BERT-shaped model folder that transformers.js v3 loads with local files only, for offline tests.
 *
 * Usage: `npx tsx scripts/build-tiny-model.ts <output dir> [--cross-encoder]` (creates the folder; overwrites the
 * five files). Library use: `await buildTinyModel(dir)`; `await buildTinyCrossEncoder(dir)` writes the tiny
 * cross-encoder of the rerank tests instead (see {@link buildTinyCrossEncoder}, at the end of this file).
 *
 * Layout written (about 4 KB in all):
 * ```
 * <dir>/config.json            model_type "bert", hidden_size 8, max_position_embeddings 16
 * <dir>/tokenizer.json         WordPiece, BertNormalizer (lowercase), BertPreTokenizer, [CLS] $A [SEP] template
 * <dir>/tokenizer_config.json  BertTokenizer, model_max_length 16
 * <dir>/onnx/model.onnx        the graph below, written as ONNX protobuf by hand (no Python, no protobufjs)
 * <dir>/onnx/model_quantized.onnx   the same graph (so dtype 'q8' also loads; it is NOT really quantised)
 * ```
 *
 * The ONNX graph (opset 17, IR version 8). Inputs `input_ids`, `attention_mask`, `token_type_ids`: int64
 * `[batch, sequence]`. Output `last_hidden_state`: float32 `[batch, sequence, 8]`:
 * ```
 * last_hidden_state[b, s, :] = W[input_ids[b, s]] + T[token_type_ids[b, s]] + attention_mask[b, s] * M
 * ```
 * with `W` = {@link tinyWordTable}, `T` = {@link tinyTypeTable}, `M` = {@link TINY_MASK_VECTOR}. Each position's
 * output depends only on that position's own token, type and mask bit (no attention), so padding a text inside a
 * batch must not change its mean-pooled vector, and padded positions are NOT zero (`W[PAD] + T[0]`), so a pooling
 * that forgets the attention mask gives a different, detectable answer. {@link tinyTokenVector} computes one row so
 * tests can work out expected vectors by hand.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Hidden size (vector dimensions) of the tiny model. */
export const TINY_DIMS = 8;
/** Maximum sequence length in tokens, special tokens included (tokenizer `model_max_length`). */
export const TINY_MAX_LENGTH = 16;

/**
 * The WordPiece vocabulary, id = index. Ids 0..4 are the special tokens `[PAD] [UNK] [CLS] [SEP] [MASK]`.
 * It holds the role markers of the prefix presets (`query`, `:`, `passage`, `search`, `_`, `document`) and the
 * words the tests use; anything else becomes `[UNK]`.
 */
export const TINY_VOCAB: readonly string[] = [
  '[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]',
  'query', ':', 'passage', 'search', '_', 'document',
  'represent', 'this', 'sentence', 'for', 'searching', 'relevant', 'passages',
  'a', 'b', 'c', 'd', 'e', 'how', 'do', 'i', 'reset', 'the', 'router', '?', '.', ',',
  'refund', 'my', 'money', 'get', 'back', 'pump', 'seal', 'kit', 'hello', 'world', '##s',
];

/** Row `id` of the word-embedding table `W` (length {@link TINY_DIMS}), float32-rounded. Deterministic. */
export function tinyWordRow(id: number): number[] {
  const row: number[] = [];
  for (let j = 0; j < TINY_DIMS; j++) row.push(Math.fround(Math.sin(1.3 * (id + 1) + 0.7 * (j + 1) * (id + 2))));
  return row;
}

/** The word-embedding table `W`: `TINY_VOCAB.length` rows of {@link TINY_DIMS}. */
export function tinyWordTable(): number[][] {
  return TINY_VOCAB.map((_, id) => tinyWordRow(id));
}

/** The token-type table `T`: 2 rows (type 0, type 1) of {@link TINY_DIMS}. */
export function tinyTypeTable(): number[][] {
  return [0, 1].map((t) => Array.from({ length: TINY_DIMS }, (_, j) => Math.fround(0.01 * (t + 1) * (j + 1))));
}

/** `M`, added to every position whose attention mask is 1. */
export const TINY_MASK_VECTOR: readonly number[] = Array.from({ length: TINY_DIMS }, (_, j) => Math.fround(0.05 * (j + 1)));

/**
 * One output row of the tiny model: `W[tokenId] + T[typeId] + mask * M`, computed in float64 from the float32
 * tables (the model adds in float32, so compare with a tolerance of about 1e-6).
 */
export function tinyTokenVector(tokenId: number, typeId = 0, mask = 1): number[] {
  const w = tinyWordRow(tokenId);
  const t = tinyTypeTable()[typeId];
  return w.map((v, j) => v + t[j] + mask * TINY_MASK_VECTOR[j]);
}

// ---------------------------------------------------------------------------------------------------------------
// Minimal protobuf writer (proto2 wire format: varint = 0, length-delimited = 2).

type Bytes = Uint8Array;

function varint(value: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return out;
}

function concat(parts: readonly Bytes[]): Bytes {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** Field with wire type 0 (int32, int64, enum). */
function fVarint(field: number, value: number | bigint): Bytes {
  return Uint8Array.from([...varint((field << 3) | 0), ...varint(value)]);
}

/** Field with wire type 2 (string, bytes, embedded message). */
function fBytes(field: number, payload: Bytes | string): Bytes {
  const data = typeof payload === 'string' ? new TextEncoder().encode(payload) : payload;
  return concat([Uint8Array.from([...varint((field << 3) | 2), ...varint(data.length)]), data]);
}

const msg = (...fields: Bytes[]): Bytes => concat(fields);

// ONNX TensorProto.DataType
const FLOAT = 1;
const INT64 = 7;

/** onnx.TensorProto with raw little-endian data. */
function tensorProto(name: string, dims: number[], dataType: number, raw: Bytes): Bytes {
  return msg(...dims.map((d) => fVarint(1, d)), fVarint(2, dataType), fBytes(8, name), fBytes(9, raw));
}

function floatTensor(name: string, dims: number[], values: number[]): Bytes {
  const raw = new Uint8Array(new Float32Array(values).buffer);
  return tensorProto(name, dims, FLOAT, raw);
}

function int64Tensor(name: string, dims: number[], values: number[]): Bytes {
  const raw = new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);
  return tensorProto(name, dims, INT64, raw);
}

/** onnx.ValueInfoProto for a tensor; a string dim is symbolic (dim_param), a number is fixed (dim_value). */
function valueInfo(name: string, elemType: number, dims: (string | number)[]): Bytes {
  const shape = msg(...dims.map((d) => fBytes(1, typeof d === 'number' ? fVarint(1, d) : fBytes(2, d))));
  const tensorType = msg(fVarint(1, elemType), fBytes(2, shape));
  const typeProto = msg(fBytes(1, tensorType));
  return msg(fBytes(1, name), fBytes(2, typeProto));
}

/** onnx.NodeProto; `intAttrs` become AttributeProto of type INT (= 2). */
function node(opType: string, inputs: string[], outputs: string[], name: string, intAttrs: Record<string, number> = {}): Bytes {
  const attrs = Object.entries(intAttrs).map(([k, v]) => fBytes(5, msg(fBytes(1, k), fVarint(3, v), fVarint(20, 2))));
  return msg(...inputs.map((i) => fBytes(1, i)), ...outputs.map((o) => fBytes(2, o)), fBytes(3, name), fBytes(4, opType), ...attrs);
}

/** The serialised ONNX ModelProto of the tiny model. */
export function tinyModelOnnx(): Uint8Array {
  const V = TINY_VOCAB.length;
  const d = TINY_DIMS;
  const initializers = [
    floatTensor('word_embeddings', [V, d], tinyWordTable().flat()),
    floatTensor('token_type_embeddings', [2, d], tinyTypeTable().flat()),
    floatTensor('mask_vector', [d], [...TINY_MASK_VECTOR]),
    int64Tensor('unsqueeze_axes', [1], [-1]),
  ];
  const nodes = [
    node('Gather', ['word_embeddings', 'input_ids'], ['we'], 'gather_words', { axis: 0 }),
    node('Gather', ['token_type_embeddings', 'token_type_ids'], ['te'], 'gather_types', { axis: 0 }),
    node('Add', ['we', 'te'], ['wt'], 'add_types'),
    node('Cast', ['attention_mask'], ['mask_f'], 'cast_mask', { to: FLOAT }),
    node('Unsqueeze', ['mask_f', 'unsqueeze_axes'], ['mask_3d'], 'unsqueeze_mask'),
    node('Mul', ['mask_3d', 'mask_vector'], ['mask_term'], 'mul_mask'),
    node('Add', ['wt', 'mask_term'], ['last_hidden_state'], 'add_mask'),
  ];
  const graph = msg(
    ...nodes.map((n) => fBytes(1, n)),
    fBytes(2, 'tiny-bert'),
    ...initializers.map((t) => fBytes(5, t)),
    fBytes(11, valueInfo('input_ids', INT64, ['batch_size', 'sequence_length'])),
    fBytes(11, valueInfo('attention_mask', INT64, ['batch_size', 'sequence_length'])),
    fBytes(11, valueInfo('token_type_ids', INT64, ['batch_size', 'sequence_length'])),
    fBytes(12, valueInfo('last_hidden_state', FLOAT, ['batch_size', 'sequence_length', d])),
  );
  return msg(
    fVarint(1, 8), // ir_version
    fBytes(2, 'retrieval-sweep build-tiny-model'),
    fBytes(7, graph),
    fBytes(8, msg(fBytes(1, ''), fVarint(2, 17))), // opset_import: default domain, opset 17
  );
}

/** The tokenizer.json (Hugging Face `tokenizers` format) of the tiny model. */
export function tinyTokenizerJson(): Record<string, unknown> {
  const id = (t: string): number => TINY_VOCAB.indexOf(t);
  const specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((content) => ({
      id: id(content), content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
      ],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [id('[CLS]')], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [id('[SEP]')], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(TINY_VOCAB.map((t, i) => [t, i])),
    },
  };
}

/** What {@link buildTinyModel} wrote. */
export interface TinyModelInfo {
  /** Absolute path of the model folder. */
  dir: string;
  dims: number;
  maxLength: number;
  vocab: readonly string[];
}

/**
 * Writes the tiny model folder into `dir` (created if missing; existing files of the same names are overwritten).
 * Synchronous file writes; returns a promise for symmetry with loaders. Throws the fs error if `dir` is not writable.
 */
export async function buildTinyModel(dir: string): Promise<TinyModelInfo> {
  const abs = path.resolve(dir);
  mkdirSync(path.join(abs, 'onnx'), { recursive: true });
  const config = {
    model_type: 'bert',
    architectures: ['BertModel'],
    hidden_size: TINY_DIMS,
    num_hidden_layers: 0,
    num_attention_heads: 1,
    intermediate_size: TINY_DIMS,
    max_position_embeddings: TINY_MAX_LENGTH,
    vocab_size: TINY_VOCAB.length,
    type_vocab_size: 2,
    pad_token_id: 0,
  };
  const tokenizerConfig = {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    model_max_length: TINY_MAX_LENGTH,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
    clean_up_tokenization_spaces: true,
  };
  const onnx = tinyModelOnnx();
  writeFileSync(path.join(abs, 'config.json'), JSON.stringify(config, null, 2) + '\n');
  writeFileSync(path.join(abs, 'tokenizer.json'), JSON.stringify(tinyTokenizerJson(), null, 2) + '\n');
  writeFileSync(path.join(abs, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig, null, 2) + '\n');
  writeFileSync(path.join(abs, 'onnx', 'model.onnx'), onnx);
  writeFileSync(path.join(abs, 'onnx', 'model_quantized.onnx'), onnx);
  return { dir: abs, dims: TINY_DIMS, maxLength: TINY_MAX_LENGTH, vocab: TINY_VOCAB };
}

// ---------------------------------------------------------------------------------------------------------------
// The tiny cross-encoder (BertForSequenceClassification-shaped), for the rerank tests.

/** Maximum pair length in tokens of the tiny cross-encoder (`max_position_embeddings` and `model_max_length`). */
export const TINY_CE_MAX_LENGTH = 64;

/** Per-token relevance weight `u[id]` of the tiny cross-encoder, float32-rounded. Never 0 (so `[PAD]` counts if unmasked). */
export function tinyCrossTokenWeight(id: number): number {
  return Math.fround(Math.sin(0.9 * (id + 1)) + 0.25 * ((id % 3) + 1));
}

/** Per-segment factor `v[type]`: segment A (type 0, the question) 1, segment B (type 1, the chunk) -0.375. */
export const TINY_CE_TYPE_FACTOR: readonly number[] = [1, -0.375];

/** The bias added to every logit. */
export const TINY_CE_BIAS = 0.125;

/**
 * The relevance logit of the tiny cross-encoder for one encoded pair, computed in float64 from the float32 tables
 * (the model sums in float32: compare with a tolerance of about 1e-5):
 * `s = bias + Σ_s mask[s] · u[input_ids[s]] · v[token_type_ids[s]]`.
 */
export function tinyCrossLogit(ids: readonly number[], types: readonly number[], mask?: readonly number[]): number {
  let s = TINY_CE_BIAS;
  ids.forEach((id, i) => {
    s += (mask?.[i] ?? 1) * tinyCrossTokenWeight(id) * TINY_CE_TYPE_FACTOR[types[i]];
  });
  return s;
}

/** Options of {@link buildTinyCrossEncoder}. */
export interface TinyCrossEncoderOptions {
  /**
   * Columns of the `logits` output: 1 (ms-marco style, the default), 2 (two-class head: column 0 = `0.25 − s`,
   * column 1 = `s`, so the positive class logit is `s`), or 3 (a shape the reranker must reject).
   */
  outputColumns?: 1 | 2 | 3;
}

/** The serialised ONNX ModelProto of the tiny cross-encoder (see {@link buildTinyCrossEncoder}). */
export function tinyCrossEncoderOnnx(options: TinyCrossEncoderOptions = {}): Uint8Array {
  const cols = options.outputColumns ?? 1;
  const V = TINY_VOCAB.length;
  const initializers = [
    floatTensor('token_weight', [V], TINY_VOCAB.map((_, id) => tinyCrossTokenWeight(id))),
    floatTensor('type_factor', [2], [...TINY_CE_TYPE_FACTOR]),
    floatTensor('bias', [1], [TINY_CE_BIAS]),
    int64Tensor('sum_axes', [1], [1]),
    ...(cols === 2 ? [floatTensor('quarter', [1], [0.25])] : []),
  ];
  const s = cols === 1 ? 'logits' : 'relevance';
  const nodes = [
    node('Gather', ['token_weight', 'input_ids'], ['u'], 'gather_weight', { axis: 0 }),
    node('Gather', ['type_factor', 'token_type_ids'], ['v'], 'gather_type', { axis: 0 }),
    node('Mul', ['u', 'v'], ['uv'], 'mul_type'),
    node('Cast', ['attention_mask'], ['mask_f'], 'cast_mask', { to: FLOAT }),
    node('Mul', ['uv', 'mask_f'], ['uvm'], 'mul_mask'),
    node('ReduceSum', ['uvm', 'sum_axes'], ['sum'], 'sum_tokens', { keepdims: 1 }),
    node('Add', ['sum', 'bias'], [s], 'add_bias'),
  ];
  if (cols === 2) {
    nodes.push(
      node('Neg', [s], ['neg'], 'negate'),
      node('Add', ['neg', 'quarter'], ['negative_class'], 'add_quarter'),
      node('Concat', ['negative_class', s], ['logits'], 'concat_classes', { axis: 1 }),
    );
  } else if (cols === 3) {
    nodes.push(node('Concat', [s, s, s], ['logits'], 'concat_three', { axis: 1 }));
  }
  const graph = msg(
    ...nodes.map((n) => fBytes(1, n)),
    fBytes(2, 'tiny-cross-encoder'),
    ...initializers.map((t) => fBytes(5, t)),
    fBytes(11, valueInfo('input_ids', INT64, ['batch_size', 'sequence_length'])),
    fBytes(11, valueInfo('attention_mask', INT64, ['batch_size', 'sequence_length'])),
    fBytes(11, valueInfo('token_type_ids', INT64, ['batch_size', 'sequence_length'])),
    fBytes(12, valueInfo('logits', FLOAT, ['batch_size', cols])),
  );
  return msg(
    fVarint(1, 8),
    fBytes(2, 'retrieval-sweep build-tiny-model (cross-encoder)'),
    fBytes(7, graph),
    fBytes(8, msg(fBytes(1, ''), fVarint(2, 17))),
  );
}

/**
 * Writes a tiny cross-encoder folder (BertForSequenceClassification-shaped) that transformers.js v3 loads with
 * `AutoModelForSequenceClassification` + `AutoTokenizer` from local files only:
 * ```
 * <dir>/config.json            model_type "bert", architectures [BertForSequenceClassification], id2label (1 label),
 *                              max_position_embeddings 64
 * <dir>/tokenizer.json         the tiny WordPiece tokenizer (pair template [CLS] A [SEP] B [SEP], types 0 0 0 1 1)
 * <dir>/tokenizer_config.json  BertTokenizer, model_max_length 64
 * <dir>/onnx/model.onnx        inputs input_ids, attention_mask, token_type_ids (int64 [batch, seq]); output
 *                              logits float32 [batch, 1] = TINY_CE_BIAS + Σ mask · u[id] · v[type] (see tinyCrossLogit)
 * <dir>/onnx/model_quantized.onnx   the same graph (so dtype q8 loads; NOT really quantised)
 * ```
 * No attention, no positions: a token's contribution depends on its id, its segment and its mask bit, so swapping
 * question and chunk changes the score (v[0] ≠ v[1]), padding must not change it, and `[PAD]` has a non-zero weight
 * so forgetting the mask is detected. Throws the fs error when `dir` is not writable.
 */
export async function buildTinyCrossEncoder(dir: string, options: TinyCrossEncoderOptions = {}): Promise<TinyModelInfo> {
  const abs = path.resolve(dir);
  const cols = options.outputColumns ?? 1;
  mkdirSync(path.join(abs, 'onnx'), { recursive: true });
  const config = {
    model_type: 'bert',
    architectures: ['BertForSequenceClassification'],
    hidden_size: TINY_DIMS,
    num_hidden_layers: 0,
    num_attention_heads: 1,
    intermediate_size: TINY_DIMS,
    max_position_embeddings: TINY_CE_MAX_LENGTH,
    vocab_size: TINY_VOCAB.length,
    type_vocab_size: 2,
    pad_token_id: 0,
    id2label: Object.fromEntries(Array.from({ length: cols }, (_, i) => [String(i), `LABEL_${i}`])),
    label2id: Object.fromEntries(Array.from({ length: cols }, (_, i) => [`LABEL_${i}`, i])),
  };
  const tokenizerConfig = {
    tokenizer_class: 'BertTokenizer',
    do_lower_case: true,
    model_max_length: TINY_CE_MAX_LENGTH,
    cls_token: '[CLS]',
    sep_token: '[SEP]',
    pad_token: '[PAD]',
    unk_token: '[UNK]',
    mask_token: '[MASK]',
    clean_up_tokenization_spaces: true,
  };
  const onnx = tinyCrossEncoderOnnx(options);
  writeFileSync(path.join(abs, 'config.json'), JSON.stringify(config, null, 2) + '\n');
  writeFileSync(path.join(abs, 'tokenizer.json'), JSON.stringify(tinyTokenizerJson(), null, 2) + '\n');
  writeFileSync(path.join(abs, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig, null, 2) + '\n');
  writeFileSync(path.join(abs, 'onnx', 'model.onnx'), onnx);
  writeFileSync(path.join(abs, 'onnx', 'model_quantized.onnx'), onnx);
  return { dir: abs, dims: TINY_DIMS, maxLength: TINY_CE_MAX_LENGTH, vocab: TINY_VOCAB };
}

const invokedDirectly = process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  const out = process.argv[2];
  const cross = process.argv[3] === '--cross-encoder';
  if (!out || (process.argv[3] !== undefined && !cross)) {
    process.stderr.write('usage: tsx scripts/build-tiny-model.ts <output dir> [--cross-encoder]\n');
    process.exitCode = 1;
  } else {
    const info = cross ? await buildTinyCrossEncoder(out) : await buildTinyModel(out);
    process.stdout.write(`${info.dir}\n`);
  }
}
