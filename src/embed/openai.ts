/**
 * `openai:<model>`: an embedding server speaking OpenAI's `POST /v1/embeddings` protocol, which OpenAI, Text Embeddings
 * Inference, vLLM, Ollama, LM Studio and llama.cpp's server all serve (docs/integrations.md has their command lines).
 *
 * Request: `{ model, input: string[], dimensions? }` (no `encoding_format`: float is every server's default, and some
 * reject the field). Response: `{ data: [{ index, embedding: number[] }], usage?: { prompt_tokens, total_tokens } }`.
 *
 * Contract (on top of src/net/http.ts's retries, timeouts, limits and key redaction):
 * - `embedBatch` splits its texts into requests of `batchSize` and sends them at most `concurrency` at a time;
 * - a response is accepted only with exactly one item per input, every `index` in [0, n) exactly once (items are put
 *   back in `index` order: a server may answer out of order), every vector of length `dimensions`, every number
 *   finite; otherwise it is retried once, then `EMBEDDING_FAILED`; never a silent misalignment;
 * - vectors are L2-normalised (unless `normalize: false`), prefixes are added as for local models ({@link modelInput});
 * - `create()` sends one small probe request, so a wrong key, model or address is one clear error before any
 *   embedding; the probe also learns `dimensions` when the config does not set it.
 */
import { HarnessError } from '../errors.js';
import { HttpClient, InvalidResponse, type HttpClientOptions } from '../net/http.js';
import { formatCacheKey, l2NormalizeInPlace, type EmbeddingProvider, type EmbedRole } from './provider.js';
import { modelInput, OPENAI_PREFIX, prefixFor, type EmbeddingSpec, type ServerEmbeddingOptions } from './spec.js';

/** The text of the create-time probe request (sent without any prefix). */
export const PROBE_TEXT = 'retrieval-sweep probe';

/** Test and wiring options of {@link OpenAIProvider.create}; none changes a vector. */
export interface OpenAIProviderOptions
  extends Pick<HttpClientOptions, 'env' | 'clock' | 'random' | 'fetch' | 'backoffBaseMs' | 'backoffMaxMs'> {
  /**
   * Send the probe request in `create()`. Default true. With false and `dimensions` set in the config, `create()` sends
   * nothing (a fully cached rerun then sends no request at all); without `dimensions` the probe is sent anyway, since
   * the vector length must be known before the cache can be read.
   */
  probe?: boolean;
}

/** One parsed `/v1/embeddings` answer. */
export interface ParsedEmbeddings {
  /** One vector per input, in input order, as the server sent it (not yet normalised). */
  vectors: Float32Array[];
  /** `usage.prompt_tokens` (else `usage.total_tokens`), or undefined when the server reports no usage. */
  tokens: number | undefined;
}

/**
 * Checks an `/v1/embeddings` response body for `n` inputs and puts the items in `index` order.
 * `d` is the expected vector length, or null to accept the length of the first vector (all must then agree).
 * Throws {@link InvalidResponse} naming what is wrong: not an object with `data`, wrong count, an `index` that is
 * missing, out of [0, n) or repeated, a vector that is not an array of length d, a non-finite component.
 */
