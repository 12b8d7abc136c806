/**
 * `rerank:<model>` with `protocol: tei | cohere`: the two rerank protocols servers speak, through the shared HTTP layer
 * (src/net/http.ts: timeouts, retries with backoff and `Retry-After`, bounded concurrency, the key from `apiKeyEnv`,
 * redacted from every error).
 *
 * - `tei` — Text Embeddings Inference `POST <baseUrl>/rerank` with `{ query, texts, truncate: true }`, answer
 *   `[{ index, score }]` (TEI sorts by score; we put the scores back in `index` order). `truncate: true` makes TEI cut
 *   pairs longer than the model's limit instead of answering 413.
 * - `cohere` — the Cohere-style `POST <baseUrl>/v1/rerank` (Cohere, Jina, vLLM) with `{ model, query, documents,
 *   top_n: n, return_documents: false }`, answer `{ results: [{ index, relevance_score }] }`. A `baseUrl` already ending
 *   in `/v1` or `/v2` gets only `/rerank` appended.
 *
 * An answer is accepted only with one item per text, every `index` in [0, n) exactly once and every score finite;
 * otherwise it is retried once, then `RERANK_FAILED`. Texts are sent `batchSize` per request, at most `concurrency`
 * requests in flight. `createHttpReranker` sends one small probe request, so a wrong key, model or address is one clear
 * error before any question is reranked.
 */
import { HarnessError } from '../errors.js';
import { formatCacheKey } from '../embed/provider.js';
import { HttpClient, InvalidResponse, type HttpClientOptions } from '../net/http.js';
import type { Reranker, RerankSpec } from './types.js';

/** The prefix of a server reranker's model name in the config. */
export const RERANK_SERVER_PREFIX = 'rerank:';

/** Default retries of one rerank request (429, 5xx, timeout, reset, malformed answer). */
export const DEFAULT_RERANK_MAX_RETRIES = 5;

/** Test and wiring options of {@link createHttpReranker}; none changes a score. */
export interface HttpRerankerOptions
  extends Pick<HttpClientOptions, 'env' | 'clock' | 'random' | 'fetch' | 'backoffBaseMs' | 'backoffMaxMs'> {
  /** Send the probe request at creation. Default true. */
  probe?: boolean;
  /** Retries of one request. Default {@link DEFAULT_RERANK_MAX_RETRIES}. */
  maxRetries?: number;
}

/**
 * Scores in `index` order from a TEI `/rerank` answer (`[{index, score}]`) or a Cohere-style answer
 * (`{results: [{index, relevance_score}]}`) for `n` texts. Throws {@link InvalidResponse} for the wrong shape, count,
 * an `index` missing, out of range or repeated, or a non-finite score.
 */
export function parseRerankResponse(json: unknown, protocol: 'tei' | 'cohere', n: number): number[] {
  const items = protocol === 'tei' ? json : (json as { results?: unknown } | null)?.results;
  if (!Array.isArray(items)) {
    throw new InvalidResponse(protocol === 'tei' ? 'the answer is not an array of {index, score}' : 'the answer has no results array');
  }
  if (items.length !== n) throw new InvalidResponse(`the answer holds ${items.length} scores for ${n} texts`);
  const field = protocol === 'tei' ? 'score' : 'relevance_score';
  const out = new Array<number | undefined>(n).fill(undefined);
  for (const item of items as unknown[]) {
    const index = (item as { index?: unknown } | null)?.index;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= n) {
      throw new InvalidResponse(`an item has index ${JSON.stringify(index)}, expected a whole number in [0, ${n})`);
    }
    if (out[index] !== undefined) throw new InvalidResponse(`index ${index} appears twice`);
    const score = (item as Record<string, unknown>)[field];
    if (typeof score !== 'number' || !Number.isFinite(score)) {
      throw new InvalidResponse(`item ${index} has ${field} ${JSON.stringify(score) ?? String(score)}, not a finite number`);
    }
    out[index] = score;
  }
  return out as number[];
}

/** The request path for a protocol and base URL (see the module doc). */
export function rerankPath(protocol: 'tei' | 'cohere', baseUrl: string): string {
  if (protocol === 'tei') return '/rerank';
  return /\/v\d+$/.test(baseUrl.replace(/\/+$/, '')) ? '/rerank' : '/v1/rerank';
}

class HttpReranker implements Reranker {
  readonly name: string;
  readonly label: string;
  private readonly serverModel: string;
  private readonly path: string;
  private pairs = 0;

  constructor(
    private readonly spec: RerankSpec & { baseUrl: string; protocol: 'tei' | 'cohere' },
    private readonly client: HttpClient,
    private readonly maxRetries: number,
  ) {
    this.name = spec.model;
    this.label = spec.label;
    this.serverModel = spec.model.slice(RERANK_SERVER_PREFIX.length);
    this.path = rerankPath(spec.protocol, client.baseUrl);
  }

