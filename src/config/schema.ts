/**
 * The sweep configuration: one zod schema is the single source of validation and defaults.
 * `parseConfig` turns what the user wrote (YAML or an object) into a fully resolved {@link SweepConfig}, or throws a
 * `HarnessError('CONFIG_INVALID')` whose message lists every problem as `key.path: problem (got value); allowed ...`.
 *
 * The key names are a contract other tools write to:
 * ```yaml
 * name: scifact
 * dataset: { path: ../shared/datasets/scifact, split: test }
 * chunking: { sizes: [none, 128, 256], overlap: 16 }
 * topK: [1, 3, 5, 10]
 * modes: [keyword, semantic, hybrid]
 * embeddings: [use-lite, glove-100d]
 * hybrid: { rrfK: 60, depth: 50 }
 * primaryMetric: ndcg@10
 * ```
 */
import { readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { HarnessError } from '../errors.js';
import { embeddingSpecSchema, type EmbeddingSpec } from '../embed/spec.js';
import { MEASURE_FAMILIES, parseMeasure } from '../score/measures.js';
import { isHarnessError } from '../errors.js';

const chunkSizeSchema = z.union([
  z.literal('none'),
  z.number().int('must be a whole number of tokens').min(1, 'must be at least 1 token'),
]);

const positiveInt = z.number().int('must be a whole number').min(1, 'must be at least 1');

/** The written form of a config (defaults applied, before cross-key rules). */
export const configSchema = z
  .object({
    /** Run name; results go to `results/<name>/` unless `--out` is given. Letters, digits, `.`, `_`, `-`. */
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, 'must use only letters, digits, ".", "_" and "-"')
      .refine((n) => n !== '.' && n !== '..', 'must not be "." or ".." (it names the results folder results/<name>)')
      .default('sweep'),
    dataset: z.object({
      /** Dataset folder: `docs/` + `questions.jsonl`, or the BEIR layout. Relative to the config file. */
      path: z.string().min(1, 'must name a folder'),
      /** BEIR split (`qrels/<split>.tsv`); the loader uses `test` when left out. */
      split: z.string().min(1).optional(),
      /** Labels naming a document that is not in the corpus: error (strict), keep (unretrievable), or drop. */
      labels: z.enum(['strict', 'keep', 'drop']).default('strict'),
    }),
    chunking: z
      .object({
        /** Chunk sizes in tokens of the chunking tokenizer, or `none` for whole documents. */
        sizes: z.array(chunkSizeSchema).min(1, 'must list at least one size').default(['none']),
        /** Overlap in tokens between consecutive chunks (one value, or a list swept as a grid axis). */
        overlap: z
          .union([z.number().int().min(0, 'must be ≥ 0'), z.array(z.number().int().min(0, 'must be ≥ 0')).min(1)])
          .default(0),
      })
      .default({ sizes: ['none'], overlap: 0 }),
    /** Top-k values; each retriever is queried once at the largest and smaller k are prefixes. */
    topK: z.array(positiveInt).min(1, 'must list at least one k').default([1, 3, 5, 10]),
    modes: z
      .array(z.enum(['keyword', 'semantic', 'hybrid']))
      .min(1, 'must list at least one mode')
      .default(['keyword', 'semantic', 'hybrid']),
    /** Embedding models for semantic and hybrid modes. */
    embeddings: z.array(embeddingSpecSchema).default([]),
    hybrid: z
      .object({
        /** The RRF constant c in 1/(c + rank) (Cormack, Clarke and Buettcher 2009). */
        rrfK: z.number().min(0, 'must be ≥ 0').default(60),
        /** How many results of each list enter the fusion; at least the largest top-k. */
        depth: positiveInt.default(50),
      })
      .default({ rrfK: 60, depth: 50 }),
    bm25: z
      .object({
        k1: z.number().min(0, 'must be ≥ 0').default(1.2),
        b: z.number().min(0, 'must be between 0 and 1').max(1, 'must be between 0 and 1').default(0.75),
      })
      .default({ k1: 1.2, b: 0.75 }),
    /** The metric (with its k) that ranks configurations, declared before the run. */
    primaryMetric: z.string().default('ndcg@10'),
    /** Scoring level: document labels, chunk-id labels, or evidence spans projected onto each chunking. */
    level: z.enum(['document', 'chunk', 'evidence']).default('document'),
    /** Grades ≥ this count as relevant for the binary measures. */
    relevanceThreshold: positiveInt.default(1),
    /** Evidence projection: a chunk is relevant to a span when the overlap covers this share of the span or chunk. */
    evidenceOverlap: z.number().gt(0, 'must be in (0, 1]').max(1, 'must be in (0, 1]').default(0.5),
    /** Token budgets for the evidence-level view: evidence recall of the top chunks that fit in B tokens. */
    evidenceBudgets: z.array(positiveInt).default([512, 1024]),
    statistics: z
      .object({
        seed: z.number().int().default(42),
        resamples: z.number().int().min(1000, 'must be at least 1000').default(2000),
        alpha: z.number().gt(0).lt(1).default(0.05),
        /**
         * Fewest judged questions for a recommendation. Below it (or when the minimum detectable difference exceeds a
         * tenth of the metric's range) the report says there is not enough evidence to choose.
         */
        minQuestions: z.number().int().min(1, 'must be at least 1').default(30),
      })
      .default({ seed: 42, resamples: 2000, alpha: 0.05, minQuestions: 30 }),
    /** Where embedding vectors and derived model files are cached; relative to the working directory. */
    cacheDir: z.string().default('.cache/retrieval-sweep'),
    /** How many retrieval jobs run at once. */
    concurrency: positiveInt.default(2),
  })
  .strict();

