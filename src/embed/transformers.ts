/**
 * `transformers:<hub id or folder>`: any ONNX feature-extraction model through @huggingface/transformers v3
 * (AutoTokenizer + AutoModel on onnxruntime-node, CPU). We tokenise, pad, pool and normalise ourselves so that every
 * rule is explicit and tested:
 *
 * - Where the model comes from. `transformers:<path>` is a local folder when the path is absolute, starts with `./`
 *   or `../`, or names an existing folder relative to the working directory. Otherwise it is a hub id (`owner/name`),
 *   looked up in `<cacheDir>/models/<owner>/<name>/` (the layout transformers.js writes when it downloads there).
 *   With `allowRemote: false` (default) a missing folder or file is `HarnessError('MODEL_NOT_FOUND')` naming the path
 *   it looked in, checked before transformers.js is called, so nothing is fetched and nothing hangs. With
 *   `allowRemote: true` a hub model missing locally is downloaded into `<cacheDir>/models/`.
 * - Global state. transformers.js keeps its settings in a global `env`. This module changes NOTHING in `env`:
 *   offline loading is the per-call option `local_files_only: true` (documented by transformers.js as equivalent to
 *   `env.allowRemoteModels = false`) and the download folder is the per-call `cache_dir`, so two providers with
 *   different settings cannot affect each other.
 * - Files: `config.json`, `tokenizer.json`, `tokenizer_config.json`, `onnx/model.onnx` (dtype fp32) or
 *   `onnx/model_quantized.onnx` (dtype q8), plus `onnx/<that name>_data*` external weights when present. Their sha256
 *   (and `sentence_bert_config.json` when present) identifies the model in cache keys.
 * - Prefixes: the role prefix is added exactly once (`applyPrefix`), before tokenisation.
 * - Maximum length in tokens, special tokens included: `maxLength` from the spec, else `max_seq_length` of
 *   `sentence_bert_config.json` (what sentence-transformers uses, e.g. 256 for all-MiniLM-L6-v2), else the tokenizer's
 *   `model_max_length` (when below 1e6), capped by `config.max_position_embeddings` (minus 2 for the RoBERTa family).
 * - Truncation keeps the special tokens, as Hugging Face tokenizers do: `[CLS] first tokens [SEP]`. (transformers.js
 *   itself cuts the tail, dropping the closing `[SEP]`; we do not use its truncation.) Each truncated input is counted.
 * - Padding: to the longest input of the batch with the tokenizer's pad id, attention mask 0, on the tokenizer's
 *   padding side. Pooling `mean` averages the token vectors whose attention mask is 1 (float64 sums); `cls` takes the
 *   first real token. A model whose output is already 2-D `[n, d]` (e.g. `sentence_embedding`) is used as is.
 * - The output must be `[n, seq, d]` (or `[n, d]`) with n = batch size; anything else is `EMBEDDING_FAILED`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { sha256Files } from './hash.js';
import { packageVersion } from './packages.js';
import { formatCacheKey, l2NormalizeInPlace, type EmbeddingProvider, type EmbedRole } from './provider.js';
import { modelBaseName, modelInput, TRANSFORMERS_PREFIX, type EmbeddingSpec } from './spec.js';

// The small slice of the transformers.js API used here and by the cross-encoder (src/rerank/transformers.ts); its
// bundled typings are loose JSDoc types.
/** An output tensor: shape and values. */
export interface TfTensor {
  dims: number[];
  data: ArrayLike<number>;
}
/** A tokenizer's output without tensors. */
export interface TfEncoding {
  input_ids: number[];
  attention_mask: number[];
  token_type_ids?: number[];
}
interface TfTokenizer {
  (text: string, options: { add_special_tokens: boolean; return_tensor: false }): TfEncoding;
  model_max_length?: number;
  pad_token_id?: number;
  padding_side?: string;
}
/** A loaded ONNX model: call with feeds, get named output tensors. */
export interface TfModel {
  (inputs: Record<string, unknown>): Promise<Record<string, TfTensor>>;
  config?: Record<string, unknown>;
  dispose(): Promise<unknown>;
}
/** The module as used here: `Tensor` builds the int64 feeds. */
export interface TfModule {
  Tensor: new (type: string, data: BigInt64Array, dims: number[]) => unknown;
}