  cacheKey(): string {
    return formatCacheKey('rerank-http', {
      protocol: this.spec.protocol,
      baseUrl: this.client.baseUrl,
      model: this.serverModel,
      truncate: this.spec.protocol === 'tei',
    });
  }

  /** One request of at most `batchSize` texts. */
  async request(query: string, texts: readonly string[]): Promise<number[]> {
    const body =
      this.spec.protocol === 'tei'
        ? { query, texts, truncate: true }
        : { model: this.serverModel, query, documents: texts, top_n: texts.length, return_documents: false };
    const scores = await this.client.postJson(this.path, body, {
      parse: (json) => parseRerankResponse(json, this.spec.protocol, texts.length),
      tokens: texts.reduce((s, t) => s + Math.ceil((t.length + query.length) / 4) + 1, 0),
    });
    this.pairs += texts.length;
    return scores;
  }

  async score(query: string, texts: readonly string[]): Promise<number[]> {
    if (texts.length === 0) return [];
    const size = this.spec.batchSize;
    const parts: (readonly string[])[] = [];
    for (let i = 0; i < texts.length; i += size) parts.push(texts.slice(i, i + size));
    const done = await Promise.all(parts.map((p) => this.request(query, p)));
    return done.flat();
  }

  stats(): { requests: number; retries: number; retryWaitSeconds: number; pairs: number } {
    const s = this.client.stats();
    return { requests: s.requests, retries: s.retries, retryWaitSeconds: s.retryWaitSeconds, pairs: this.pairs };
  }

  describe(): Record<string, unknown> {
    return {
      provider: 'rerank-http',
      protocol: this.spec.protocol,
      endpoint: `POST ${this.path}`,
      baseUrl: this.client.baseUrl,
      model: this.serverModel,
      truncate: this.spec.protocol === 'tei',
      batchSize: this.spec.batchSize,
      concurrency: this.spec.concurrency,
      timeoutMs: this.spec.timeoutMs,
      maxRetries: this.maxRetries,
      apiKeyEnv: this.spec.apiKeyEnv ?? null,
      throttleWaitSeconds: this.client.stats().throttleWaitSeconds,
    };
  }

  async close(): Promise<void> {
    // fetch keeps no per-reranker state to release.
  }
}

/** The text of the probe request sent at creation (query and the one text). */
export const RERANK_PROBE_TEXT = 'retrieval-sweep probe';

/**
 * Creates a server reranker for a resolved `rerank:<model>` entry with `baseUrl` and `protocol`, and (unless
 * `opts.probe` is false) sends one probe request (one pair).
 *
 * Throws `HarnessError('CONFIG_INVALID')` when `model` does not start with `rerank:`, or `baseUrl` or `protocol` is
 * missing or not valid; `HarnessError('RERANK_FAILED')` when `apiKeyEnv` names an unset variable or the probe fails
 * (401/403: the remedy names `apiKeyEnv`; 404: check baseUrl and protocol; refused: start the server), naming the URL
 * and the model, never the key.
 */
export async function createHttpReranker(spec: RerankSpec, opts: HttpRerankerOptions = {}): Promise<Reranker> {
  const bad = (message: string, remedy: string, key: string): HarnessError =>
    new HarnessError('CONFIG_INVALID', `rerank ${JSON.stringify(spec.model)}: ${message}`, { location: { path: `rerank.${key}` }, remedy });
  if (!spec.model.startsWith(RERANK_SERVER_PREFIX) || spec.model.length === RERANK_SERVER_PREFIX.length) {
    throw bad('a server reranker is written rerank:<model name the server serves>', 'write e.g. rerank:bge-reranker-base', 'model');
  }
  if (spec.baseUrl === undefined) throw bad('needs baseUrl, the server address', 'add baseUrl: http://127.0.0.1:8081', 'baseUrl');
  if (spec.protocol !== 'tei' && spec.protocol !== 'cohere') {
    throw bad(`needs protocol tei or cohere, got ${JSON.stringify(spec.protocol)}`, 'add protocol: tei (Text Embeddings Inference) or protocol: cohere (Cohere, Jina, vLLM)', 'protocol');
  }
  const { probe, maxRetries, ...httpOpts } = opts;
  const retries = maxRetries ?? DEFAULT_RERANK_MAX_RETRIES;
  const client = new HttpClient({
    ...httpOpts,
    baseUrl: spec.baseUrl,
    what: spec.model,
    errorCode: 'RERANK_FAILED',
    configPath: 'rerank',
    apiKeyEnv: spec.apiKeyEnv ?? null,
    timeoutMs: spec.timeoutMs,
    concurrency: spec.concurrency,
    maxRetries: retries,
  });
  const r = new HttpReranker({ ...spec, baseUrl: spec.baseUrl, protocol: spec.protocol }, client, retries);
  if (probe !== false) await r.request(RERANK_PROBE_TEXT, [RERANK_PROBE_TEXT]);
  return r;
}
