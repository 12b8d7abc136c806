import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildTinyCrossEncoder,
  TINY_CE_BIAS,
  TINY_CE_TYPE_FACTOR,
  TINY_VOCAB,
  tinyCrossLogit,
  tinyCrossTokenWeight,
} from '../../scripts/build-tiny-model.js';
import { createReranker } from '../../src/rerank/registry.js';
import { resolveRerankSpec } from '../../src/rerank/spec.js';
import type { TransformersReranker } from '../../src/rerank/transformers.js';
import type { Reranker } from '../../src/rerank/types.js';
import { rejection } from '../helpers/errors.js';

let root: string;
let modelDir: string;
let twoLabelDir: string;
let threeColDir: string;
let cacheDir: string;
const open: Reranker[] = [];

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-tiny-ce-'));
  modelDir = (await buildTinyCrossEncoder(path.join(root, 'tiny-ce'))).dir;
  twoLabelDir = (await buildTinyCrossEncoder(path.join(root, 'tiny-ce-2'), { outputColumns: 2 })).dir;
  threeColDir = (await buildTinyCrossEncoder(path.join(root, 'tiny-ce-3'), { outputColumns: 3 })).dir;
  cacheDir = path.join(root, 'cache');
});
afterAll(async () => {
  await Promise.all(open.map((r) => r.close()));
  rmSync(root, { recursive: true, force: true });
});

async function load(extra: Record<string, unknown> = {}, dir = modelDir): Promise<TransformersReranker> {
  const spec = resolveRerankSpec({ model: `transformers:${dir}`, depth: 10, ...extra })!;
  const r = await createReranker(spec, { cacheDir });
  open.push(r);
  return r as TransformersReranker;
}

const id = (t: string): number => {
  const i = TINY_VOCAB.indexOf(t);
  if (i < 0) throw new Error(`not in the tiny vocabulary: ${t}`);
  return i;
};
const u = (t: string): number => tinyCrossTokenWeight(id(t));
const [vA, vB] = TINY_CE_TYPE_FACTOR;
/** The tiny logit of `[CLS] q [SEP] c [SEP]` by hand: bias + Σ_A u·v[0] + Σ_B u·v[1]. */
function byHand(q: string[], c: string[]): number {
  const a = ['[CLS]', ...q, '[SEP]'].reduce((s, t) => s + u(t), 0);
  const b = [...c, '[SEP]'].reduce((s, t) => s + u(t), 0);
  return TINY_CE_BIAS + vA * a + vB * b;
}