export function parseEmbeddingResponse(json: unknown, n: number, d: number | null): ParsedEmbeddings {
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw new InvalidResponse('the response has no data array');
  if (data.length !== n) throw new InvalidResponse(`the response holds ${data.length} embeddings for ${n} inputs`);
  const out = new Array<Float32Array | undefined>(n).fill(undefined);
  let dim = d;
  for (const item of data as unknown[]) {
    const index = (item as { index?: unknown } | null)?.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= n) {
      throw new InvalidResponse(`an item has index ${JSON.stringify(index)}, expected a whole number in [0, ${n})`);
    }
    if (out[index] !== undefined) throw new InvalidResponse(`index ${index} appears twice`);
    const emb = (item as { embedding?: unknown }).embedding;
    if (!Array.isArray(emb)) throw new InvalidResponse(`item ${index} has no embedding array (base64 is not supported)`);
    if (dim === null) dim = emb.length;
    if (emb.length !== dim) throw new InvalidResponse(`item ${index} has ${emb.length} dimensions, expected ${dim}`);
    const v = new Float32Array(dim);
    for (let j = 0; j < dim; j++) {
      const x = emb[j] as unknown;
      if (typeof x !== 'number' || !Number.isFinite(x)) {
        throw new InvalidResponse(`item ${index} component ${j} is ${JSON.stringify(x) ?? String(x)}, not a finite number`);
      }
      v[j] = x;
    }
    out[index] = v;
  }
  const usage = (json as { usage?: { prompt_tokens?: unknown; total_tokens?: unknown } }).usage;
  const t = usage?.prompt_tokens ?? usage?.total_tokens;
  return { vectors: out as Float32Array[], tokens: typeof t === 'number' && Number.isFinite(t) ? t : undefined };
}

/** Rough token estimate for the tokens-per-minute limit before the server says: 1 token per 4 characters, plus 1. */
function estimateTokens(texts: readonly string[]): number {
  return texts.reduce((s, t) => s + Math.ceil(t.length / 4) + 1, 0);
}

/** The `openai:` provider. Create with {@link OpenAIProvider.create}. */
export class OpenAIProvider implements EmbeddingProvider {
  readonly name: string;
  readonly label: string;
  private dims: number;
  private readonly spec: EmbeddingSpec;
  private readonly server: ServerEmbeddingOptions;
  /** The model name sent to the server: the config's model without `openai:`. */
  private readonly serverModel: string;
  private readonly client: HttpClient;
  private promptTokens = 0;
  private reportedModel: string | undefined;

  private constructor(spec: EmbeddingSpec, client: HttpClient) {
    this.spec = spec;
    this.server = spec.server as ServerEmbeddingOptions;
    this.name = spec.model;
    this.label = spec.label;
    this.serverModel = spec.model.slice(OPENAI_PREFIX.length);
    this.client = client;
    this.dims = this.server.dimensions ?? 0;
  }

  /**
   * Connects to `spec.server.baseUrl` and (see {@link OpenAIProviderOptions.probe}) sends one probe request.
   * Throws `HarnessError('EMBEDDING_FAILED')` when the key variable is unset, or the probe fails (401/403: remedy
   * names `apiKeyEnv`; 404: check baseUrl and model; refused: start the server), naming the URL and the model and
   * never the key; `HarnessError('CONFIG_INVALID')` for a spec that is not an `openai:` entry.
   */
  static async create(spec: EmbeddingSpec, opts: OpenAIProviderOptions = {}): Promise<OpenAIProvider> {
    const server = spec.server;
    if (!spec.model.startsWith(OPENAI_PREFIX) || server === undefined) {
      throw new HarnessError('CONFIG_INVALID', `${spec.model} is not an openai: entry with a baseUrl`, {
        location: { path: 'embeddings' },
        remedy: 'resolve the entry with resolveEmbeddingSpec({ model: "openai:<name>", baseUrl: ... })',
      });
    }
    const { probe, ...httpOpts } = opts;
    const client = new HttpClient({
      ...httpOpts,
      baseUrl: server.baseUrl,
      what: spec.model,
      errorCode: 'EMBEDDING_FAILED',
      configPath: 'embeddings',
      apiKeyEnv: server.apiKeyEnv,
      timeoutMs: server.timeoutMs,
      maxRetries: server.maxRetries,
      concurrency: server.concurrency,
      requestsPerMinute: server.requestsPerMinute,
      tokensPerMinute: server.tokensPerMinute,
      ...(server.maxResponseBytes !== undefined ? { maxResponseBytes: server.maxResponseBytes } : {}),
    });
    const p = new OpenAIProvider(spec, client);
    if (probe !== false || server.dimensions === null) {
      const [v] = await p.request([PROBE_TEXT]);
      if (server.dimensions === null) p.dims = v.length;
    }
    return p;
  }

