import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTinyModel, TINY_DIMS, TINY_MAX_LENGTH, TINY_VOCAB, tinyTokenVector } from '../../scripts/build-tiny-model.js';
import { isHarnessError } from '../../src/errors.js';
import type { EmbeddingProvider } from '../../src/embed/provider.js';
import { createProvider } from '../../src/embed/registry.js';
import { resolveEmbeddingSpec, type EmbeddingSpec } from '../../src/embed/spec.js';
import { locateModel } from '../../src/embed/transformers.js';

let root: string;
let modelDir: string;
let cacheDir: string;
const open: EmbeddingProvider[] = [];

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'rs-tiny-'));
  modelDir = (await buildTinyModel(path.join(root, 'tiny-bert'))).dir;
  cacheDir = path.join(root, 'cache');
});
afterAll(async () => {
  await Promise.all(open.map((p) => p.close()));
  rmSync(root, { recursive: true, force: true });
});

async function load(extra: Partial<Record<keyof EmbeddingSpec, unknown>> = {}, model = `transformers:${modelDir}`): Promise<EmbeddingProvider> {
  const p = await createProvider(resolveEmbeddingSpec({ model, ...extra }), { cacheDir });
  open.push(p);
  return p;
}

const id = (t: string): number => TINY_VOCAB.indexOf(t);

/** Mean of the tiny model's token rows for the given tokens (attention mask 1, type 0), by hand. */
function meanOf(tokens: string[]): number[] {
  const rows = tokens.map((t) => tinyTokenVector(id(t)));
  return rows[0].map((_, j) => rows.reduce((s, r) => s + r[j], 0) / rows.length);
}

function expectClose(actual: Float32Array, expected: number[], digits = 6): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((x, j) => expect(actual[j]).toBeCloseTo(x, digits));
}

const norm = (v: ArrayLike<number>): number => Math.sqrt(Array.from(v).reduce((s, x) => s + x * x, 0));

describe('transformers provider on the tiny offline model', () => {
  it('loads with allowRemote false and returns one vector of d = 8 per text ([n, seq, d] pooled to [n, d])', async () => {
    const p = await load();
    expect(p.dimensions).toBe(TINY_DIMS);
    const vs = await p.embedBatch(['a b', 'c', 'hello world'], 'document');
    expect(vs.map((v) => v.length)).toEqual([8, 8, 8]);
  });

  it('mean pooling averages [CLS] a b [SEP] exactly as worked out by hand (normalize false)', async () => {
    const p = await load({ normalize: false });
    const [v] = await p.embedBatch(['a b'], 'document');
    expectClose(v, meanOf(['[CLS]', 'a', 'b', '[SEP]']));
  });

  it('normalize gives unit length, in the direction of the unnormalised mean', async () => {
    const p = await load();
    const [v] = await p.embedBatch(['a b'], 'document');
    expect(norm(v)).toBeCloseTo(1, 6);
    const m = meanOf(['[CLS]', 'a', 'b', '[SEP]']);
    expectClose(v, m.map((x) => x / norm(m)));
  });

  it('padding does not change a pooled vector: "a b" alone equals "a b" next to a much longer text', async () => {
    const p = await load({ normalize: false });
    const [alone] = await p.embedBatch(['a b'], 'document');
    const [inBatch, long] = await p.embedBatch(['a b', 'a b c d e how do i reset the router'], 'document');
    expect(Array.from(inBatch)).toEqual(Array.from(alone));
    expect(long.length).toBe(8);
    // The padded positions are not zero in this model (W[PAD] + T[0]); a mean over all 12 positions would differ.
    const wrong = meanOf(['[CLS]', 'a', 'b', '[SEP]']).map(
      (x, j) => (4 * x + 8 * tinyTokenVector(id('[PAD]'), 0, 0)[j]) / 12,
    );
    expect(Math.abs(inBatch[0] - wrong[0])).toBeGreaterThan(1e-3);
  });

  it('the prefix reaches the model: query and document differ, and the query equals the prefixed text embedded bare', async () => {
    const withPrefix = await load({ queryPrefix: 'query: ', documentPrefix: 'passage: ', normalize: false });
    const bare = await load({ normalize: false });
    const [q] = await withPrefix.embedBatch(['a b'], 'query');
    const [d] = await withPrefix.embedBatch(['a b'], 'document');
    const [qBare, dBare] = await bare.embedBatch(['query: a b', 'passage: a b'], 'document');
    expect(Array.from(q)).toEqual(Array.from(qBare));
    expect(Array.from(d)).toEqual(Array.from(dBare));
    expect(Array.from(q)).not.toEqual(Array.from(d));
    expectClose(q, meanOf(['[CLS]', 'query', ':', 'a', 'b', '[SEP]']));
    expect(withPrefix.cacheKey('query')).not.toBe(withPrefix.cacheKey('document'));
  });

  it('without prefixes the query and document vectors (and cache keys) are equal', async () => {
    const p = await load();
    const [q] = await p.embedBatch(['a b'], 'query');
    const [d] = await p.embedBatch(['a b'], 'document');
    expect(Array.from(q)).toEqual(Array.from(d));
    expect(p.cacheKey('query')).toBe(p.cacheKey('document'));
  });

  it('an already-prefixed query is not prefixed twice', async () => {
    const p = await load({ queryPrefix: 'query: ', normalize: false });
    const [once] = await p.embedBatch(['query: a b'], 'query');
    expectClose(once, meanOf(['[CLS]', 'query', ':', 'a', 'b', '[SEP]']));
  });

  it('cls pooling takes the first token and differs from mean pooling', async () => {
    const cls = await load({ pooling: 'cls', normalize: false });
    const mean = await load({ pooling: 'mean', normalize: false });
    const [c] = await cls.embedBatch(['a b'], 'document');
    const [m] = await mean.embedBatch(['a b'], 'document');
    expectClose(c, tinyTokenVector(id('[CLS]')));
    expect(Array.from(c)).not.toEqual(Array.from(m));
    expect(cls.cacheKey('document')).not.toBe(mean.cacheKey('document'));
  });

  it('truncation at model_max_length (16) keeps [CLS] and [SEP] and is counted; 16 tokens exactly is not truncated', async () => {
    const p = await load({ normalize: false });
    const fits = Array(TINY_MAX_LENGTH - 2).fill('a').join(' '); // 14 words + 2 specials = 16 tokens
    const tooLong = 'b ' + Array(20).fill('a').join(' '); // 21 words
    await p.embedBatch([fits], 'document');
    expect(p.truncatedCount()).toBe(0);
    const [v] = await p.embedBatch([tooLong], 'document');
    expect(p.truncatedCount()).toBe(1);
    // [CLS] b a×13 [SEP]: the first 14 content tokens and the closing [SEP] (transformers.js alone would drop it)
    expectClose(v, meanOf(['[CLS]', 'b', ...Array(13).fill('a'), '[SEP]']));
  });

  it('maxLength in the spec lowers the limit', async () => {
    const p = await load({ maxLength: 4, normalize: false });
    const [v] = await p.embedBatch(['a b c'], 'document');
    expect(p.truncatedCount()).toBe(1);
    expectClose(v, meanOf(['[CLS]', 'a', 'b', '[SEP]']));
    expect(p.describe()).toMatchObject({ maxLength: 4, maxLengthSource: 'spec.maxLength' });
  });

  it('dtype q8 loads onnx/model_quantized.onnx and gets its own cache key', async () => {
    const fp32 = await load();
    const q8 = await load({ dtype: 'q8' });
    expect(q8.cacheKey('document')).not.toBe(fp32.cacheKey('document'));
    expect(q8.describe()).toMatchObject({ files: expect.arrayContaining(['onnx/model_quantized.onnx']) });
  });

  it('describe names the model hash, pooling, prefixes and backend for the manifest', async () => {
    const p = await load({ queryPrefix: 'query: ' });
    const d = p.describe();
    expect(d).toMatchObject({ provider: 'transformers', dims: 8, pooling: 'mean', queryPrefix: 'query: ', dtype: 'fp32' });
    expect(String(d.modelSha256)).toMatch(/^[0-9a-f]{64}$/);
    expect(String(d.backend)).toContain('onnxruntime-node');
  });
});

