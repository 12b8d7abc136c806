/**
 * One entry of the config's `rerank:` list: the written forms, the zod schema, and the resolved {@link RerankSpec}
 * with every default filled in.
 *
 * ```yaml
 * rerank:
 *   - none                                                        # the row without reranking
 *   - { model: "transformers:./models/ms-marco-MiniLM-L-6-v2", depth: [20, 50] }
 *   - { model: "rerank:bge-reranker-base", baseUrl: "http://127.0.0.1:8081", protocol: tei, depth: 20 }
 *   - { model: "rerank:rerank-english-v3.0", baseUrl: "https://api.cohere.com", protocol: cohere,
 *       apiKeyEnv: COHERE_API_KEY, depth: 20 }
 * ```
 *
 * Fields, and which model kind takes them (a field given for the other kind is an error, never silently ignored):
 *
 * | field       | kinds        | default                         | meaning                                             |
 * |-------------|--------------|---------------------------------|-----------------------------------------------------|
 * | model       | both         | (required)                      | `transformers:<folder or hub id>` or `rerank:<name>` |
 * | depth       | both         | (required)                      | integer ≥ 1, or a list of them (one row each)        |
 * | label       | both         | last path part of the model     | id part `rr-<label>-d<depth>`; `[A-Za-z0-9._-]+`     |
 * | batchSize   | both         | 16 (transformers), 32 (rerank:) | pairs per forward pass / per request                 |
 * | maxLength   | transformers | 512                             | pair length in tokens, specials included             |
 * | allowRemote | transformers | false                           | may download a hub id into `<cacheDir>/models`       |
 * | dtype       | transformers | fp32                            | `fp32` = onnx/model.onnx, `q8` = model_quantized.onnx |
 * | baseUrl     | rerank:      | (required)                      | `http(s)://host:port` of the server                  |
 * | protocol    | rerank:      | (required)                      | `tei` (`POST /rerank`) or `cohere` (`POST /v1/rerank`) |
 * | apiKeyEnv   | rerank:      | none                            | environment variable holding a bearer token          |
 * | concurrency | rerank:      | 4                               | requests in flight at once                           |
 * | timeoutMs   | rerank:      | 30000                           | per-request timeout, milliseconds                    |
 *
 * `dtype` is a field added to {@link RerankSpec} beyond the committed interface (as `embeddings:` has it).
 */
import { z } from 'zod';
import { HarnessError } from '../errors.js';
import { fetchBadPort } from '../net/http.js';
import type { RerankSpec } from './types.js';

/** The prefix of a local cross-encoder run through transformers.js. */
export const RERANK_TRANSFORMERS_PREFIX = 'transformers:';
/** The prefix of a model served by a rerank server (TEI or Cohere-style). */
export const RERANK_SERVER_PREFIX = 'rerank:';

/** Default pairs per forward pass for a local cross-encoder. */
export const DEFAULT_LOCAL_BATCH_SIZE = 16;
/** Default pairs per request for a rerank server. */
export const DEFAULT_SERVER_BATCH_SIZE = 32;
/** Default requests in flight (servers). */
export const DEFAULT_CONCURRENCY = 4;
/** Default per-request timeout in milliseconds (servers). */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Default maximum pair length in tokens (local cross-encoders), before the model's own cap. */
export const DEFAULT_MAX_LENGTH = 512;

/** Fields only a `transformers:` model takes. */
const LOCAL_ONLY = ['maxLength', 'allowRemote', 'dtype'] as const;
/** Fields only a `rerank:` model takes. */
const SERVER_ONLY = ['baseUrl', 'protocol', 'apiKeyEnv', 'concurrency', 'timeoutMs'] as const;

const positiveInt = (what: string): z.ZodNumber =>
  z.number().int(`${what} must be a whole number`).min(1, `${what} must be at least 1`);

/** True for `transformers:<non-empty>` and `rerank:<non-empty>`. */
export function isKnownRerankModel(model: string): boolean {
  for (const p of [RERANK_TRANSFORMERS_PREFIX, RERANK_SERVER_PREFIX]) {
    if (model.startsWith(p) && model.slice(p.length).trim().length > 0) return true;
  }
  return false;
}

