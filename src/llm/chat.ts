/**
 * `openai-chat:<model>`: a language model behind OpenAI's chat completions protocol (`POST <baseUrl>/chat/completions`),
 * which OpenAI, vLLM, Ollama, LM Studio, llama.cpp's server and TGI all serve (docs/judging.md has command lines).
 *
 * Request: `{ model, messages: [{ role: "user", content }], temperature, seed?, max_tokens? }` (`seed` and
 * `max_tokens` only when set: some servers reject unknown fields). Response: `{ choices: [{ message: { content } }],
 * usage?: { prompt_tokens, completion_tokens } }`; anything else is an `InvalidResponse` (retried once by the HTTP
 * layer, then `LLM_FAILED`).
 *
 * Everything about the network is src/net/http.ts: per-attempt timeout, retries with backoff and `Retry-After`,
 * bounded concurrency, per-minute limits, the API key read from the variable `apiKeyEnv` names and redacted from
 * every error. {@link ChatClient.probe} sends one 1-token request so that a wrong key (401/403), a model the server
 * does not serve (404) or an address where nothing listens is one clear `LLM_FAILED` before any work.
 *
 * This module knows nothing of prompts or grades: it sends text and returns text, and counts tokens, requests,
 * retries, waits and (with prices) money.
 */
import { HarnessError } from '../errors.js';

/** Largest chat response body read (bytes): 1 MiB. A judge's or generator's answer is a few KB. */
export const CHAT_MAX_RESPONSE_BYTES = 1 << 20;
import { HttpClient, InvalidResponse, type HttpClientOptions } from '../net/http.js';

/** The prefix of a chat model name: `openai-chat:<model as the server names it>`. */
export const OPENAI_CHAT_PREFIX = 'openai-chat:';

/** Options of one chat model (all but `model`/`baseUrl` optional; defaults as documented). Times in milliseconds. */
export interface ChatOptions {
  /** `openai-chat:<model>`; the part after the prefix is sent as `model`. */
  model: string;
  /** Server address including the `/v1` suffix, e.g. `http://127.0.0.1:8000/v1`. */
  baseUrl: string;
  /** Name of the environment variable holding the API key (the key itself is never written or printed). */
  apiKeyEnv?: string | null;
  /** Requests in flight at once, ≥ 1. Default 4. */
  concurrency?: number;
  /** At most this many requests start in any 60 s window. Default unlimited. */
  requestsPerMinute?: number | null;
  /** At most this many tokens (estimated, then corrected by `usage`) in any 60 s window. Default unlimited. */
  tokensPerMinute?: number | null;
  /** Per-attempt timeout, body included. Default 120 000. */
  timeoutMs?: number;
  /** Retries after the first attempt for retryable failures (429, 5xx, timeouts, resets). Default 5. */
  maxRetries?: number;
  /** Sampling temperature, ≥ 0. Default 0 (the most repeatable answers a server gives). */
  temperature?: number;
  /** Sampling seed, sent only when set (servers that ignore it still answer). */
  seed?: number | null;
  /** `max_tokens` of the answer, sent only when set. */
  maxTokens?: number | null;
  /** Price in money units per 1,000 prompt tokens, for the cost line. */
  pricePer1kInput?: number | null;
  /** Price in money units per 1,000 completion tokens, for the cost line. */
  pricePer1kOutput?: number | null;
  /** First backoff step before a retry. Default 500 (tests use a few ms). */
  backoffBaseMs?: number;
  /** Cap of one backoff wait. Default 30 000. */
  backoffMaxMs?: number;
}

/** Test and wiring options of {@link ChatClient}; none changes an answer. */
export type ChatWiring = Pick<HttpClientOptions, 'env' | 'clock' | 'random' | 'fetch'>;

/** One answer of the model. */
export interface ChatAnswer {
  /** `choices[0].message.content` as sent. */
  text: string;
  /** `usage.prompt_tokens`, or an estimate (characters / 4) when the server reports none. */
  promptTokens: number;
  /** `usage.completion_tokens`, or an estimate when the server reports none. */
  completionTokens: number;
}

/** Counters since the client was created. */
export interface ChatStats {
  model: string;
  /** HTTP attempts sent (probe, first tries and retries). */
  requests: number;
  /** Attempts that were retries at the HTTP level (429, 5xx, timeouts, resets, malformed bodies). */
  retries: number;
  /** Seconds waited before retries and for the per-minute limits. */
  waitSeconds: number;
  /** Prompt tokens over all answers (from `usage`). */
  tokensIn: number;
  /** Completion tokens over all answers (from `usage`). */
  tokensOut: number;
  /** tokensIn/1000·pricePer1kInput + tokensOut/1000·pricePer1kOutput; null when no price is given. */
  cost: number | null;
}

/** Checks a chat completions body; throws {@link InvalidResponse} naming what is missing. */
export function parseChatResponse(json: unknown, promptChars: number): ChatAnswer {
  const choices = (json as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices) || choices.length === 0) throw new InvalidResponse('the response has no choices array');
  const content = (choices[0] as { message?: { content?: unknown } } | null)?.message?.content;
  if (typeof content !== 'string') throw new InvalidResponse('choices[0].message.content is not a string');
  const usage = (json as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  const pt = usage?.prompt_tokens;
  const ct = usage?.completion_tokens;
  return {
    text: content,
    promptTokens: typeof pt === 'number' && Number.isFinite(pt) ? pt : Math.ceil(promptChars / 4),
    completionTokens: typeof ct === 'number' && Number.isFinite(ct) ? ct : Math.ceil(content.length / 4),
  };
}

