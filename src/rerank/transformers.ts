/**
 * `transformers:<folder or hub id>` as a reranker: a cross-encoder (sequence classification) through
 * @huggingface/transformers v3 (`AutoTokenizer` + `AutoModelForSequenceClassification` on onnxruntime-node, CPU).
 * The question and the chunk go in as one pair, question first (segment A, token type 0), chunk second (segment B,
 * token type 1); the relevance logit is the score.
 *
 * - Where the model comes from: exactly as for embeddings (src/embed/transformers.ts `locateModel`): a path
 *   (absolute, `./`, `../`, or an existing folder) is a local folder; otherwise a hub id looked up in
 *   `<cacheDir>/models/<owner>/<name>/`. With `allowRemote: false` (default) missing files are
 *   `HarnessError('MODEL_NOT_FOUND')` listing every missing file at once, checked before transformers.js runs, so
 *   nothing is fetched; `allowRemote: true` lets transformers.js download a missing hub model into
 *   `<cacheDir>/models/`. transformers.js's global `env` is never changed (per-call `local_files_only`, `cache_dir`).
 * - Files: `config.json`, `tokenizer.json`, `tokenizer_config.json`, `onnx/model.onnx` (dtype fp32) or
 *   `onnx/model_quantized.onnx` (q8), plus `onnx/<that name>_data*` when present; their sha256 is in the cache key.
 * - Pair encoding: the tokenizer's own pair template (`tokenizer(question, { text_pair: chunk })`, e.g. BERT
 *   `[CLS] q [SEP] c [SEP]` with types `0…0 1…1`, RoBERTa/XLM-R `<s> q </s></s> c </s>`).
 * - Truncation from the chunk side (Hugging Face `truncation: 'only_second'`). transformers.js cannot do this: its
 *   `truncation: true` cuts the tail of the whole pair, dropping the closing separator. So we tokenise the pair in
 *   full, locate the chunk's content tokens inside it, and keep only the first
 *   `maxLength − specials − question tokens` of them, special tokens and the whole question kept. Only when the
 *   question alone leaves no room for one chunk token is the question cut too (from its end, keeping one chunk
 *   token); Hugging Face raises an error there, we count it (`questionTruncated`) instead. When the content cannot be
 *   located (a tokenizer whose pair output is not the concatenation of its parts), the pair is cut at its tail and
 *   counted as `tailCut`. Every truncated pair is counted (`truncated`). That is {@link encodePair}, the reference;
 *   the reranker uses {@link encodePairFast}, which builds the same pair from transformers.js's own parts
 *   (`_encode_text` per text, `post_processor` to join: exactly what its pair call does) so each chunk is tokenised
 *   once, not twice; a differential test proves the two equal. Tokenisation is most of the cost on a small model.
 * - Maximum length in tokens, special tokens included: `spec.maxLength` (default 512), capped by the tokenizer's
 *   `model_max_length` (when below 1e6) and `config.max_position_embeddings` (minus 2 for the RoBERTa family).
 * - Padding: to the longest pair of the batch with the tokenizer's pad id, attention mask 0, on its padding side; a
 *   pair's score does not depend on its batch beyond float32 rounding (onnxruntime's vectorised sums depend on the
 *   padded length), tested with a model whose padding ids would change the score if the mask were ignored. The
 *   pair-score cache (cache.ts) then fixes each pair's score for the whole grid.
 * - Output: `logits` of shape `[n, 1]` (score = column 0, the ms-marco/bge convention) or `[n, 2]` (score = column
 *   1, the positive-class logit of a two-label head); any other shape, or a non-finite value, is
 *   `HarnessError('RERANK_FAILED')`. Scores are the float32 logits widened to float64, unchanged (no sigmoid).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { sha256Files } from '../embed/hash.js';
import { packageVersion } from '../embed/packages.js';
import { formatCacheKey } from '../embed/provider.js';
import { modelBaseName } from '../embed/spec.js';
import {
  loadPretrained,
  locateModel,
  onnxFileName,
  padBatch,
  positionLimit,
  type ModelLocation,
  type TfEncoding,
  type TfModel,
  type TfModule,
  type TfTensor,
} from '../embed/transformers.js';
import type { Reranker, RerankSpec } from './types.js';

/** The tokenizer call used here (pair or single text, no tensors, no truncation, no padding). */
export interface PairTokenizer {
  (
    text: string,
    options: { text_pair?: string; add_special_tokens: boolean; return_tensor: false; return_token_type_ids?: boolean },
  ): TfEncoding;
  model_max_length?: number;
  pad_token_id?: number;
  padding_side?: string;
}
/** One encoded (question, chunk) pair, before padding. */
export interface EncodedPair {
  /** Token ids, special tokens included; length ≤ the max length. */
  ids: number[];
  /** Token type (segment) ids, aligned with `ids`; null when the tokenizer gives none (RoBERTa family). */
  types: number[] | null;
  /** True when the pair was cut to the max length. */
  truncated: boolean;
  /** True when the question itself had to be cut (it left no room for one chunk token). */
  questionTruncated: boolean;
  /** True when the chunk could not be located in the pair and the pair was cut at its tail instead. */
  tailCut: boolean;
}