/** Token ids of one encoded input (and its segment ids, when the tokenizer gives them). */
export interface EncodedIds {
  ids: readonly number[];
  types: readonly number[] | null;
}

/**
 * Pads a batch of encoded inputs to the longest (L tokens) as the model's feeds: `input_ids` (padding with `padId`),
 * `attention_mask` (1 for real tokens), and `token_type_ids` when every input has segment ids; int64 tensors of shape
 * [n, L] made with `Tensor`. `left` pads on the left (tokenizers whose `padding_side` is `left`). Also returns the
 * mask as bytes (`mask01`, for mean pooling) and L. Shared by the embedding and the cross-encoder paths.
 */
export function padBatch(
  enc: readonly EncodedIds[],
  padId: number,
  left: boolean,
  Tensor: new (type: string, data: BigInt64Array, dims: number[]) => unknown,
): { feeds: Record<string, unknown>; mask01: Uint8Array; L: number } {
  const n = enc.length;
  const L = Math.max(...enc.map((e) => e.ids.length));
  const ids = new BigInt64Array(n * L).fill(BigInt(padId));
  const mask = new BigInt64Array(n * L);
  const types = new BigInt64Array(n * L);
  const hasTypes = enc.every((e) => e.types !== null);
  const mask01 = new Uint8Array(n * L);
  enc.forEach((e, i) => {
    const off = i * L + (left ? L - e.ids.length : 0);
    for (let s = 0; s < e.ids.length; s++) {
      ids[off + s] = BigInt(e.ids[s]);
      mask[off + s] = 1n;
      mask01[off + s] = 1;
      if (hasTypes) types[off + s] = BigInt(e.types![s]);
    }
  });
  const feeds: Record<string, unknown> = {
    input_ids: new Tensor('int64', ids, [n, L]),
    attention_mask: new Tensor('int64', mask, [n, L]),
  };
  if (hasTypes) feeds.token_type_ids = new Tensor('int64', types, [n, L]);
  return { feeds, mask01, L };
}

const HUB_ID = /^[A-Za-z0-9][\w.-]*(\/[A-Za-z0-9][\w.-]*)?$/;

/** Where a transformers model is loaded from. */
export interface ModelLocation {
  /** `folder`: a local folder given by path; `hub`: a hub id (found in, or downloaded to, `dir`). */
  kind: 'folder' | 'hub';
  /** The id or path after `transformers:`, as written. */
  id: string;
  /** Absolute folder holding (or to hold) the model files. */
  dir: string;
}

/**
 * Resolves `transformers:<id or path>` (or the bare id/path) against the working directory and `cacheDir`.
 * Pure apart from checking whether a relative path names an existing folder.
 */
export function locateModel(model: string, cacheDir: string): ModelLocation {
  const id = model.startsWith(TRANSFORMERS_PREFIX) ? model.slice(TRANSFORMERS_PREFIX.length) : model;
  const looksLikePath =
    path.isAbsolute(id) || id.startsWith('./') || id.startsWith('../') || id.startsWith('.\\') || id.includes('\\');
  const asPath = path.resolve(id);
  if (looksLikePath || !HUB_ID.test(id) || (existsSync(asPath) && statSync(asPath).isDirectory())) {
    return { kind: 'folder', id, dir: asPath };
  }
  return { kind: 'hub', id, dir: path.resolve(cacheDir, 'models', ...id.split('/')) };
}

/** The ONNX file name for a dtype: `model.onnx` (fp32) or `model_quantized.onnx` (q8). */
export function onnxFileName(dtype: EmbeddingSpec['dtype']): string {
  return dtype === 'q8' ? 'model_quantized.onnx' : 'model.onnx';
}

/** The files every model folder needs, in hashing order: config.json, tokenizer.json, tokenizer_config.json, onnx/<dtype file>. */
export function requiredModelFiles(dtype: EmbeddingSpec['dtype']): string[] {
  return ['config.json', 'tokenizer.json', 'tokenizer_config.json', `onnx/${onnxFileName(dtype)}`];
}

/**
 * The up-front check of a `transformers:` model, run before any work: a model that cannot be found stops the run
 * with one `MODEL_NOT_FOUND` that lists every missing file, whether it is a hub id or a folder. The only model that is
 * not checked is a hub id with `allowRemote: true` whose folder is absent: it is downloaded when loaded. (A model that
 * is found but fails to load, e.g. a damaged ONNX file, still makes its rows `failed`.)
 *
 * @param spec the embedding entry: `model` (`transformers:<hub id or path>`), `dtype`, `allowRemote`.
 * @param cacheDir absolute cache folder; hub ids are looked up in `<cacheDir>/models/<owner>/<name>/`.
 * @throws HarnessError('MODEL_NOT_FOUND') from {@link modelFiles}.
 */