/** The written config (after defaults). */
export type WrittenConfig = z.output<typeof configSchema>;

/** A fully resolved config: defaults filled, paths absolute, overlap as a list, primary metric parsed. */
export interface SweepConfig extends Omit<WrittenConfig, 'chunking' | 'embeddings'> {
  chunking: { sizes: (number | 'none')[]; overlaps: number[] };
  embeddings: EmbeddingSpec[];
  /** Absolute dataset folder. */
  datasetPath: string;
  /** Family and k of the primary metric (`ndcg`, 10). */
  primary: { family: string; k: number };
  /** Absolute path of the config file, when read from one. */
  configFile?: string;
}

function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function valueAt(obj: unknown, keyPath: readonly PropertyKey[]): unknown {
  let cur: unknown = obj;
  for (const key of keyPath) {
    // A shorthand (e.g. `use-lite` for `{model: use-lite}`) ends the walk early: report the value written.
    if (cur === null || typeof cur !== 'object') return cur;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** Cross-key rules, each returning `[path, message]` pairs (changesets-style named rules). */
const rules: ((c: WrittenConfig) => [string, string][])[] = [
  function overlapSmallerThanSize(c) {
    const overlaps = Array.isArray(c.chunking.overlap) ? c.chunking.overlap : [c.chunking.overlap];
    const out: [string, string][] = [];
    for (const size of c.chunking.sizes) {
      if (size === 'none') continue;
      for (const ov of overlaps) {
        if (ov >= size)
          out.push([
            'chunking.overlap',
            `chunking.overlap (${ov}) must be smaller than chunking.sizes entry (${size}); a window would never move forward`,
          ]);
      }
    }
    return out;
  },
  function primaryMetricKnownAndInGrid(c) {
    let m;
    try {
      m = parseMeasure(c.primaryMetric);
    } catch (e) {
      if (isHarnessError(e)) return [['primaryMetric', `${e.message}`]];
      throw e;
    }
    if (m.k === null) return [['primaryMetric', `primaryMetric (${c.primaryMetric}) needs a cutoff such as ndcg@10`]];
    if (!c.topK.includes(m.k))
      return [['primaryMetric', `primaryMetric (${c.primaryMetric}) has k = ${m.k}, which is not in topK [${c.topK.join(', ')}]; add ${m.k} to topK or pick a listed k`]];
    return [];
  },
  function embeddingsForDenseModes(c) {
    const dense = c.modes.filter((m) => m !== 'keyword');
    if (dense.length > 0 && c.embeddings.length === 0)
      return [['embeddings', `modes ${dense.join(', ')} need at least one embedding model (e.g. embeddings: [use-lite])`]];
    return [];
  },
  function hybridDepthCoversK(c) {
    const maxK = Math.max(...c.topK);
    if (c.modes.includes('hybrid') && c.hybrid.depth < maxK)
      return [['hybrid.depth', `hybrid.depth (${c.hybrid.depth}) must be at least the largest topK (${maxK}); each list fed to fusion needs that many results`]];
    return [];
  },
  function chunkLabelsNeedOneChunking(c) {
    const overlaps = Array.isArray(c.chunking.overlap) ? c.chunking.overlap : [c.chunking.overlap];
    const n = c.chunking.sizes.reduce<number>((sum, size) => sum + (size === "none" ? 1 : overlaps.length), 0);
    if (c.level === 'chunk' && n !== 1)
      return [['level', `level chunk scores chunk-id labels, which are valid for one chunking only, but the grid has ${n} chunkings; use level: evidence to compare chunkings, or list one chunk size and overlap`]];
    return [];
  },
  function distinctValues(c) {
    const out: [string, string][] = [];
    const dup = <T>(xs: T[]) => xs.find((x, i) => xs.indexOf(x) !== i);
    const d1 = dup(c.topK);
    if (d1 !== undefined) out.push(['topK', `topK lists ${d1} twice`]);
    const d5 = Array.isArray(c.chunking.overlap) ? dup(c.chunking.overlap) : undefined;
    if (d5 !== undefined) out.push(['chunking.overlap', `chunking.overlap lists ${d5} twice`]);
    const d2 = dup(c.chunking.sizes);
    if (d2 !== undefined) out.push(['chunking.sizes', `chunking.sizes lists ${d2} twice`]);
    const d3 = dup(c.modes);
    if (d3 !== undefined) out.push(['modes', `modes lists ${d3} twice`]);
    const d4 = dup(c.embeddings.map((e) => e.label));
    if (d4 !== undefined) out.push(['embeddings', `two embedding models share the label ${d4}; give one a distinct label`]);
    return out;
  },
];

/**
 * Validates and resolves a config object.
 * @param input what YAML parsing gave (any shape).
 * @param source the file it came from (for messages and for resolving `dataset.path`); omit for in-memory configs
 *   (paths then resolve against the working directory).
 * @throws HarnessError('CONFIG_INVALID') listing every problem with its key path, the bad value and what is allowed.
 */
export function parseConfig(input: unknown, source?: string): SweepConfig {
  const result = configSchema.safeParse(input ?? {});
  const problems: string[] = [];
  if (!result.success) {
    for (const issue of result.error.issues) {
      const keyPath = issue.path.map(String).join('.') || '(top level)';
      const got = describeValue(valueAt(input, issue.path as PropertyKey[]));
      let msg = issue.message;
      if (issue.code === 'unrecognized_keys') {
        const known = Object.keys(configSchema.shape).join(', ');
        msg = `unknown key(s) ${issue.keys.join(', ')}; known keys: ${known}`;
        problems.push(`${keyPath}: ${msg}`);
        continue;
      }
      problems.push(`${keyPath}: ${msg} (got ${got})`);
    }
  } else {
    for (const rule of rules) for (const [p, m] of rule(result.data)) problems.push(m.startsWith(p) ? m : `${p}: ${m}`);
  }
  if (problems.length > 0 || !result.success) {
    throw new HarnessError('CONFIG_INVALID', `invalid config:\n  - ${problems.join('\n  - ')}`, {
      location: source ? { file: source } : {},
      remedy: 'fix the keys listed above; see README.md ("Configuration") for every key, its default and allowed values',
    });
  }
  const c = result.data;
  const baseDir = source ? path.dirname(path.resolve(source)) : process.cwd();
  const primary = parseMeasure(c.primaryMetric);
  return {
    ...c,
    chunking: {
      sizes: c.chunking.sizes,
      overlaps: Array.isArray(c.chunking.overlap) ? [...c.chunking.overlap] : [c.chunking.overlap],
    },
    embeddings: c.embeddings,
    datasetPath: path.resolve(baseDir, c.dataset.path),
    primary: { family: primary.family, k: primary.k as number },
    ...(source ? { configFile: path.resolve(source) } : {}),
  };
}

/**
 * Reads a YAML config file and resolves it with {@link parseConfig}.
 * @throws HarnessError('CONFIG_NOT_FOUND') when the file is missing; ('CONFIG_INVALID') on YAML syntax errors (with the
 *   line) or schema problems.
 */
export function loadConfigFile(file: string): SweepConfig {
  if (!existsSync(file)) {
    throw new HarnessError('CONFIG_NOT_FOUND', `config file not found: ${path.resolve(file)}`, {
      location: { file },
      remedy: 'pass the path of a YAML config, e.g. configs/default.yaml',
    });
  }
  if (!statSync(file).isFile()) {
    throw new HarnessError('CONFIG_NOT_FOUND', `${path.resolve(file)} is a folder, not a config file`, {
      location: { file },
      remedy: 'pass the path of a YAML config file, e.g. configs/default.yaml',
    });
  }
  const text = readFileSync(file, 'utf8');
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    if (e instanceof YAMLParseError) {
      const line = e.linePos?.[0]?.line;
      throw new HarnessError('CONFIG_INVALID', `YAML syntax error: ${e.message.split('\n')[0]}`, {
        location: line === undefined ? { file } : { file, line },
        remedy: 'fix the YAML syntax at that line',
        cause: e,
      });
    }
    throw e;
  }
  return parseConfig(doc, file);
}

/** The measure families every configuration row is scored on. */
export const ROW_FAMILIES = MEASURE_FAMILIES.filter((f) => f !== 'r_precision');