function runAt(a: readonly number[], at: number, b: readonly number[]): boolean {
  if (at < 0 || at + b.length > a.length) return false;
  for (let i = 0; i < b.length; i++) if (a[at + i] !== b[i]) return false;
  return true;
}

/**
 * Encodes `(question, chunk)` with the tokenizer's pair template and, when longer than `maxLength` tokens, cuts the
 * chunk side (see the module doc: the question and the special tokens are kept; the question is cut only when it
 * leaves no room for one chunk token, or for none when the chunk is empty). `maxLength` null = no limit. Pure given
 * the tokenizer. The reference for {@link encodePairFast}.
 */
export function encodePair(tokenizer: PairTokenizer, question: string, chunk: string, maxLength: number | null): EncodedPair {
  const full = tokenizer(question, { text_pair: chunk, add_special_tokens: true, return_tensor: false, return_token_type_ids: true });
  const ids = full.input_ids;
  const types = full.token_type_ids ?? null;
  const plain: EncodedPair = { ids, types, truncated: false, questionTruncated: false, tailCut: false };
  if (maxLength === null || ids.length <= maxLength) return plain;
  const q = tokenizer(question, { add_special_tokens: false, return_tensor: false }).input_ids;
  const c = tokenizer(chunk, { add_special_tokens: false, return_tensor: false }).input_ids;
  const nSpecial = ids.length - q.length - c.length;
  // The question's content is the first match after at most nSpecial leading specials; the chunk's the last match
  // after the question.
  let pq = -1;
  for (let k = 0; nSpecial >= 0 && k <= nSpecial; k++) {
    if (runAt(ids, k, q)) {
      pq = k;
      break;
    }
  }
  let pc = -1;
  if (pq >= 0) {
    for (let k = ids.length - c.length; k >= pq + q.length; k--) {
      if (runAt(ids, k, c)) {
        pc = k;
        break;
      }
    }
  }
  const pick = (spans: [number, number][]): { ids: number[]; types: number[] | null } => ({
    ids: spans.flatMap(([a, b]) => ids.slice(a, b)),
    types: types === null ? null : spans.flatMap(([a, b]) => types.slice(a, b)),
  });
  if (pc < 0 || maxLength < nSpecial + 1) {
    return { ids: ids.slice(0, maxLength), types: types?.slice(0, maxLength) ?? null, truncated: true, questionTruncated: false, tailCut: true };
  }
  const keepChunk = maxLength - nSpecial - q.length;
  if (keepChunk >= 1) {
    const cut = pick([
      [0, pc + keepChunk],
      [pc + c.length, ids.length],
    ]);
    return { ...cut, truncated: true, questionTruncated: false, tailCut: false };
  }
  const oneChunk = Math.min(1, c.length);
  const cut = pick([
    [0, pq + maxLength - nSpecial - oneChunk],
    [pq + q.length, pc + oneChunk],
    [pc + c.length, ids.length],
  ]);
  return { ...cut, truncated: true, questionTruncated: true, tailCut: false };
}

/**
 * The internals of a transformers.js 3.x tokenizer that its own pair call is made of (tokenizers.js
 * `_tokenize_helper`: `_encode_text` on each text, then `post_processor(tokensA, tokensB)`, then
 * `model.convert_tokens_to_ids`). Used to tokenise each chunk once instead of twice.
 */
interface TokenizerInternals {
  _encode_text(text: string): string[] | null;
  post_processor?: (a: string[], b: string[] | null, o: { add_special_tokens: boolean }) => { tokens: string[]; token_type_ids?: number[] };
  model: { convert_tokens_to_ids(tokens: string[]): number[] };
}

/** True when `tokenizer` exposes the internals {@link encodePairFast} needs (transformers.js 3.x does). */
export function hasFastPairPath(tokenizer: PairTokenizer): boolean {
  const t = tokenizer as unknown as Partial<TokenizerInternals>;
  return typeof t._encode_text === 'function' && typeof t.post_processor === 'function' && typeof t.model?.convert_tokens_to_ids === 'function';
}

