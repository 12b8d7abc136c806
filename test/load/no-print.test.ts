/**
 * Library code never prints (STYLE.md; issue 24's brief): progress and warnings go through `onEvent` and the returned
 * warnings, which the CLI renders. A sweep through every built-in stage that runs offline in a second (loading, chunking,
 * keyword, the tiny transformers model embedding and reranking, hybrid fusion, scoring) and the document reader on a
 * malformed PDF must write nothing to stdout or stderr, directly or through `console`. The PDF is the quirk this pins:
 * pdf.js at its default verbosity printed `Warning: Indexing all PDF objects` to stdout before throwing.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { runSweep } from '../../src/run/sweep.js';
import { loadDocumentFolder } from '../../src/load/documents.js';
import { buildTinyCrossEncoder, buildTinyModel } from '../../scripts/build-tiny-model.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const tiny = path.resolve(here, '../fixtures/sweep/tiny');
const broken = path.resolve(here, '../fixtures/load/broken/docs');

/** Everything written to stdout, stderr or the console while `fn` runs. */
async function printedBy(fn: () => Promise<unknown>): Promise<string[]> {
  const printed: string[] = [];
  const grab = (where: string) => (...a: unknown[]) => {
    printed.push(`${where}: ${a.map(String).join(' ')}`);
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(grab('stdout') as never);
  vi.spyOn(process.stderr, 'write').mockImplementation(grab('stderr') as never);
  for (const m of ['log', 'info', 'warn', 'error', 'debug'] as const) vi.spyOn(console, m).mockImplementation(grab(`console.${m}`) as never);
  try {
    await fn().catch(() => undefined);
  } finally {
    vi.restoreAllMocks();
  }
  return printed;
}

describe('library calls print nothing', () => {
  let modelDir: string;
  let ceDir: string;
  beforeAll(async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rs-noprint-'));
    modelDir = (await buildTinyModel(path.join(root, 'bi'))).dir;
    ceDir = (await buildTinyCrossEncoder(path.join(root, 'ce'))).dir;
  });
  afterEach(() => vi.restoreAllMocks());

  it('reading a malformed PDF (pdf.js warns at its default verbosity) prints nothing; it still fails naming the file', async () => {
    let error: unknown;
    const printed = await printedBy(() => loadDocumentFolder(broken).catch((e) => void (error = e)));
    expect(printed).toEqual([]);
    expect(String(error)).toContain('bad.pdf');
  });

  it('a sweep with keyword, semantic, hybrid and rerank stages prints nothing; its progress arrives as events', async () => {
    const events: string[] = [];
    const config = parseConfig({
      dataset: { path: tiny },
      chunking: { sizes: ['none', 16], overlap: 4 },
      topK: [1, 3],
      modes: ['keyword', 'semantic', 'hybrid'],
      embeddings: [{ model: `transformers:${modelDir}`, label: 'tiny' }],
      primaryMetric: 'ndcg@3',
      cacheDir: path.join(mkdtempSync(path.join(tmpdir(), 'rs-noprint-cache-')), 'c'),
      rerank: ['none', { model: `transformers:${ceDir}`, label: 'ce', depth: [2] }],
    });
    let rows = 0;
    const printed = await printedBy(async () => {
      const { result } = await runSweep(config, { resume: false, onEvent: (e) => void events.push(e.kind) });
      rows = result.configs.filter((c) => c.status === 'ok').length;
    });
    expect(printed).toEqual([]);
    // 2 chunkings × (keyword, semantic, hybrid) × (no rerank, ce at depth 2) × k 1, 3
    expect(rows).toBe(2 * 3 * 2 * 2);
    expect(events.filter((k) => k === 'progress').length).toBeGreaterThan(0);
  });
});
