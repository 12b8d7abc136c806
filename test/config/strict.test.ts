/** Unknown keys at every depth of a config, YAML alias bombs, and the dataset options added with them. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfig } from '../../src/config/schema.js';
import { knownKeysAt, nearestKey } from '../../src/config/issues.js';
import { configSchema } from '../../src/config/schema.js';
import { thrown } from '../helpers/errors.js';

const base = { name: 'demo', dataset: { path: 'data' }, modes: ['keyword'] };

function problems(input: unknown): string[] {
  const e = thrown(() => parseConfig(input));
  expect(e.code).toBe('CONFIG_INVALID');
  return e.message.split('\n').slice(1).map((l) => l.replace(/^ {2}- /, ''));
}

describe('unknown config keys at every depth', () => {
  it('chunking.size is an error suggesting chunking.sizes', () => {
    expect(problems({ ...base, chunking: { size: [128] } })).toEqual([
      'chunking.size: unknown key (got [128]); did you mean chunking.sizes? known keys of chunking: sizes, overlap',
    ]);
  });

  it('bm25.k3 is an error', () => {
    const [p] = problems({ ...base, bm25: { k3: 7 } });
    expect(p).toMatch(/^bm25\.k3: unknown key \(got 7\)/);
    expect(p).toContain('known keys of bm25: k1, b');
  });

  it('dataset.lables suggests labels', () => {
    const [p] = problems({ ...base, dataset: { path: 'data', lables: 'keep' } });
    expect(p).toContain('dataset.lables: unknown key (got "keep"); did you mean dataset.labels?');
  });

  it('statistics.resample suggests resamples', () => {
    const [p] = problems({ ...base, statistics: { resample: 50 } });
    expect(p).toContain('statistics.resample: unknown key (got 50); did you mean statistics.resamples?');
  });

  it('hybrid.rrfk suggests rrfK (case is ignored when looking for the nearest key)', () => {
    expect(problems({ ...base, hybrid: { rrfk: 10 } })[0]).toContain('did you mean hybrid.rrfK?');
  });

  it("unknown key inside an embedding object lists that object's keys", () => {
    const [p] = problems({ ...base, embeddings: ['use-lite', { model: 'glove-100d', batchsize: 8 }] });
    expect(p).toContain('embeddings.1.batchsize: unknown key (got 8); did you mean embeddings.1.batchSize?');
    expect(p).toContain('known keys of embeddings.1: model, label, dtype, pooling');
    expect(p).not.toContain('primaryMetric');
  });

  it('every unknown key gets its own line; a key far from every known one gets no suggestion', () => {
    const ps = problems({ ...base, chunking: { sizes: [64], zzzzzz: 1, overlapp: 2 } });
    expect(ps).toHaveLength(2);
    expect(ps[0]).toBe('chunking.zzzzzz: unknown key (got 1); known keys of chunking: sizes, overlap');
    expect(ps[1]).toContain('did you mean chunking.overlap?');
  });

  it('the known keys come from the schema, so a key added to it is known without other code', () => {
    expect(knownKeysAt(configSchema, ['dataset'], {})).toEqual(['path', 'split', 'labels', 'strictness', 'sample']);
    expect(knownKeysAt(configSchema, [], {})).toEqual(Object.keys(configSchema.shape));
    expect(nearestKey('size', ['sizes', 'overlap'])).toBe('sizes');
    expect(nearestKey('q', ['k1', 'b'])).toBeUndefined();
  });
});

describe('unknown keys inside union members and arrays of objects (issue 24 §5)', () => {
  it('a fusion entry: weigth suggests weights, with the rrf entry\'s keys', () => {
    expect(problems({ ...base, hybrid: { fusion: [{ method: 'rrf', weigth: 0.5 }] } })).toEqual([
      'hybrid.fusion.0.weigth: unknown key (got 0.5); did you mean hybrid.fusion.0.weights? known keys of hybrid.fusion.0: method, k, weights',
    ]);
  });

  it('a convex entry given an rrf key is told the convex keys (the member its method names), one problem only', () => {
    expect(problems({ ...base, hybrid: { fusion: ['rrf', { method: 'convex', weights: 0.5 }] } })).toEqual([
      'hybrid.fusion.1.weights: unknown key (got 0.5); known keys of hybrid.fusion.1: method, alpha, normalize',
    ]);
  });

  it('a rerank entry (union of none and an object): the key is named, not "Invalid input"', () => {
    const ps = problems({ ...base, rerank: [{ model: 'transformers:x', dept: 5 }] });
    expect(ps).toEqual([
      'rerank.0.depth: must be number or array (got nothing)',
      expect.stringMatching(/^rerank\.0\.dept: unknown key \(got 5\); did you mean rerank\.0\.depth\? known keys of rerank\.0: model, depth, label,/),
    ]);
    expect(ps.join('\n')).not.toContain('Invalid input');
  });

  it('a semantic entry: the keys of the member its engine names (lancedb), with the nearest', () => {
    expect(problems({ ...base, semantic: [{ engine: 'lancedb', nprobe: 4 }] })).toEqual([
      'semantic.0.nprobe: unknown key (got 4); did you mean semantic.0.nprobes? known keys of semantic.0: engine, index, partitions, subVectors, nprobes, refineFactor',
    ]);
  });

  it('a misspelt discriminator is named with the nearest key, beside the discriminator message', () => {
    const ps = problems({ ...base, keyword: [{ engin: 'bm25' }] });
    expect(ps[0]).toBe('keyword.0.engin: unknown key (got "bm25"); did you mean keyword.0.engine?');
    expect(ps[1]).toMatch(/^keyword\.0\.engine: /);
  });

  it('a chunk size: the number member\'s message for 0, what would fit for a string', () => {
    expect(problems({ ...base, chunking: { sizes: [0] } })).toEqual(['chunking.sizes.0: must be at least 1 token (got 0)']);
    expect(problems({ ...base, chunking: { sizes: ['abc'] } })).toEqual(['chunking.sizes.0: must be "none" or number (got "abc")']);
  });

  it('knownKeysAt prefers the member whose literal the value matches', () => {
    expect(knownKeysAt(configSchema, ['semantic', 0], { engine: 'lancedb', x: 1 })).toContain('nprobes');
    expect(knownKeysAt(configSchema, ['semantic', 0], { engine: 'memory', x: 1 })).toEqual(['engine']);
  });
});

describe('dataset options', () => {
  it('dataset.strictness defaults to strict and accepts warn', () => {
    expect(parseConfig(base).dataset.strictness).toBe('strict');
    expect(parseConfig({ ...base, dataset: { path: 'd', strictness: 'warn' } }).dataset.strictness).toBe('warn');
    expect(problems({ ...base, dataset: { path: 'd', strictness: 'lenient' } })[0]).toMatch(/^dataset\.strictness: /);
  });

  it('relevanceThreshold above the largest grade (100) is an error', () => {
    expect(problems({ ...base, relevanceThreshold: 101 })[0]).toContain('relevanceThreshold: must be at most 100');
  });

  it('primaryMetric written as an ir_measures alias is stored canonical', () => {
    const c = parseConfig({ ...base, primaryMetric: 'nDCG@10' });
    expect(c.primaryMetric).toBe('ndcg@10');
    expect(c.primary).toEqual({ family: 'ndcg', k: 10 });
  });
});

describe('YAML', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'rs-yaml-'));

  it('YAML alias bomb is CONFIG_INVALID', () => {
    const file = path.join(dir, 'bomb.yaml');
    const rows = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (const [prev, cur] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e'], ['e', 'f']]) {
      rows.push(`${cur}: &${cur} [${Array(9).fill(`*${prev}`).join(', ')}]`);
    }
    writeFileSync(file, `${rows.join('\n')}\n`);
    const e = thrown(() => loadConfigFile(file));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.location.file).toBe(file);
    expect(e.remedy).toContain('at most 100 aliases');
  });

  it('an alias before its anchor is CONFIG_INVALID, not an internal error', () => {
    const file = path.join(dir, 'alias.yaml');
    writeFileSync(file, 'name: *x\n');
    expect(thrown(() => loadConfigFile(file)).code).toBe('CONFIG_INVALID');
  });

  it('a few aliases are fine', () => {
    const file = path.join(dir, 'ok.yaml');
    writeFileSync(file, 'dataset: { path: data }\nmodes: [keyword]\ntopK: &k [1, 10]\nevidenceBudgets: *k\n');
    expect(loadConfigFile(file).evidenceBudgets).toEqual([1, 10]);
  });
});