export function preflightTransformersModel(spec: Pick<EmbeddingSpec, 'model' | 'dtype' | 'allowRemote'>, cacheDir: string): void {
  const loc = locateModel(spec.model, cacheDir);
  if (loc.kind === 'hub' && spec.allowRemote && !existsSync(loc.dir)) return;
  modelFiles(loc, spec.dtype, spec.allowRemote);
}

/**
 * The files that identify a model folder (relative paths, in hashing order).
 *
 * @throws HarnessError('MODEL_NOT_FOUND') when the folder is missing (the message lists every file a model folder
 *   needs) or when any required file is missing: ONE error that lists every missing file at once (`config.json,
 *   onnx/model.onnx are missing in …`), the same for a hub id and a folder.
 */
export function modelFiles(loc: ModelLocation, dtype: EmbeddingSpec['dtype'], allowRemote: boolean): string[] {
  const onnx = onnxFileName(dtype);
  const required = requiredModelFiles(dtype);
  const remedyFor = (what: string): string =>
    loc.kind === 'hub'
      ? `put the model's files (${required.join(', ')}) in ${loc.dir}, ` +
        `or set allowRemote: true on this embedding entry to download ${loc.id} there`
      : `check the path; a model folder holds ${required.join(', ')}${what}`;
  if (!existsSync(loc.dir) || !statSync(loc.dir).isDirectory()) {
    throw new HarnessError(
      'MODEL_NOT_FOUND',
      `embedding model ${TRANSFORMERS_PREFIX}${loc.id}: no model folder at ${loc.dir}` +
        (loc.kind === 'hub'
          ? ` (read as a hub id: ${path.resolve(loc.id)} is not a folder either` +
            (allowRemote ? ')' : '; allowRemote is false, so nothing is downloaded)')
          : '') +
        `; missing: ${required.join(', ')}`,
      { location: { file: loc.dir }, remedy: remedyFor('') },
    );
  }
  const missing = required.filter((f) => !existsSync(path.join(loc.dir, f)));
  if (missing.length > 0) {
    const onnxMissing = missing.includes(`onnx/${onnx}`);
    throw new HarnessError(
      'MODEL_NOT_FOUND',
      `embedding model ${TRANSFORMERS_PREFIX}${loc.id}: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} missing in ${loc.dir}` +
        (onnxMissing ? ` (dtype ${dtype} needs onnx/${onnx})` : ''),
      {
        location: { file: path.join(loc.dir, missing[0]) },
        remedy:
          onnxMissing && missing.length === 1
            ? `use the dtype whose file exists, or add onnx/${onnx}`
            : remedyFor(onnxMissing ? ` (or use the dtype whose onnx file exists)` : ''),
      },
    );
  }
  const extra = readdirSync(path.join(loc.dir, 'onnx'))
    .filter((n) => n.startsWith(`${onnx}_data`))
    .sort()
    .map((n) => `onnx/${n}`);
  const st = existsSync(path.join(loc.dir, 'sentence_bert_config.json')) ? ['sentence_bert_config.json'] : [];
  return [...required, ...extra, ...st];
}