const MODEL_MESSAGE =
  'must be transformers:<folder or hub id> (a local cross-encoder) or rerank:<model name> (a rerank server)';

/** The object form of one entry (before defaults). Strict: an unknown key is an error naming the key. */
export const rerankObjectSchema = z
  .object({
    model: z.string().refine(isKnownRerankModel, { message: MODEL_MESSAGE }),
    depth: z.union([
      positiveInt('depth'),
      z
        .array(positiveInt('each depth'))
        .min(1, 'must list at least one depth')
        .refine((a) => new Set(a).size === a.length, { message: 'lists a depth twice' }),
    ]),
    label: z.string().regex(/^[A-Za-z0-9._-]+$/, 'must use only letters, digits, ".", "_" and "-"').optional(),
    baseUrl: z
      .string()
      .refine((u) => /^https?:\/\/[^/\s]+/.test(u) && URL.canParse(u), { message: 'must be an http(s) URL such as http://127.0.0.1:8081' })
      .optional(),
    protocol: z.enum(['tei', 'cohere']).optional(),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable (letters, digits, "_")')
      .optional(),
    batchSize: positiveInt('batchSize').optional(),
    concurrency: positiveInt('concurrency').max(64, 'concurrency must be at most 64').optional(),
    timeoutMs: positiveInt('timeoutMs').optional(),
    maxLength: z.number().int('maxLength must be a whole number').min(4, 'maxLength must be at least 4 tokens').optional(),
    allowRemote: z.boolean().optional(),
    dtype: z.enum(['fp32', 'q8']).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    const server = o.model.startsWith(RERANK_SERVER_PREFIX);
    if (server) {
      if (o.baseUrl === undefined) ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: 'is required for a rerank: model (e.g. http://127.0.0.1:8081)' });
      if (o.protocol === undefined) ctx.addIssue({ code: 'custom', path: ['protocol'], message: 'is required for a rerank: model (tei or cohere)' });
    }
    const bad = o.baseUrl === undefined ? undefined : fetchBadPort(o.baseUrl);
    if (bad !== undefined) ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: `uses port ${bad}, which fetch refuses to connect to (a blocked "bad port" of the Fetch standard); serve the model on another port (8080, 8000, 11434 ...) and put that port in baseUrl` });
    const wrong = server ? LOCAL_ONLY : SERVER_ONLY;
    for (const key of wrong) {
      if (o[key] !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: server
            ? 'applies only to transformers: models (a rerank server truncates and loads on its own)'
            : 'applies only to rerank: server models, not to a transformers: cross-encoder',
        });
      }
    }
  });

/**
 * zod schema of one written `rerank:` entry: the string `none` or the object form. No defaults applied; use it for
 * the config schema and its JSON Schema, and {@link resolveRerankSpec} to fill defaults.
 */
export const rerankEntrySchema = z.union([z.literal('none'), rerankObjectSchema]);

/** Written form of one `rerank:` entry. */
export type RerankEntryInput = z.input<typeof rerankEntrySchema>;

/**
 * The default label: the last path part of the model id (after `transformers:` / `rerank:`, trailing slashes
 * dropped), with every run of characters outside `[A-Za-z0-9._-]` replaced by `-` and leading/trailing `-` removed;
 * `model` when nothing is left. E.g. `transformers:./models/ms-marco-MiniLM-L-6-v2` → `ms-marco-MiniLM-L-6-v2`,
 * `rerank:BAAI/bge-reranker-base` → `bge-reranker-base`.
 */
export function defaultRerankLabel(model: string): string {
  let id = model;
  for (const p of [RERANK_TRANSFORMERS_PREFIX, RERANK_SERVER_PREFIX]) if (id.startsWith(p)) id = id.slice(p.length);
  const parts = id.replace(/[\\/]+$/, '').split(/[\\/]/);
  const base = (parts[parts.length - 1] ?? id).replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '');
  return base === '' || base === '.' || base === '..' ? 'model' : base;
}