/**
 * The same result as {@link encodePair} with the chunk tokenised once: the question's tokens (`questionTokens`, from
 * {@link questionTokensOf}, computed once per question) and the chunk's are cut as in `encodePair` and joined by the
 * tokenizer's own post-processor, exactly as transformers.js builds a pair. `encodePair` stays the reference; a test
 * checks the two agree, truncated or not. Requires {@link hasFastPairPath}.
 */
export function encodePairFast(tokenizer: PairTokenizer, questionTokens: readonly string[], chunk: string, maxLength: number | null): EncodedPair {
  const t = tokenizer as unknown as TokenizerInternals;
  const q = [...questionTokens];
  const c = t._encode_text(chunk) ?? [];
  const join = (a: string[], b: string[]): { ids: number[]; types: number[] | null } => {
    const out = t.post_processor!(a, b, { add_special_tokens: true });
    return { ids: t.model.convert_tokens_to_ids(out.tokens), types: out.token_type_ids ?? null };
  };
  const full = join(q, c);
  if (maxLength === null || full.ids.length <= maxLength) return { ...full, truncated: false, questionTruncated: false, tailCut: false };
  const nSpecial = full.ids.length - q.length - c.length;
  if (nSpecial < 0 || maxLength < nSpecial + 1) {
    return { ids: full.ids.slice(0, maxLength), types: full.types?.slice(0, maxLength) ?? null, truncated: true, questionTruncated: false, tailCut: true };
  }
  const keepChunk = maxLength - nSpecial - q.length;
  if (keepChunk >= 1) return { ...join(q, c.slice(0, keepChunk)), truncated: true, questionTruncated: false, tailCut: false };
  const oneChunk = Math.min(1, c.length);
  return { ...join(q.slice(0, maxLength - nSpecial - oneChunk), c.slice(0, oneChunk)), truncated: true, questionTruncated: true, tailCut: false };
}

/** The question's tokens for {@link encodePairFast} (the tokenizer's `_encode_text`). Requires {@link hasFastPairPath}. */
export function questionTokensOf(tokenizer: PairTokenizer, question: string): string[] {
  return (tokenizer as unknown as TokenizerInternals)._encode_text(question) ?? [];
}

/**
 * The files of a cross-encoder folder (relative paths, in hashing order). Throws `HarnessError('MODEL_NOT_FOUND')`
 * listing every missing file at once (or the missing folder).
 */
export function crossEncoderFiles(loc: ModelLocation, dtype: 'fp32' | 'q8', allowRemote: boolean): string[] {
  const onnx = onnxFileName(dtype);
  const required = ['config.json', 'tokenizer.json', 'tokenizer_config.json', `onnx/${onnx}`];
  const remedy =
    loc.kind === 'hub'
      ? `put the model's files (${required.join(', ')}) in ${loc.dir}, or set allowRemote: true on this rerank entry to download ${loc.id} there`
      : `a cross-encoder folder holds ${required.join(', ')}; export one with optimum (see docs/reranking.md)`;
  if (!existsSync(loc.dir) || !statSync(loc.dir).isDirectory()) {
    throw new HarnessError(
      'MODEL_NOT_FOUND',
      `rerank model transformers:${loc.id}: no model folder at ${loc.dir}` +
        (loc.kind === 'hub' ? ` (read as a hub id${allowRemote ? '' : '; allowRemote is false, so nothing is downloaded'})` : ''),
      { location: { file: loc.dir }, remedy },
    );
  }
  const missing = required.filter((f) => !existsSync(path.join(loc.dir, f)));
  if (missing.length > 0) {
    throw new HarnessError('MODEL_NOT_FOUND', `rerank model transformers:${loc.id}: missing in ${loc.dir}: ${missing.join(', ')}` +
      (missing.includes(`onnx/${onnx}`) ? ` (dtype ${dtype} needs onnx/${onnx})` : ''), {
      location: { file: path.join(loc.dir, missing[0]) },
      remedy,
    });
  }
  const extra = readdirSync(path.join(loc.dir, 'onnx'))
    .filter((n) => n.startsWith(`${onnx}_data`))
    .sort()
    .map((n) => `onnx/${n}`);
  return [...required, ...extra];
}

/** The effective max length: spec, capped by the tokenizer's and the position table's limits. */
function effectiveMaxLength(spec: RerankSpec, dir: string, tokenizer: PairTokenizer): { maxLength: number | null; source: string } {
  const pos = positionLimit(dir);
  const tokMax = typeof tokenizer.model_max_length === 'number' && tokenizer.model_max_length < 1e6 ? tokenizer.model_max_length : Infinity;
  let want = spec.maxLength ?? Infinity;
  let source = spec.maxLength === undefined ? 'none' : 'spec.maxLength';
  if (tokMax < want) {
    want = tokMax;
    source = 'tokenizer_config.json model_max_length';
  }
  if (pos < want) {
    want = pos;
    source = 'config.json max_position_embeddings';
  }
  return { maxLength: Number.isFinite(want) ? want : null, source };
}

