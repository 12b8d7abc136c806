import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import {
  applyPrefix,
  BGE_QUERY_INSTRUCTION,
  defaultLabel,
  embeddingSpecSchema,
  isKnownEmbeddingModel,
  modelInput,
  presetFor,
  resolveEmbeddingSpec,
} from '../../src/embed/spec.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const casesFile = path.resolve(repoRoot, '../shared/cases/field-cases.json');

interface E01 {
  id: string;
  input: { question: string; chunk_text: string };
  expected: { model_inputs: Record<string, { query: string; passage: string }> };
}

/** Model ids of field case E01, keyed like its expected.model_inputs. */
const E01_MODELS: Record<string, string> = {
  e5: 'transformers:Xenova/e5-small-v2',
  'bge-en-v1.5': 'transformers:BAAI/bge-small-en-v1.5',
  'nomic-embed-text-v1.5': 'transformers:nomic-ai/nomic-embed-text-v1.5',
  'all-MiniLM-L6-v2': 'transformers:sentence-transformers/all-MiniLM-L6-v2',
};

describe.skipIf(!existsSync(casesFile))('field case E01: the exact model inputs of each preset', () => {
  // Read only when the file exists: vitest still runs a skipped describe's body to collect its tests.
  const cases = existsSync(casesFile) ? (JSON.parse(readFileSync(casesFile, 'utf8')) as E01[]) : [];
  const e01 = cases.find((c) => c.id.startsWith('E01'));

  for (const [family, expected] of Object.entries(e01?.expected.model_inputs ?? {})) {
    it(`${family}: query and passage strings match the model card`, () => {
      const spec = resolveEmbeddingSpec(E01_MODELS[family]);
      expect(modelInput(spec, "query", e01!.input.question)).toBe(expected.query);
      expect(modelInput(spec, "document", e01!.input.chunk_text)).toBe(expected.passage);
    });
  }

  it('the prefix is added exactly once: an already-prefixed query is not prefixed again', () => {
    const spec = resolveEmbeddingSpec(E01_MODELS.e5);
    const once = modelInput(spec, "query", e01!.input.question);
    expect(modelInput(spec, 'query', once)).toBe(once);
    expect(once.includes('query: query: ')).toBe(false);
  });
});

describe('presets by model id', () => {
  it('e5 gets query:/passage: and mean pooling, also for a local folder named after it', () => {
    const s = resolveEmbeddingSpec('transformers:./models/multilingual-e5-small/');
    expect([s.queryPrefix, s.documentPrefix, s.pooling]).toEqual(['query: ', 'passage: ', 'mean']);
  });

  it('bge-*-en-v1.5 puts the instruction on queries only and pools the CLS token', () => {
    const s = resolveEmbeddingSpec('transformers:Xenova/bge-base-en-v1.5');
    expect([s.queryPrefix, s.documentPrefix, s.pooling]).toEqual([BGE_QUERY_INSTRUCTION, '', 'cls']);
  });

  it('older bge (no v1.5) and MiniLM get no preset', () => {
    expect(presetFor('transformers:BAAI/bge-small-en')).toBeUndefined();
    expect(presetFor('transformers:Xenova/all-MiniLM-L6-v2')).toBeUndefined();
  });

  it('prefixes written in the config win over the preset, including an explicit empty one', () => {
    const s = resolveEmbeddingSpec({ model: 'transformers:Xenova/e5-small-v2', queryPrefix: '', pooling: 'cls' });
    expect([s.queryPrefix, s.documentPrefix, s.pooling]).toEqual(['', 'passage: ', 'cls']);
  });

  it('presets apply to transformers models only (use-lite keeps empty prefixes)', () => {
    const s = resolveEmbeddingSpec('use-lite');
    expect([s.queryPrefix, s.documentPrefix]).toEqual(['', '']);
  });
});

describe('resolveEmbeddingSpec defaults and errors', () => {
  it('fills every default for a bare name', () => {
    expect(resolveEmbeddingSpec('glove-100d')).toEqual({
      model: 'glove-100d',
      label: 'glove-100d',
      dtype: 'fp32',
      pooling: 'mean',
      normalize: true,
      queryPrefix: '',
      documentPrefix: '',
      allowRemote: false,
      batchSize: 32,
      maxLength: null,
      workers: null,
    });
  });

  it('default label is tf-<last path part>, filename-safe', () => {
    expect(defaultLabel('transformers:Xenova/all-MiniLM-L6-v2')).toBe('tf-all-MiniLM-L6-v2');
    expect(defaultLabel('transformers:/opt/models/my model+v2/')).toBe('tf-my-model-v2');
  });

  it('an unknown model name is EMBEDDING_UNKNOWN naming the value', () => {
    let err: unknown;
    try {
      resolveEmbeddingSpec('Xenova/all-MiniLM-L6-v2');
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'EMBEDDING_UNKNOWN')).toBe(true);
    expect((err as Error).message).toContain('"Xenova/all-MiniLM-L6-v2"');
  });

  it('transformers: with nothing after it is not a model', () => {
    expect(isKnownEmbeddingModel('transformers:')).toBe(false);
    expect(isKnownEmbeddingModel('transformers:  ')).toBe(false);
    expect(isKnownEmbeddingModel('transformers:x')).toBe(true);
  });

  it('a bad field is CONFIG_INVALID with its key path', () => {
    let err: unknown;
    try {
      resolveEmbeddingSpec({ model: 'use-lite', dtype: 'fp16' });
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'CONFIG_INVALID')).toBe(true);
    expect((err as Error).message).toContain('embeddings.dtype');
  });

  it('unknown keys are rejected (a typo does not silently fall back to a default)', () => {
    expect(() => resolveEmbeddingSpec({ model: 'use-lite', queryprefix: 'q: ' })).toThrow();
  });

  it('the zod schema outputs the resolved spec, so a config schema can embed it', () => {
    const out = embeddingSpecSchema.parse({ model: 'transformers:Xenova/e5-small-v2', dtype: 'q8', label: 'e5-q8' });
    expect(out).toMatchObject({ label: 'e5-q8', dtype: 'q8', queryPrefix: 'query: ', batchSize: 32 });
    expect(embeddingSpecSchema.safeParse('bm25').success).toBe(false);
  });
});

describe('applyPrefix', () => {
  it('empty prefix returns the text unchanged', () => {
    expect(applyPrefix('', 'abc')).toBe('abc');
  });
  it('prepends once, without trimming or adding spaces', () => {
    expect(applyPrefix('passage: ', ' x')).toBe('passage:  x');
    expect(applyPrefix('passage: ', 'passage: x')).toBe('passage: x');
  });
});
