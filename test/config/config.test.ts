import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkModelsForDenseModes, loadConfigFile, parseConfig } from '../../src/config/schema.js';
import { expandGrid, expandChunkings, configId } from '../../src/config/expand.js';
import { HarnessError, isHarnessError } from '../../src/errors.js';

const base = {
  name: 'demo',
  dataset: { path: 'data' },
  chunking: { sizes: ['none', 128, 256], overlap: 16 },
  topK: [1, 3, 5, 10],
  modes: ['keyword', 'semantic', 'hybrid'],
  embeddings: ['use-lite', 'glove-100d'],
  hybrid: { rrfK: 60, depth: 50 },
  primaryMetric: 'ndcg@10',
};

/** Runs parseConfig and returns the HarnessError it throws (fails the test when it does not throw). */
function configError(input: unknown): HarnessError {
  try {
    parseConfig(input);
  } catch (e) {
    if (e instanceof HarnessError) return e;
    throw e;
  }
  throw new Error('parseConfig accepted an invalid config');
}

describe('config schema', () => {
  it('fills defaults and resolves the primary metric', () => {
    const c = parseConfig({ dataset: { path: 'x' }, modes: ['keyword'] });
    expect(c.name).toBe('sweep');
    expect(c.topK).toEqual([1, 3, 5, 10]);
    expect(c.hybrid).toEqual({ rrfK: 60, depth: 50, fusion: [{ method: 'rrf', k: 60 }] });
    expect(c.bm25).toEqual({ k1: 1.2, b: 0.75 });
    expect(c.chunking).toEqual({ sizes: ['none'], overlaps: [0] });
    expect(c.primary).toEqual({ family: 'ndcg', k: 10 });
    expect(c.datasetPath).toBe(path.resolve('x'));
  });

  it('rejects overlap >= chunk size, naming both values (field case C01)', () => {
    const e = configError({ ...base, chunking: { sizes: [4, 8], overlap: 4 } });
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('chunking.overlap (4) must be smaller than chunking.sizes entry (4)');
    expect(e.message).not.toContain('entry (8)');
  });

  it('rejects size 0 and negative overlap (field case C01)', () => {
    const e = configError({ ...base, chunking: { sizes: [0], overlap: -1 } });
    expect(e.message).toContain('chunking.sizes.0');
    expect(e.message).toContain('chunking.overlap');
  });

  it('rejects k <= 0 with the key path and the value', () => {
    const e = configError({ ...base, topK: [0, 5] });
    expect(e.message).toContain('topK.0: must be at least 1 (got 0)');
  });

  it('rejects an unknown embedding model with the allowed names', () => {
    const e = configError({ ...base, embeddings: ['use-lite', 'bert-huge'] });
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toContain('embeddings.1');
    expect(e.message).toContain('bert-huge');
  });

  it('rejects a primary metric whose k is not swept', () => {
    const e = configError({ ...base, primaryMetric: 'ndcg@20' });
    expect(e.message).toContain('primaryMetric (ndcg@20) has k = 20, which is not in topK [1, 3, 5, 10]');
  });

  it('rejects an unknown measure name', () => {
    const e = configError({ ...base, primaryMetric: 'ndgc@10' });
    expect(e.message).toContain('primaryMetric');
  });

  it('rejects unknown keys and lists the known ones', () => {
    const e = configError({ ...base, topk: [1] });
    expect(e.message).toContain('topk: unknown key (got [1]); did you mean topK? known keys: name, dataset, chunking');
  });

  it('needs an embedding model for semantic and hybrid modes (checked when the sweep starts: providers may come as objects)', () => {
    const c = parseConfig({ ...base, embeddings: [] });
    let e: unknown;
    try {
      checkModelsForDenseModes(c);
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
    expect((e as Error).message).toContain('modes semantic, hybrid need at least one embedding model');
  });

  it('needs hybrid.depth >= the largest k', () => {
    const e = configError({ ...base, hybrid: { rrfK: 60, depth: 5 } });
    expect(e.message).toContain('hybrid.depth (5) must be at least the largest topK (10)');
  });

  it('rejects "." and ".." as a name (they would name results/ itself or its parent)', () => {
    expect(configError({ ...base, name: '..' }).message).toContain('name: must not be "." or ".."');
    expect(configError({ ...base, name: '.' }).message).toContain('name: must not be "." or ".."');
  });

  it('rejects an overlap listed twice (two identical configuration ids)', () => {
    expect(configError({ ...base, chunking: { sizes: [8], overlap: [0, 0] } }).message).toContain('chunking.overlap lists 0 twice');
  });

  it('a config path that is a folder is CONFIG_NOT_FOUND, not a crash', () => {
    expect(() => loadConfigFile(tmpdir())).toThrowError(expect.objectContaining({ code: 'CONFIG_NOT_FOUND' }) as Error);
  });

  it('reports every problem at once', () => {
    const e = configError({ ...base, topK: [0], chunking: { sizes: [4], overlap: 9 } });
    expect(e.message).toContain('topK.0');
    expect(e.message.split('\n  - ').length).toBeGreaterThanOrEqual(2);
  });

  it('names the config file and the YAML line of a syntax error', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-config-'));
    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'name: x\ntopK: [1, 3\nmodes: [keyword]\n');
    try {
      loadConfigFile(file);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(HarnessError);
      const h = e as HarnessError;
      expect(h.code).toBe('CONFIG_INVALID');
      expect(h.location.file).toBe(file);
      expect(h.location.line).toBeGreaterThanOrEqual(2);
    }
  });

  it('resolves dataset.path against the config file folder', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'rs-config-'));
    const file = path.join(dir, 'ok.yaml');
    writeFileSync(file, 'dataset: { path: ../data }\nmodes: [keyword]\n');
    expect(loadConfigFile(file).datasetPath).toBe(path.resolve(dir, '../data'));
  });

  it('a missing config file is CONFIG_NOT_FOUND', () => {
    expect(() => loadConfigFile('/nonexistent/x.yaml')).toThrowError(
      expect.objectContaining({ code: 'CONFIG_NOT_FOUND' }) as Error,
    );
  });
});