/** The `transformers:` cross-encoder. Create through `createReranker` (registry.ts) or {@link TransformersReranker.create}. */
export class TransformersReranker implements Reranker {
  readonly name: string;
  readonly label: string;
  private readonly spec: RerankSpec;
  private readonly tf: TfModule;
  private readonly tokenizer: PairTokenizer;
  private readonly model: TfModel;
  private readonly loc: ModelLocation;
  private readonly files: string[];
  private readonly modelSha256: string;
  private readonly dtype: 'fp32' | 'q8';
  /** Maximum pair length in tokens, special tokens included; null = no limit. */
  readonly maxLength: number | null;
  private readonly maxLengthSource: string;
  private counts = { pairs: 0, passes: 0, truncated: 0, questionTruncated: 0, tailCut: 0 };
  private labels: number | null = null;
  private closed = false;
  /** Whether the tokenizer allows {@link encodePairFast} (one tokenisation per chunk). */
  private readonly fast: boolean;

  private constructor(a: {
    spec: RerankSpec;
    tf: TfModule;
    tokenizer: PairTokenizer;
    model: TfModel;
    loc: ModelLocation;
    files: string[];
    modelSha256: string;
  }) {
    this.spec = a.spec;
    this.name = a.spec.model;
    this.label = a.spec.label;
    this.tf = a.tf;
    this.tokenizer = a.tokenizer;
    this.model = a.model;
    this.loc = a.loc;
    this.files = a.files;
    this.modelSha256 = a.modelSha256;
    this.dtype = a.spec.dtype ?? 'fp32';
    const ml = effectiveMaxLength(a.spec, a.loc.dir, a.tokenizer);
    this.maxLength = ml.maxLength;
    this.maxLengthSource = ml.source;
    this.fast = hasFastPairPath(a.tokenizer);
  }

  /**
   * Locates, checks, hashes and loads the cross-encoder, then scores one probe pair to check the output shape.
   * Throws `HarnessError('MODEL_NOT_FOUND')` (every missing file listed) and `HarnessError('RERANK_FAILED')` (does
   * not load, or its output is not `[n, 1]` / `[n, 2]`).
   */
  static async create(spec: RerankSpec, cacheDir: string): Promise<TransformersReranker> {
    const dtype = spec.dtype ?? 'fp32';
    const allowRemote = spec.allowRemote ?? false;
    const loc = locateModel(spec.model, cacheDir);
    const local = existsSync(loc.dir) || loc.kind === 'folder' || !allowRemote;
    if (local) crossEncoderFiles(loc, dtype, allowRemote); // throws MODEL_NOT_FOUND before transformers.js runs
    const { tf, tokenizer, model } = await loadPretrained<PairTokenizer, TfModel, TfModule>({
      model: spec.model,
      loc,
      local,
      cacheDir,
      dtype,
      head: 'AutoModelForSequenceClassification',
      what: 'rerank model',
      failCode: 'RERANK_FAILED',
      localRemedy: 'check that the folder holds an ONNX export of a sequence-classification model (e.g. a cross-encoder exported with optimum)',
    });
    const files = crossEncoderFiles(loc, dtype, allowRemote);
    const modelSha256 = await sha256Files(loc.dir, files);
    const r = new TransformersReranker({ spec, tf, tokenizer, model, loc, files, modelSha256 });
    try {
      await r.score('probe', ['probe']);
    } catch (e) {
      await model.dispose();
      throw e;
    }
    r.counts = { pairs: 0, passes: 0, truncated: 0, questionTruncated: 0, tailCut: 0 };
    return r;
  }

  cacheKey(): string {
    return formatCacheKey('rerank-transformers', {
      model: modelBaseName(this.spec.model),
      sha256: this.modelSha256,
      dtype: this.dtype,
      maxLength: this.maxLength,
      truncation: 'only-second-keep-specials',
      score: 'logit[0] of 1 column, logit[1] of 2',
    });
  }

  /**
   * The pairs exactly as the model receives them (before padding), for `texts` against `query`: for tests and
   * inspection. Uses {@link encodePairFast} when the tokenizer allows it, else {@link encodePair}.
   */
  encodeAll(query: string, texts: readonly string[]): EncodedPair[] {
    if (!this.fast) return texts.map((t) => encodePair(this.tokenizer, query, t, this.maxLength));
    const q = questionTokensOf(this.tokenizer, query);
    return texts.map((t) => encodePairFast(this.tokenizer, q, t, this.maxLength));
  }