function describeIssue(where: string, issue: z.core.$ZodIssue): string {
  const key = [where, ...issue.path.map(String)].join('.');
  if (issue.code === 'unrecognized_keys') {
    const accepted = Object.keys(rerankObjectSchema.shape).join(', ');
    return (issue as { keys: string[] }).keys.map((k) => `${key}.${k}: unknown key (accepted: ${accepted})`).join('; ');
  }
  return `${key}: ${issue.message}`;
}

/**
 * Validates one written `rerank:` entry and fills the defaults (see the module doc's table). Returns null for
 * `none`. `where` is the key path used in messages (e.g. `rerank[1]`; default `rerank`).
 *
 * Throws `HarnessError('CONFIG_INVALID')` naming every bad key path and value at once: an unknown key, a model that
 * is neither `transformers:` nor `rerank:`, a depth that is not an integer ≥ 1 (or a list with a repeat), a
 * `rerank:` model without `baseUrl` or `protocol`, or a field given for the other kind of model.
 */
export function resolveRerankSpec(entry: unknown, where = 'rerank'): RerankSpec | null {
  if (typeof entry === 'string' && entry !== 'none') {
    throw new HarnessError(
      'CONFIG_INVALID',
      `${where}: ${JSON.stringify(entry)} is not a rerank entry; write none or an object such as { model: ${JSON.stringify(entry)}, depth: 20 }`,
      { location: { path: where }, remedy: 'give the reranker as { model, depth } (see docs/reranking.md)' },
    );
  }
  const parsed = rerankEntrySchema.safeParse(entry);
  if (!parsed.success) {
    // A union reports the object branch's issues under `invalid_union`; show those (the string branch only says "none").
    const issues = parsed.error.issues.flatMap((i) =>
      i.code === 'invalid_union' && typeof entry === 'object' && entry !== null
        ? ((i as { errors: z.core.$ZodIssue[][] }).errors[1] ?? [i])
        : [i],
    );
    throw new HarnessError('CONFIG_INVALID', `invalid rerank entry ${JSON.stringify(entry)}: ${issues.map((i) => describeIssue(where, i)).join('; ')}`, {
      location: { path: where },
      remedy: 'see docs/reranking.md for the accepted fields',
    });
  }
  const o = parsed.data;
  if (o === 'none') return null;
  const server = o.model.startsWith(RERANK_SERVER_PREFIX);
  const spec: RerankSpec = {
    model: o.model,
    label: o.label ?? defaultRerankLabel(o.model),
    depth: typeof o.depth === 'number' ? [o.depth] : [...o.depth],
    batchSize: o.batchSize ?? (server ? DEFAULT_SERVER_BATCH_SIZE : DEFAULT_LOCAL_BATCH_SIZE),
    concurrency: o.concurrency ?? DEFAULT_CONCURRENCY,
    timeoutMs: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  };
  if (server) {
    spec.baseUrl = o.baseUrl!.replace(/\/+$/, '');
    spec.protocol = o.protocol!;
    if (o.apiKeyEnv !== undefined) spec.apiKeyEnv = o.apiKeyEnv;
  } else {
    spec.maxLength = o.maxLength ?? DEFAULT_MAX_LENGTH;
    spec.allowRemote = o.allowRemote ?? false;
    spec.dtype = o.dtype ?? 'fp32';
  }
  return spec;
}

/**
 * Resolves a whole `rerank:` list (`where` = `rerank`; entries named `rerank[i]`). Returns the list with `null` for
 * each `none`, in order. Throws `HarnessError('CONFIG_INVALID')` for an invalid entry (see {@link resolveRerankSpec})
 * and when two entries share a label (their row ids would collide), naming both indexes and the label.
 */
export function resolveRerankList(entries: readonly unknown[], where = 'rerank'): (RerankSpec | null)[] {
  const out = entries.map((e, i) => resolveRerankSpec(e, `${where}[${i}]`));
  const seen = new Map<string, number>();
  out.forEach((s, i) => {
    if (s === null) return;
    const first = seen.get(s.label);
    if (first !== undefined) {
      throw new HarnessError('CONFIG_INVALID', `${where}[${i}]: label ${JSON.stringify(s.label)} is already used by ${where}[${first}]`, {
        location: { path: `${where}[${i}].label` },
        remedy: 'give one of the two entries its own label',
      });
    }
    seen.set(s.label, i);
  });
  return out;
}