/** A chat model on an OpenAI-compatible server. Methods may be called concurrently. */
export class ChatClient {
  /** `openai-chat:<model>`. */
  readonly model: string;
  /** The model name sent to the server. */
  readonly serverModel: string;
  /** Base URL without a trailing `/`. */
  readonly baseUrl: string;
  readonly temperature: number;
  readonly seed: number | null;
  readonly maxTokens: number | null;
  /** Requests in flight at once (callers size their worker pools by it). */
  readonly concurrency: number;
  private readonly prices: { input: number | null; output: number | null };
  private readonly http: HttpClient;
  private tokensIn = 0;
  private tokensOut = 0;
  private probed: Promise<void> | undefined;

  /**
   * @throws HarnessError `CONFIG_INVALID` when `model` lacks the `openai-chat:` prefix or `baseUrl` is not an http(s)
   *   URL; `LLM_FAILED` when `apiKeyEnv` names an unset variable. Sends nothing (see {@link probe}).
   */
  constructor(opts: ChatOptions, wiring: ChatWiring = {}) {
    if (!opts.model.startsWith(OPENAI_CHAT_PREFIX) || opts.model.length === OPENAI_CHAT_PREFIX.length) {
      throw new HarnessError('CONFIG_INVALID', `model ${JSON.stringify(opts.model)} is not openai-chat:<model>`, {
        location: { path: 'model' },
        remedy: 'name the model as the server serves it with the prefix, e.g. --model openai-chat:qwen2.5:7b-instruct',
      });
    }
    this.model = opts.model;
    this.serverModel = opts.model.slice(OPENAI_CHAT_PREFIX.length);
    this.temperature = opts.temperature ?? 0;
    this.seed = opts.seed ?? null;
    this.maxTokens = opts.maxTokens ?? null;
    this.concurrency = opts.concurrency ?? 4;
    this.prices = { input: opts.pricePer1kInput ?? null, output: opts.pricePer1kOutput ?? null };
    this.http = new HttpClient({
      ...wiring,
      baseUrl: opts.baseUrl,
      what: opts.model,
      errorCode: 'LLM_FAILED',
      configPath: 'model',
      apiKeyEnv: opts.apiKeyEnv ?? null,
      timeoutMs: opts.timeoutMs ?? 120_000,
      maxRetries: opts.maxRetries ?? 5,
      concurrency: this.concurrency,
      requestsPerMinute: opts.requestsPerMinute ?? null,
      tokensPerMinute: opts.tokensPerMinute ?? null,
      // One chat answer is a grade line or a few questions: far below 1 MiB. A larger body is an error (never cached),
      // so a misbehaving server cannot fill the answer cache.
      maxResponseBytes: CHAT_MAX_RESPONSE_BYTES,
      // One prompt per request: there is no batch to lower.
      batchKey: null,
      ...(opts.backoffBaseMs !== undefined ? { backoffBaseMs: opts.backoffBaseMs } : {}),
      ...(opts.backoffMaxMs !== undefined ? { backoffMaxMs: opts.backoffMaxMs } : {}),
    });
    this.baseUrl = this.http.baseUrl;
  }

  /** The request body for one user message (exported shape for tests and the cache's documentation). */
  requestBody(content: string, maxTokens: number | null = this.maxTokens): Record<string, unknown> {
    const body: Record<string, unknown> = {
      model: this.serverModel,
      messages: [{ role: 'user', content }],
      temperature: this.temperature,
    };
    if (this.seed !== null) body.seed = this.seed;
    if (maxTokens !== null) body.max_tokens = maxTokens;
    return body;
  }

  /**
   * Sends one 1-token request (`"ping"`, `max_tokens: 1`) so that a wrong key, model or address fails here, before
   * any work. @throws HarnessError `LLM_FAILED` naming the URL, the status and the remedy (never the key).
   */
  async probe(): Promise<void> {
    await this.send('ping', 1);
  }

  /**
   * {@link probe} once per client (later calls share the first call's outcome): call it just before the first request
   * that is really needed, so a fully cached run sends nothing and a wrong key still fails before any work.
   */
  probeOnce(): Promise<void> {
    this.probed ??= this.probe();
    return this.probed;
  }

  /**
   * Sends `content` as one user message and returns the answer text (the API key, should a server echo it, replaced
   * by `***`) and token counts.
   * @throws HarnessError `LLM_FAILED` after the HTTP layer's retries (URL, model and status named; never the key).
   */
  async complete(content: string): Promise<ChatAnswer> {
    return this.send(content, this.maxTokens);
  }

  private async send(content: string, maxTokens: number | null): Promise<ChatAnswer> {
    const a = await this.http.postJson('/chat/completions', this.requestBody(content, maxTokens), {
      parse: (json) => parseChatResponse(json, content.length),
      tokens: Math.ceil(content.length / 4) + (maxTokens ?? 256),
      usedTokens: (r) => r.promptTokens + r.completionTokens,
    });
    this.tokensIn += a.promptTokens;
    this.tokensOut += a.completionTokens;
    // A server that echoes the key into its answer must not get it into the cache, the log or an output file.
    return { ...a, text: this.http.redact(a.text) };
  }

  /** `text` with the API key replaced by `***`. */
  redact(text: string): string {
    return this.http.redact(text);
  }

  /** A copy of the counters, with the money cost when prices were given. */
  stats(): ChatStats {
    const s = this.http.stats();
    const { input, output } = this.prices;
    const cost = input === null && output === null ? null : (this.tokensIn / 1000) * (input ?? 0) + (this.tokensOut / 1000) * (output ?? 0);
    return {
      model: this.model,
      requests: s.requests,
      retries: s.retries,
      waitSeconds: s.retryWaitSeconds + s.throttleWaitSeconds,
      tokensIn: this.tokensIn,
      tokensOut: this.tokensOut,
      cost,
    };
  }
}