describe('grid expansion', () => {
  it('expands chunking x mode x model x k in config order with readable ids', () => {
    const c = parseConfig(base);
    const grid = expandGrid(c);
    // 3 chunkings x (1 keyword + 2 semantic + 2 hybrid) x 4 k = 3 x 5 x 4 = 60 rows
    expect(grid.length).toBe(3 * 5 * 4);
    expect(grid.slice(0, 5).map((g) => g.id)).toEqual([
      'none.keyword.k1',
      'none.keyword.k3',
      'none.keyword.k5',
      'none.keyword.k10',
      'none.semantic.use-lite.k1',
    ]);
    expect(grid.at(-1)!.id).toBe('cs256-ov16.hybrid.glove-100d.k10');
    expect(new Set(grid.map((g) => g.id)).size).toBe(grid.length);
    expect(grid.filter((g) => g.mode === 'keyword').every((g) => g.embedding === null)).toBe(true);
    expect(expandGrid(c)).toEqual(grid);
  });

  it('sweeps a list of overlaps per numeric size, and none once', () => {
    const c = parseConfig({ ...base, chunking: { sizes: ['none', 64], overlap: [0, 8] } });
    expect(expandChunkings(c)).toEqual([
      { size: null, overlap: 0 },
      { size: 64, overlap: 0 },
      { size: 64, overlap: 8 },
    ]);
  });

  it('builds ids from chunking, mode, model label and k', () => {
    expect(configId('cs256-ov32', 'hybrid', 'use-lite', 5)).toBe('cs256-ov32.hybrid.use-lite.k5');
    expect(configId('none', 'keyword', null, 10)).toBe('none.keyword.k10');
  });
});
