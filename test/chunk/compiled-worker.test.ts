/**
 * The bin runs compiled JavaScript, where parallel.ts must start `worker.js` (not `worker.ts` under tsx), and bm25.ts
 * `bm25-worker.js`, glove.ts `glove-worker.js`. This test transpiles the chunker's (and the BM25 build's) modules to a temporary folder with TypeScript's `transpileModule` (what `npm run build` emits, minus the
 * type check), links node_modules there, and runs chunkDocumentsParallel from the compiled files in a plain Node
 * child process (no tsx), comparing with chunkDocuments here.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { chunkDocuments } from '../../src/chunk/chunker.js';
import { buildKeywordIndex } from '../../src/retrieve/bm25.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'chunk-compiled-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Transpiles `files` (paths relative to src/) into `to`, keeping the layout. */
function transpile(files: string[], to: string): void {
  for (const rel of files) {
    const src = path.join(repoRoot, 'src', rel);
    const out = ts.transpileModule(readFileSync(src, 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
      fileName: src,
    });
    const dest = path.join(to, rel.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(dest), { recursive: true });
    writeFileSync(dest, out.outputText);
  }
}

describe('compiled JavaScript: the worker is worker.js', () => {
  it('chunkDocumentsParallel from transpiled dist files in plain node gives chunkDocuments’ chunks', () => {
    // The chunker's own modules and what they import (types.ts is type-only).
    const files = ['errors.ts', 'types.ts', 'worker-start.ts', 'batches.ts', 'load/text-store.ts', 'store/temp.ts', 'store/positioned-io.ts', ...readdirSync(path.join(repoRoot, 'src/chunk')).map((f) => `chunk/${f}`)];
    transpile(files, path.join(tmp, 'dist'));
    writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(path.join(repoRoot, 'node_modules'), path.join(tmp, 'node_modules'));
    const docs = Array.from({ length: 12 }, (_, i) => ({
      id: `d${i}`,
      text: `Document ${i}. ${'The quick brown fox jumps over the lazy dog. Dr. Who visited www.testing.org today! '.repeat(20 + i)}`,
    }));
    const spec = { size: 64, overlap: 16 };
    const script = `
      import { chunkDocumentsParallel } from ${JSON.stringify(path.join(tmp, 'dist/chunk/parallel.js'))};
      const docs = JSON.parse(process.argv[1]);
      const chunks = await chunkDocumentsParallel(docs, ${JSON.stringify(spec)}, { threads: 2, batchChars: 5000, inProcessChars: 0 });
      process.stdout.write(JSON.stringify(chunks));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(docs)], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(JSON.parse(out)).toEqual(chunkDocuments(docs, spec));
  });

  it('buildKeywordIndexParallel from transpiled dist files in plain node ranks as buildKeywordIndex here', () => {
    const files = ['errors.ts', 'types.ts', 'worker-start.ts', 'batches.ts', 'id-index.ts', 'load/text-store.ts', 'store/temp.ts', 'store/positioned-io.ts', ...['bm25.ts', 'bm25-analyse.ts', 'bm25-spill.ts', 'bm25-postings-file.ts', 'bm25-worker.ts', 'tokenize.ts', 'porter2.ts', 'rank.ts'].map((f) => `retrieve/${f}`)];
    transpile(files, path.join(tmp, 'dist'));
    const texts = Array.from({ length: 300 }, (_, i) => `Pump LMP-${200 + (i % 7)} seal kit ${i % 13} valve bearing hours ${'replace '.repeat(i % 5)}`);
    const chunks = texts.map((text, i) => ({ id: `c${i}`, docId: `c${i}`, ordinal: 0, text, start: 0, end: text.length, tokens: 0 }));
    const queries = ['LMP-204 seal', 'replace valve', 'kit 7', 'bearing hours pump'];
    const script = `
      import { buildKeywordIndexParallel } from ${JSON.stringify(path.join(tmp, 'dist/retrieve/bm25.js'))};
      const chunks = JSON.parse(process.argv[1]);
      const index = await buildKeywordIndexParallel(chunks, {}, { threads: 2, batchChars: 500, inProcessChars: 0 });
      process.stdout.write(JSON.stringify(${JSON.stringify(queries)}.map((q) => index.search(q, 20))));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(chunks)], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const here = buildKeywordIndex(chunks);
    const expected = queries.map((q) => here.search(q, 20));
    expect(expected.every((l) => l.length > 0)).toBe(true);
    expect(JSON.parse(out)).toEqual(expected);
  });

  it('glove-100d from transpiled dist files in plain node: its worker is glove-worker.js, vectors as here', async () => {
    const files = ['errors.ts', 'worker-start.ts', 'config/issues.ts', 'store/temp.ts', 'net/http.ts', ...['glove.ts', 'glove-worker.ts', 'packages.ts', 'provider.ts', 'spec.ts'].map((f) => `embed/${f}`)];
    transpile(files, path.join(tmp, 'dist'));
    const cacheDir = path.join(repoRoot, '.cache', 'test-embed');
    // 40 texts of about 300 characters: 12,000 characters in one call, above GLOVE_WORKER_CHARS, so it runs on a worker.
    const texts = Array.from({ length: 40 }, (_, i) => `Refund my money ${i}. The pump seal kit failed after ${i * 3} hours; ${'replace the bearing and valve '.repeat(9)}`);
    const script = `
      import { GloveProvider } from ${JSON.stringify(path.join(tmp, 'dist/embed/glove.js'))};
      import { resolveEmbeddingSpec } from ${JSON.stringify(path.join(tmp, 'dist/embed/spec.js'))};
      const p = await GloveProvider.create(resolveEmbeddingSpec({ model: 'glove-100d', workers: 2 }), ${JSON.stringify(cacheDir)});
      const vs = await p.embedBatch(JSON.parse(process.argv[1]), 'document');
      const onWorkers = p.describe().textsOnWorkers;
      await p.close();
      process.stdout.write(JSON.stringify({ onWorkers, vectors: vs.map((v) => Array.from(v)) }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(texts)], {
      encoding: 'utf8',
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const { GloveProvider } = await import('../../src/embed/glove.js');
    const { resolveEmbeddingSpec } = await import('../../src/embed/spec.js');
    const here = await GloveProvider.create(resolveEmbeddingSpec({ model: 'glove-100d', workers: 1 }), cacheDir);
    const expected = (await here.embedBatch(texts, 'document')).map((v) => Array.from(v));
    await here.close();
    const got = JSON.parse(out) as { onWorkers: number; vectors: number[][] };
    expect(got.onWorkers).toBe(40);
    expect(got.vectors).toEqual(expected);
  }, 300_000);
});