/** Reads a JSON file, or undefined when absent or unreadable. */
export function readJson(file: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** The effective max length (see module doc), or null for no limit. */
function effectiveMaxLength(spec: EmbeddingSpec, dir: string, tokenizer: TfTokenizer): { maxLength: number | null; source: string } {
  const st = readJson(path.join(dir, 'sentence_bert_config.json'));
  const pos = positionLimit(dir);
  let want = Infinity;
  let source = 'none';
  if (spec.maxLength !== null) {
    want = spec.maxLength;
    source = 'spec.maxLength';
  } else if (typeof st?.max_seq_length === 'number') {
    want = st.max_seq_length;
    source = 'sentence_bert_config.json max_seq_length';
  } else if (typeof tokenizer.model_max_length === 'number' && tokenizer.model_max_length < 1e6) {
    want = tokenizer.model_max_length;
    source = 'tokenizer_config.json model_max_length';
  }
  if (pos < want) {
    want = pos;
    source = 'config.json max_position_embeddings';
  }
  return { maxLength: Number.isFinite(want) ? want : null, source };
}

/** One tokenised input ready for padding. */
interface Encoded {
  ids: number[];
  types: number[] | null;
  truncated: boolean;
}

function sameRun(a: number[], at: number, b: number[]): boolean {
  for (let i = 0; i < b.length; i++) if (a[at + i] !== b[i]) return false;
  return true;
}

/**
 * Tokenises `text` with special tokens; when longer than `maxLength`, keeps the special tokens and cuts the content:
 * `prefix specials + first (maxLength - #specials) content tokens + suffix specials`. Falls back to a plain cut when
 * the special tokens cannot be located around the content.
 */
export function encodeWithTruncation(tokenizer: TfTokenizer, text: string, maxLength: number | null): Encoded {
  const full = tokenizer(text, { add_special_tokens: true, return_tensor: false });
  const types = full.token_type_ids ?? null;
  if (maxLength === null || full.input_ids.length <= maxLength) return { ids: full.input_ids, types, truncated: false };
  const content = tokenizer(text, { add_special_tokens: false, return_tensor: false });
  const nSpecial = full.input_ids.length - content.input_ids.length;
  let p = -1;
  if (nSpecial >= 0 && maxLength > nSpecial) {
    for (let k = 0; k <= nSpecial; k++) {
      if (sameRun(full.input_ids, k, content.input_ids)) {
        p = k;
        break;
      }
    }
  }
  if (p < 0) {
    return { ids: full.input_ids.slice(0, maxLength), types: types?.slice(0, maxLength) ?? null, truncated: true };
  }
  const keep = maxLength - nSpecial;
  const end = p + content.input_ids.length;
  const cut = <T>(a: T[]): T[] => [...a.slice(0, p), ...a.slice(p, p + keep), ...a.slice(end)];
  return { ids: cut(full.input_ids), types: types ? cut(types) : null, truncated: true };
}

let tfModule: Promise<unknown> | undefined;
/** `@huggingface/transformers`, imported on first use (it loads onnxruntime-node: ~1 s, not paid by other commands). */
export function loadTransformers<M = TfModule>(): Promise<M> {
  tfModule ??= import('@huggingface/transformers');
  return tfModule as Promise<M>;
}

/** What {@link loadPretrained} needs: the model, where it is, and how to name a failure. */
export interface PretrainedRequest {
  /** The model as the config names it (for messages). */
  model: string;
  loc: ModelLocation;
  /** Load only from `loc.dir` (no hub download). */
  local: boolean;
  cacheDir: string;
  dtype: string;
  /** The transformers.js class whose `from_pretrained` loads the ONNX graph. */
  head: 'AutoModel' | 'AutoModelForSequenceClassification';
  /** `embedding model` or `rerank model`. */
  what: string;
  /** The error code when a local folder does not load (a remote one is MODEL_NOT_FOUND). */
  failCode: 'EMBEDDING_FAILED' | 'RERANK_FAILED';
  /** The remedy when a local folder does not load. */
  localRemedy: string;
}

/**
 * Loads a tokenizer and an ONNX model through transformers.js (`from_pretrained`, CPU, onnxruntime warnings off),
 * from `loc.dir` when `local`, else from the hub id into `<cacheDir>/models`. Shared by the `transformers:` embedding
 * provider and the cross-encoder reranker.
 * @returns the transformers.js module and the loaded tokenizer and model (typed by the caller's slice of the API).
 * @throws HarnessError `failCode` (local) or `MODEL_NOT_FOUND` (remote) naming the model and folder, with the cause.
 */
export async function loadPretrained<Tok, Model, M = unknown>(r: PretrainedRequest): Promise<{ tf: M; tokenizer: Tok; model: Model }> {
  type Loader = { from_pretrained(id: string, options: Record<string, unknown>): Promise<unknown> };
  const tf = await loadTransformers<Record<string, Loader>>();
  const source = r.local ? r.loc.dir : r.loc.id;
  const common = { local_files_only: r.local, cache_dir: path.resolve(r.cacheDir, 'models') };
  try {
    const tokenizer = (await tf.AutoTokenizer.from_pretrained(source, common)) as Tok;
    const model = (await tf[r.head].from_pretrained(source, {
      ...common,
      dtype: r.dtype,
      device: 'cpu',
      session_options: { logSeverityLevel: 3 },
    })) as Model;
    return { tf: tf as unknown as M, tokenizer, model };
  } catch (e) {
    throw new HarnessError(
      r.local ? r.failCode : 'MODEL_NOT_FOUND',
      `${r.what} ${r.model} did not load from ${r.local ? r.loc.dir : `the hub into ${r.loc.dir}`}: ${(e as Error).message}`,
      {
        location: { file: r.loc.dir },
        remedy: r.local ? r.localRemedy : 'check the hub id and the network, or download the folder by hand',
        cause: e,
      },
    );
  }
}

/**
 * The longest input the position embeddings allow: config.json `max_position_embeddings`, minus 2 for the RoBERTa
 * family (its positions start after the padding index), or Infinity when the config does not say.
 */
export function positionLimit(dir: string): number {
  const config = readJson(path.join(dir, 'config.json')) ?? {};
  const posRaw = config.max_position_embeddings;
  const roberta = /roberta|camembert/i.test(String(config.model_type ?? ''));
  return typeof posRaw === 'number' && posRaw > 0 ? posRaw - (roberta ? 2 : 0) : Infinity;
}

/** The `transformers:` provider. Create through `createProvider`. */
export class TransformersProvider implements EmbeddingProvider {
  readonly name: string;
  readonly label: string;
  dimensions: number;
  private readonly spec: EmbeddingSpec;
  private readonly tf: TfModule;
  private readonly tokenizer: TfTokenizer;
  private readonly model: TfModel;
  private readonly loc: ModelLocation;
  private readonly modelSha256: string;
  private readonly files: string[];
  private readonly maxLength: number | null;
  private readonly maxLengthSource: string;
  private truncated = 0;
  private closed = false;

  private constructor(args: {
    spec: EmbeddingSpec;
    tf: TfModule;
    tokenizer: TfTokenizer;
    model: TfModel;
    loc: ModelLocation;
    modelSha256: string;
    files: string[];
  }) {
    this.spec = args.spec;
    this.name = args.spec.model;
    this.label = args.spec.label;
    this.tf = args.tf;
    this.tokenizer = args.tokenizer;
    this.model = args.model;
    this.loc = args.loc;
    this.modelSha256 = args.modelSha256;
    this.files = args.files;
    const ml = effectiveMaxLength(args.spec, args.loc.dir, args.tokenizer);
    this.maxLength = ml.maxLength;
    this.maxLengthSource = ml.source;
    this.dimensions = 0;
  }

  /**
   * Locates, checks, hashes and loads the model, then embeds one probe text to learn the dimension.
   * Throws `HarnessError('MODEL_NOT_FOUND')` (naming the folder or file) and `HarnessError('EMBEDDING_FAILED')`.
   */
  static async create(spec: EmbeddingSpec, cacheDir: string): Promise<TransformersProvider> {
    const loc = locateModel(spec.model, cacheDir);
    const modelsDir = path.resolve(cacheDir, 'models');
    const local = existsSync(loc.dir) || loc.kind === 'folder' || !spec.allowRemote;
    if (local) modelFiles(loc, spec.dtype, spec.allowRemote); // throws MODEL_NOT_FOUND before transformers.js runs
    const { tf, tokenizer, model } = await loadPretrained<TfTokenizer, TfModel, TfModule>({
      model: spec.model,
      loc,
      local,
      cacheDir,
      dtype: spec.dtype,
      head: 'AutoModel',
      what: 'embedding model',
      failCode: 'EMBEDDING_FAILED',
      localRemedy: 'check that the folder holds a transformers.js-compatible ONNX export (e.g. a Xenova/* model)',
    });
    const files = modelFiles(loc, spec.dtype, spec.allowRemote);
    const modelSha256 = await sha256Files(loc.dir, files);
    const provider = new TransformersProvider({ spec, tf, tokenizer, model, loc, modelSha256, files });
    const probe = await provider.run(['probe'], 'document');
    provider.dimensions = probe[0].length;
    provider.truncated = 0;
    return provider;
  }

  cacheKey(role: EmbedRole): string {
    return formatCacheKey('transformers', {
      model: modelBaseName(this.spec.model),
      sha256: this.modelSha256,
      dtype: this.spec.dtype,
      pooling: this.spec.pooling,
      normalize: this.spec.normalize,
      maxLength: this.maxLength,
      truncation: 'keep-special-tokens',
      prefix: role === 'query' ? this.spec.queryPrefix : this.spec.documentPrefix,
    });
  }

  async embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    if (this.closed) throw new HarnessError('EMBEDDING_FAILED', `${this.name} used after close()`);
    if (texts.length === 0) return [];
    const vecs = await this.run(texts, role);
    for (const v of vecs) {
      if (v.length !== this.dimensions) {
        throw new HarnessError('EMBEDDING_FAILED', `${this.name} returned ${v.length} dimensions, expected ${this.dimensions}`);
      }
    }
    return vecs;
  }

  /** Tokenise (prefix, truncation), pad, run, pool, normalise. */
  private async run(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    const n = texts.length;
    const enc = texts.map((t) => encodeWithTruncation(this.tokenizer, modelInput(this.spec, role, t), this.maxLength));
    for (const e of enc) if (e.truncated) this.truncated++;
    const { feeds, mask01, L } = padBatch(enc, this.tokenizer.pad_token_id ?? 0, this.tokenizer.padding_side === 'left', this.tf.Tensor);
    let out: Record<string, TfTensor>;
    try {
      out = await this.model(feeds);
    } catch (e) {
      throw new HarnessError('EMBEDDING_FAILED', `${this.name} failed on a batch of ${n} texts: ${(e as Error).message}`, {
        remedy: 'check that the model is an encoder exported for feature extraction; try a smaller batchSize or maxLength',
        cause: e,
      });
    }
    const t = out.last_hidden_state ?? out.token_embeddings ?? out.sentence_embedding ?? Object.values(out)[0];
    if (!t) throw new HarnessError('EMBEDDING_FAILED', `${this.name} returned no output tensor`);
    const dims = t.dims;
    const shapeOk = (dims.length === 3 && dims[0] === n && dims[1] === L) || (dims.length === 2 && dims[0] === n);
    if (!shapeOk) {
      throw new HarnessError(
        'EMBEDDING_FAILED',
        `${this.name} returned an output of shape [${dims.join(', ')}]; expected [${n}, ${L}, d] or [${n}, d]`,
        { remedy: 'use a feature-extraction (encoder) model' },
      );
    }
    const data = t.data;
    const d = dims[dims.length - 1];
    const result: Float32Array[] = [];
    for (let i = 0; i < n; i++) {
      const v = new Float32Array(d);
      if (dims.length === 2) {
        for (let j = 0; j < d; j++) v[j] = data[i * d + j];
      } else if (this.spec.pooling === 'cls') {
        let s0 = 0;
        while (s0 < L - 1 && mask01[i * L + s0] === 0) s0++;
        const o = (i * L + s0) * d;
        for (let j = 0; j < d; j++) v[j] = data[o + j];
      } else {
        const acc = new Float64Array(d);
        let count = 0;
        for (let s = 0; s < L; s++) {
          if (mask01[i * L + s] === 0) continue;
          count++;
          const o = (i * L + s) * d;
          for (let j = 0; j < d; j++) acc[j] += data[o + j];
        }
        for (let j = 0; j < d; j++) v[j] = count > 0 ? acc[j] / count : 0;
      }
      result.push(this.spec.normalize ? l2NormalizeInPlace(v) : v);
    }
    return result;
  }

  truncatedCount(): number {
    return this.truncated;
  }

  describe(): Record<string, unknown> {
    return {
      provider: 'transformers',
      model: this.loc.id,
      source: this.loc.kind,
      folder: this.loc.dir,
      files: this.files,
      modelSha256: this.modelSha256,
      dims: this.dimensions,
      dtype: this.spec.dtype,
      pooling: this.spec.pooling,
      normalize: this.spec.normalize,
      queryPrefix: this.spec.queryPrefix,
      documentPrefix: this.spec.documentPrefix,
      maxLength: this.maxLength,
      maxLengthSource: this.maxLengthSource,
      truncation: 'keep special tokens, cut content (Hugging Face tokenizers behaviour)',
      truncated: this.truncated,
      backend: `onnxruntime-node@${packageVersion('onnxruntime-node')} (cpu)`,
      transformers: `@huggingface/transformers@${packageVersion('@huggingface/transformers')}`,
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.model.dispose();
  }
}