describe('transformers cross-encoder on the tiny offline model', () => {
  it('shape: one finite score per text, equal to the relevance logit worked out by hand', async () => {
    const r = await load();
    const scores = await r.score('how do i', ['reset the router', 'a b', 'hello world']);
    expect(scores).toHaveLength(3);
    expect(scores[0]).toBeCloseTo(byHand(['how', 'do', 'i'], ['reset', 'the', 'router']), 5);
    expect(scores[1]).toBeCloseTo(byHand(['how', 'do', 'i'], ['a', 'b']), 5);
    expect(scores[2]).toBeCloseTo(byHand(['how', 'do', 'i'], ['hello', 'world']), 5);
    expect(await r.score('how do i', [])).toEqual([]);
  });

  it('shape: a two-label head scores with the positive-class column (logits[:, 1]), not column 0', async () => {
    const r = await load({}, twoLabelDir);
    const [s] = await r.score('how do i', ['reset the router']);
    const positive = byHand(['how', 'do', 'i'], ['reset', 'the', 'router']);
    expect(s).toBeCloseTo(positive, 5);
    expect(Math.abs(s - (0.25 - positive))).toBeGreaterThan(0.1); // column 0 would be 0.25 − s
    expect(r.describe().labels).toBe(2);
  });

  it('shape: logits of [n, 3] are refused at load with RERANK_FAILED', async () => {
    const spec = resolveRerankSpec({ model: `transformers:${threeColDir}`, depth: 5 })!;
    const e = await rejection(createReranker(spec, { cacheDir }));
    expect(e.code).toBe('RERANK_FAILED');
    expect(e.message).toContain('[1, 3]');
  });

  it('pair order: the question is segment A (type 0) and comes first; swapping question and chunk changes the score', async () => {
    const r = await load();
    const enc = r.encode('how do i', 'reset the router');
    expect(enc.ids).toEqual(['[CLS]', 'how', 'do', 'i', '[SEP]', 'reset', 'the', 'router', '[SEP]'].map(id));
    expect(enc.types).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1]);
    const [qc] = await r.score('how do i', ['reset the router']);
    const [cq] = await r.score('reset the router', ['how do i']);
    expect(qc).toBeCloseTo(byHand(['how', 'do', 'i'], ['reset', 'the', 'router']), 5);
    expect(cq).toBeCloseTo(byHand(['reset', 'the', 'router'], ['how', 'do', 'i']), 5);
    // (vA − vB)·(Σu(q) − Σu(c)) apart: not equal unless the two token sums are.
    expect(Math.abs(qc - cq)).toBeGreaterThan(1e-3);
  });

  it('truncation cuts the chunk side only: every question token and both [SEP] kept (only_second), counted', async () => {
    const r = await load({ maxLength: 12 });
    expect(r.maxLength).toBe(12);
    const q = 'how do i reset the router'; // 6 tokens
    const c = 'a b c d e a b c d e'; // 10 tokens → 19 in all, 12 allowed: 12 − 3 specials − 6 = 3 chunk tokens kept
    const enc = r.encode(q, c);
    expect(enc.ids).toEqual(['[CLS]', 'how', 'do', 'i', 'reset', 'the', 'router', '[SEP]', 'a', 'b', 'c', '[SEP]'].map(id));
    expect(enc.types).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
    expect(enc.truncated).toBe(true);
    expect(enc.questionTruncated).toBe(false);
    const [s] = await r.score(q, [c]);
    expect(s).toBeCloseTo(byHand(['how', 'do', 'i', 'reset', 'the', 'router'], ['a', 'b', 'c']), 5);
    expect(r.truncatedCount()).toEqual({ truncated: 1, questionTruncated: 0, tailCut: 0 });
  });

  it('truncation: a question that leaves no room is cut from its end, keeping one chunk token (Hugging Face would throw)', async () => {
    const r = await load({ maxLength: 8 });
    const enc = r.encode('how do i reset the router', 'a b'); // 3 specials + 6 + 2 = 11 > 8: keep 8 − 3 − 1 = 4 question tokens
    expect(enc.ids).toEqual(['[CLS]', 'how', 'do', 'i', 'reset', '[SEP]', 'a', '[SEP]'].map(id));
    expect(enc.types).toEqual([0, 0, 0, 0, 0, 0, 1, 1]);
    expect(enc.questionTruncated).toBe(true);
  });

  it('maxLength is capped by the model (max_position_embeddings 64 of the tiny model)', async () => {
    const r = await load({ maxLength: 512 });
    expect(r.maxLength).toBe(64);
    expect(r.describe().maxLengthSource).not.toBe('spec.maxLength');
  });

  it('padding does not change a score: a pair alone equals the same pair next to a longer one (non-zero [PAD] weight)', async () => {
    const r = await load();
    const [alone] = await r.score('how do i', ['a b']);
    const [inBatch, long] = await r.score('how do i', ['a b', 'reset the router a b c d e hello world']);
    expect(inBatch).toBeCloseTo(alone, 6); // float32 rounding of the padded sum at most; a mask bug is ≥ 1e-2 off
    expect(long).toBeCloseTo(byHand(['how', 'do', 'i'], ['reset', 'the', 'router', 'a', 'b', 'c', 'd', 'e', 'hello', 'world']), 5);
    // "a b" is padded from 7 to 15 tokens; if the mask were ignored, 8 × u([PAD]) · vA would be added.
    expect(Math.abs(8 * tinyCrossTokenWeight(id('[PAD]')) * vA)).toBeGreaterThan(1e-2);
    expect(alone).toBeCloseTo(byHand(['how', 'do', 'i'], ['a', 'b']), 5);
  });

  it('batching: batchSize 2 over 5 texts gives the same scores in 3 forward passes', async () => {
    const texts = ['a', 'b c', 'reset the router', 'hello', 'd e'];
    const big = await load();
    const small = await load({ batchSize: 2 });
    const s1 = await big.score('how do i', texts);
    const s2 = await small.score('how do i', texts);
    // Equal up to float32 rounding: onnxruntime's vectorised sums depend on the padded length of the batch.
    s2.forEach((x, i) => expect(x).toBeCloseTo(s1[i], 6));
    expect(small.stats()).toEqual({ requests: 3, retries: 0, retryWaitSeconds: 0, pairs: 5 });
  });

  it('cacheKey names the model files: a copied folder shares it, dtype, maxLength or other weights change it', async () => {
    const copy = path.join(root, 'copy', 'tiny-ce');
    cpSync(modelDir, copy, { recursive: true });
    const a = await load();
    const b = await load({}, copy);
    const q8 = await load({ dtype: 'q8' });
    const short = await load({ maxLength: 12 });
    const other = await load({}, twoLabelDir);
    expect(b.cacheKey()).toBe(a.cacheKey());
    expect(q8.cacheKey()).not.toBe(a.cacheKey());
    expect(short.cacheKey()).not.toBe(a.cacheKey());
    expect(other.cacheKey()).not.toBe(a.cacheKey());
    expect(a.describe()).toMatchObject({ provider: 'transformers-cross-encoder', source: 'folder', dtype: 'fp32' });
  });

  it('score after close() is RERANK_FAILED; close is idempotent', async () => {
    const r = await load();
    await r.close();
    await r.close();
    expect((await rejection(r.score('a', ['b']))).code).toBe('RERANK_FAILED');
  });
});