describe('finding models offline', () => {
  it('a missing folder with allowRemote false is MODEL_NOT_FOUND naming the folder', async () => {
    const missing = path.join(root, 'no-such-model');
    let err: unknown;
    try {
      await createProvider(resolveEmbeddingSpec(`transformers:${missing}`), { cacheDir });
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'MODEL_NOT_FOUND')).toBe(true);
    expect((err as Error).message).toContain(missing);
  }, 10_000);

  it('a hub id that is not in <cacheDir>/models is MODEL_NOT_FOUND naming that folder (nothing is downloaded)', async () => {
    let err: unknown;
    try {
      await createProvider(resolveEmbeddingSpec('transformers:Xenova/all-MiniLM-L6-v2'), { cacheDir });
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'MODEL_NOT_FOUND')).toBe(true);
    expect((err as Error).message).toContain(path.join(cacheDir, 'models', 'Xenova', 'all-MiniLM-L6-v2'));
  }, 10_000);

  it('a folder without tokenizer.json is MODEL_NOT_FOUND naming the file', async () => {
    const broken = path.join(root, 'broken');
    cpSync(modelDir, broken, { recursive: true });
    rmSync(path.join(broken, 'tokenizer.json'));
    await expect(createProvider(resolveEmbeddingSpec(`transformers:${broken}`), { cacheDir })).rejects.toMatchObject({
      code: 'MODEL_NOT_FOUND',
      message: expect.stringContaining('tokenizer.json'),
    });
  });

  it('a hub id found in <cacheDir>/models loads offline and gets its preset (e5: query:/passage:)', async () => {
    const hubDir = path.join(cacheDir, 'models', 'Xenova', 'e5-small-v2');
    mkdirSync(path.dirname(hubDir), { recursive: true });
    cpSync(modelDir, hubDir, { recursive: true });
    const e5 = await load({ normalize: false }, 'transformers:Xenova/e5-small-v2');
    const [q] = await e5.embedBatch(['a b'], 'query');
    const [d] = await e5.embedBatch(['a b'], 'document');
    expectClose(q, meanOf(['[CLS]', 'query', ':', 'a', 'b', '[SEP]']));
    expectClose(d, meanOf(['[CLS]', 'passage', ':', 'a', 'b', '[SEP]']));
    expect(e5.describe()).toMatchObject({ source: 'hub', folder: hubDir });
  });

  it('locateModel: paths are folders, owner/name is a hub id under <cacheDir>/models', () => {
    expect(locateModel('transformers:/abs/model', '/c')).toEqual({ kind: 'folder', id: '/abs/model', dir: '/abs/model' });
    expect(locateModel('transformers:./m', '/c')).toMatchObject({ kind: 'folder', dir: path.resolve('m') });
    expect(locateModel('transformers:BAAI/bge-small-en-v1.5', '/c')).toEqual({
      kind: 'hub',
      id: 'BAAI/bge-small-en-v1.5',
      dir: path.join('/c', 'models', 'BAAI', 'bge-small-en-v1.5'),
    });
  });
});