  get dimensions(): number {
    return this.dims;
  }

  /** Base URL, server model name, requested dimensions, the role prefix and normalisation: two servers never share. */
  cacheKey(role: EmbedRole): string {
    return formatCacheKey('openai', {
      baseUrl: this.server.baseUrl,
      model: this.serverModel,
      dimensions: this.server.dimensions,
      prefix: prefixFor(this.spec, role),
      normalize: this.spec.normalize,
    });
  }

  /** One request of at most `batchSize` texts (already prefixed); vectors in input order, normalised if asked. */
  private async request(inputs: readonly string[]): Promise<Float32Array[]> {
    const body: Record<string, unknown> = { model: this.serverModel, input: inputs };
    if (this.server.dimensions !== null) body.dimensions = this.server.dimensions;
    const expected = this.dims > 0 ? this.dims : null;
    const parsed = await this.client.postJson('/embeddings', body, {
      parse: (json) => {
        const r = parseEmbeddingResponse(json, inputs.length, expected);
        const m = (json as { model?: unknown }).model;
        return { ...r, model: typeof m === 'string' ? m : undefined };
      },
      tokens: estimateTokens(inputs),
      usedTokens: (r) => r.tokens,
    });
    this.promptTokens += parsed.tokens ?? 0;
    if (parsed.model !== undefined) this.reportedModel = parsed.model;
    if (this.spec.normalize) for (const v of parsed.vectors) l2NormalizeInPlace(v);
    return parsed.vectors;
  }

  /**
   * Embeds `texts` (role prefix added exactly once): requests of `batchSize` texts, at most `concurrency` in flight,
   * results in input order. Throws `HarnessError('EMBEDDING_FAILED')` when a request fails after its retries.
   */
  async embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    const inputs = texts.map((t) => modelInput(this.spec, role, t));
    const size = this.spec.batchSize;
    const parts: string[][] = [];
    for (let i = 0; i < inputs.length; i += size) parts.push(inputs.slice(i, i + size));
    const done = await Promise.all(parts.map((p) => this.request(p)));
    return done.flat();
  }

  truncatedCount(): number {
    return 0;
  }

  /** Requests (probe included), retries, seconds waited before retries, and prompt tokens from `usage`. */
  stats(): { requests: number; retries: number; retryWaitSeconds: number; promptTokens: number } {
    const s = this.client.stats();
    return { requests: s.requests, retries: s.retries, retryWaitSeconds: s.retryWaitSeconds, promptTokens: this.promptTokens };
  }

  /** Server, model, dimensions, prefixes, limits and the key's variable NAME (never its value). */
  describe(): Record<string, unknown> {
    const s = this.server;
    return {
      provider: 'openai',
      protocol: 'POST /v1/embeddings',
      baseUrl: s.baseUrl,
      model: this.serverModel,
      ...(this.reportedModel !== undefined && this.reportedModel !== this.serverModel ? { serverReportedModel: this.reportedModel } : {}),
      dimensions: this.dims,
      requestedDimensions: s.dimensions,
      queryPrefix: this.spec.queryPrefix,
      documentPrefix: this.spec.documentPrefix,
      normalize: this.spec.normalize,
      batchSize: this.spec.batchSize,
      concurrency: s.concurrency,
      requestsPerMinute: s.requestsPerMinute,
      tokensPerMinute: s.tokensPerMinute,
      timeoutMs: s.timeoutMs,
      maxRetries: s.maxRetries,
      apiKeyEnv: s.apiKeyEnv,
      throttleWaitSeconds: this.client.stats().throttleWaitSeconds,
    };
  }

  async close(): Promise<void> {
    // fetch keeps no per-provider state to release.
  }
}