describe('createReranker errors', () => {
  it('a local folder missing files is MODEL_NOT_FOUND listing every missing file at once', async () => {
    const dir = path.join(root, 'partial');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'config.json'), '{}');
    const e = await rejection(createReranker(resolveRerankSpec({ model: `transformers:${dir}`, depth: 5 })!, { cacheDir }));
    expect(e.code).toBe('MODEL_NOT_FOUND');
    expect(e.message).toContain(`missing in ${dir}: tokenizer.json, tokenizer_config.json, onnx/model.onnx`);
    expect(e.location.file).toBe(path.join(dir, 'tokenizer.json'));
  });

  it('a hub id not in <cacheDir>/models with allowRemote false is MODEL_NOT_FOUND naming the folder, nothing fetched', async () => {
    const e = await rejection(createReranker(resolveRerankSpec({ model: 'transformers:cross-encoder/not-here', depth: 5 })!, { cacheDir }));
    expect(e.code).toBe('MODEL_NOT_FOUND');
    expect(e.location.file).toBe(path.join(cacheDir, 'models', 'cross-encoder', 'not-here'));
  });

  it('a hub id found in <cacheDir>/models/<owner>/<name> loads offline (source hub)', async () => {
    cpSync(modelDir, path.join(cacheDir, 'models', 'cross-encoder', 'tiny-ce'), { recursive: true });
    const r = await createReranker(resolveRerankSpec({ model: 'transformers:cross-encoder/tiny-ce', depth: 5 })!, { cacheDir });
    open.push(r);
    expect(r.describe()).toMatchObject({ source: 'hub', model: 'cross-encoder/tiny-ce' });
    expect((await r.score('how do i', ['a b']))[0]).toBeCloseTo(byHand(['how', 'do', 'i'], ['a', 'b']), 5);
  });

  it('rerank: models are RERANK_FAILED until the server client is wired in', async () => {
    const spec = resolveRerankSpec({ model: 'rerank:bge-reranker-base', depth: 5, baseUrl: 'http://127.0.0.1:8081', protocol: 'tei' })!;
    expect((await rejection(createReranker(spec, { cacheDir }))).code).toBe('RERANK_FAILED');
  });
});