  /** One pair, as {@link encodeAll}. */
  encode(query: string, text: string): EncodedPair {
    return this.encodeAll(query, [text])[0];
  }

  async score(query: string, texts: readonly string[]): Promise<number[]> {
    if (this.closed) throw new HarnessError('RERANK_FAILED', `${this.name} used after close()`);
    const out: number[] = [];
    const size = Math.max(1, this.spec.batchSize);
    for (let s = 0; s < texts.length; s += size) out.push(...(await this.run(this.encodeAll(query, texts.slice(s, s + size)))));
    return out;
  }

  /** One forward pass: pad, run, read the logits. */
  private async run(enc: readonly EncodedPair[]): Promise<number[]> {
    const n = enc.length;
    for (const e of enc) {
      if (e.truncated) this.counts.truncated++;
      if (e.questionTruncated) this.counts.questionTruncated++;
      if (e.tailCut) this.counts.tailCut++;
    }
    const { feeds } = padBatch(enc, this.tokenizer.pad_token_id ?? 0, this.tokenizer.padding_side === 'left', this.tf.Tensor);
    let result: Record<string, TfTensor>;
    try {
      result = await this.model(feeds);
    } catch (e) {
      throw new HarnessError('RERANK_FAILED', `${this.name} failed on a batch of ${n} pairs: ${(e as Error).message}`, {
        remedy: 'check that the model is a sequence-classification (cross-encoder) export; try a smaller batchSize or maxLength',
        cause: e,
      });
    }
    const logits = result.logits;
    const dims = logits?.dims ?? [];
    if (!logits || dims.length !== 2 || dims[0] !== n || (dims[1] !== 1 && dims[1] !== 2)) {
      throw new HarnessError(
        'RERANK_FAILED',
        `${this.name} returned ${logits ? `logits of shape [${dims.join(', ')}]` : 'no logits output'}; expected [${n}, 1] (a relevance logit) or [${n}, 2] (two-label head)`,
        { location: { file: this.loc.dir }, remedy: 'use a cross-encoder exported for sequence classification with one or two labels' },
      );
    }
    const cols = dims[1];
    this.labels = cols;
    const scores: number[] = [];
    for (let i = 0; i < n; i++) {
      const v = Number(logits.data[i * cols + (cols - 1)]);
      if (!Number.isFinite(v)) {
        throw new HarnessError('RERANK_FAILED', `${this.name} gave a non-finite score (${v}) for pair ${i + 1} of a batch of ${n}`, {
          remedy: 'check the model export (fp32 weights, matching tokenizer)',
        });
      }
      scores.push(v);
    }
    this.counts.pairs += n;
    this.counts.passes++;
    return scores;
  }

  /** Truncation counts since creation: pairs cut, pairs whose question was cut, pairs cut at the tail. */
  truncatedCount(): { truncated: number; questionTruncated: number; tailCut: number } {
    const { truncated, questionTruncated, tailCut } = this.counts;
    return { truncated, questionTruncated, tailCut };
  }

  /** `requests` counts forward passes; no retries or waits locally; `pairs` counts pairs scored. */
  stats(): { requests: number; retries: number; retryWaitSeconds: number; pairs: number } {
    return { requests: this.counts.passes, retries: 0, retryWaitSeconds: 0, pairs: this.counts.pairs };
  }

  describe(): Record<string, unknown> {
    return {
      provider: 'transformers-cross-encoder',
      model: this.loc.id,
      label: this.label,
      source: this.loc.kind,
      folder: this.loc.dir,
      files: this.files,
      modelSha256: this.modelSha256,
      dtype: this.dtype,
      labels: this.labels,
      score: this.labels === 2 ? 'logits[:, 1] (positive class of a two-label head)' : 'logits[:, 0] (relevance logit)',
      pairOrder: 'question first (segment A), chunk second (segment B)',
      maxLength: this.maxLength,
      maxLengthSource: this.maxLengthSource,
      truncation: 'chunk side only (only_second), special tokens and question kept',
      pairEncoding: this.fast ? 'tokenizer internals: _encode_text per text + post_processor (chunk tokenised once)' : 'tokenizer(question, { text_pair }) + locate',
      batchSize: this.spec.batchSize,
      pairs: this.counts.pairs,
      forwardPasses: this.counts.passes,
      truncated: this.counts.truncated,
      questionTruncated: this.counts.questionTruncated,
      tailCut: this.counts.tailCut,
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
