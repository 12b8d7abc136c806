/**
 * The one small HTTP layer every network client (embedding servers, rerankers) goes through: JSON POSTs with a
 * per-attempt timeout, retries with exponential backoff and jitter that honour `Retry-After`, bounded concurrency
 * (p-limit), optional requests- and tokens-per-minute limits, and an API key read from a named environment variable
 * and redacted from every error message.
 *
 * What is retried (each retry counts in {@link HttpStats.retries} and its wait in `retryWaitSeconds`):
 * - HTTP 408 (request timeout), 429 and every 5xx, honouring `Retry-After` (integer seconds or an HTTP-date) when present;
 * - a timeout (no complete response within `timeoutMs`, body included);
 * - a connection reset or closed mid-response (`ECONNRESET`, `EPIPE`, undici's `UND_ERR_SOCKET`, ...);
 * - a response the caller's `parse` rejects with {@link InvalidResponse} (wrong count, missing or duplicate `index`,
 *   wrong dimension, non-finite numbers), at most `invalidRetries` times (default 1): a server that glitches once is
 *   survived, one that is consistently wrong is an error, never a silent misalignment.
 *
 * Bounded: a response body is read chunk by chunk and the read stops, with an error naming the limit, as soon as it
 * (or its `Content-Length`) passes `maxResponseBytes` (default {@link DEFAULT_MAX_RESPONSE_BYTES}); that is never
 * retried (the same request would get the same answer).
 *
 * Never retried: any other 4xx (a wrong key, model or body is one clear error naming the URL and the status), a
 * refused connection or unknown host (nothing listens there: start the server or fix `baseUrl`).
 *
 * Uses Node's global `fetch` (undici) with `AbortSignal.timeout`. No globals: the clock, sleep, random source, fetch
 * and environment are options, so tests run without real waits.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import { HarnessError, type ErrorCode } from '../errors.js';

/** Time source and sleep; tests inject a fake one so backoff and `Retry-After` cost no real time. */
export interface HttpClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
}

/** The real clock: `Date.now()` and `setTimeout`. */
export const realClock: HttpClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Options of {@link HttpClient}. Times in milliseconds. */
export interface HttpClientOptions {
  /** Base URL; request paths are appended to it (`http://127.0.0.1:8080/v1` + `/embeddings`). Trailing `/` dropped. */
  baseUrl: string;
  /** Who is calling, for error messages: e.g. `openai:bge-small-en-v1.5`. */
  what: string;
  /** Error code of the caller's failures: `EMBEDDING_FAILED`, `RERANK_FAILED` or `LLM_FAILED`. */
  errorCode: ErrorCode;
  /** Config key path errors point at, e.g. `embeddings`. */
  configPath: string;
  /**
   * Name of the environment variable holding the API key, sent as `Authorization: Bearer <key>`. The value is never
   * written anywhere and is replaced by `***` in every error message. Unset = no `Authorization` header.
   */
  apiKeyEnv?: string | null;
  /** Environment to read `apiKeyEnv` from. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Per-attempt timeout, body included. Default 60000. */
  timeoutMs?: number;
  /** Retries after the first attempt for retryable failures. Default 5. */
  maxRetries?: number;
  /** Retries of a response `parse` rejects with {@link InvalidResponse} (within `maxRetries`). Default 1. */
  invalidRetries?: number;
  /** Requests in flight at once, ≥ 1. Default 4. */
  concurrency?: number;
  /** At most this many requests start in any 60 s window; null = unlimited. */
  requestsPerMinute?: number | null;
  /** At most this many tokens (estimated before, corrected by the response's usage after) in any 60 s window. */
  tokensPerMinute?: number | null;
  /** First backoff step; attempt a waits `d/2 + random()·d/2` with `d = min(backoffMaxMs, backoffBaseMs·2^a)`. Default 500. */
  backoffBaseMs?: number;
  /** Cap of one backoff wait. Default 30000. */
  backoffMaxMs?: number;
  /** Cap of one `Retry-After` wait (a longer one is waited this long). Default 120000. */
  maxRetryAfterMs?: number;
  /** Clock and sleep. Default {@link realClock}. */
  clock?: HttpClock;
  /** Uniform [0, 1) source for jitter. Default `Math.random` (only waits depend on it, never results). */
  random?: () => number;
  /** fetch implementation. Default the global `fetch`. */
  fetch?: typeof fetch;
  /**
   * Largest response body read, in bytes (integer ≥ 1). Default {@link DEFAULT_MAX_RESPONSE_BYTES}. A larger body
   * fails the request (kind `too-large`, not retried) without being held in memory.
   */
  maxResponseBytes?: number;
  /**
   * What the user lowers to make one request smaller, named in remedies: default `'batchSize'` (embedding and rerank
   * clients send many inputs per request); `null` for a client that sends one input per request (chat), whose
   * remedies then name only the keys it has.
   */
  batchKey?: string | null;
}

/**
 * Default cap of one response body: 256 MiB. The largest sane batch is an embedding answer of 2,048 inputs (OpenAI's
 * per-request cap) × 3,072 dimensions (text-embedding-3-large) as JSON numbers of about 20 characters each: 126 MB,
 * so the default has twice that; a reranker's answer is far smaller.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/** Counters since the client was created. */
export interface HttpStats {
  /** HTTP attempts sent (first tries and retries). */
  requests: number;
  /** Attempts that were retries. */
  retries: number;
  /** Seconds waited before retries (backoff and `Retry-After`). */
  retryWaitSeconds: number;
  /** Seconds waited for the requests- and tokens-per-minute limits. */
  throttleWaitSeconds: number;
}

/** Thrown by a caller's `parse` for a response of the wrong shape; retried `invalidRetries` times, then an error. */
export class InvalidResponse extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidResponse';
  }
}

/** How one attempt failed; the `cause` of the {@link HarnessError} thrown when a request finally fails. */
export class HttpFailure extends Error {
  /**
   * `status`: an HTTP error status; `timeout`; `network`: reset or refused; `invalid`: `parse` rejected the body;
   * `too-large`: the body passed `maxResponseBytes`.
   */
  readonly kind: 'status' | 'timeout' | 'network' | 'invalid' | 'too-large';
  /** HTTP status for `kind: 'status'` (and `invalid`: the 2xx status). */
  readonly status: number | undefined;
  /** The system error code of a network failure (`ECONNRESET`, `ECONNREFUSED`, ...). */
  readonly errno: string | undefined;
  /** Whether this kind of failure is retried. */
  readonly retryable: boolean;
  /** Milliseconds the server asked to wait (`Retry-After`), if it did. */
  readonly retryAfterMs: number | undefined;
  constructor(
    kind: HttpFailure['kind'],
    message: string,
    o: { status?: number; errno?: string; retryable: boolean; retryAfterMs?: number },
  ) {
    super(message);
    this.name = 'HttpFailure';
    this.kind = kind;
    this.status = o.status;
    this.errno = o.errno;
    this.retryable = o.retryable;
    this.retryAfterMs = o.retryAfterMs;
  }
}

/**
 * Ports `fetch` refuses to connect to ("bad ports", WHATWG Fetch standard §2.9 "port blocking"); a baseUrl naming one
 * is a configuration error, not a connection that keeps dropping.
 */
export const FETCH_BAD_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115,
  117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601,
  636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697,
  10080,
]);

/**
 * The port of `url` when it is one of {@link FETCH_BAD_PORTS} (an explicit port, or the scheme's default), else
 * undefined; undefined too for a string that is not a URL (the caller's own check names that). Used by the config
 * schemas, so `validate` refuses what `run` would (issue 24).
 */
export function fetchBadPort(url: string): number | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const port = u.port === '' ? undefined : Number(u.port);
  return port !== undefined && FETCH_BAD_PORTS.has(port) ? port : undefined;
}

/** Statuses retried besides 5xx. */
const RETRY_STATUS = new Set([408, 429]);
/** Network error codes that mean "nobody is there" and are not retried. */
const NO_RETRY_ERRNO = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_INVALID_URL']);

/**
 * `Retry-After` in milliseconds: an integer number of seconds (`"3"`), or an HTTP-date measured from `now` (a date
 * in the past is 0). Undefined when absent or unreadable. RFC 9110 §10.2.3.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}

/**
 * Backoff before retry number `attempt` (0 = the first retry): `d/2 + random()·d/2` with
 * `d = min(maxMs, baseMs·2^attempt)` ("equal jitter", AWS Architecture Blog, "Exponential Backoff And Jitter", 2015).
 */
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const d = Math.min(maxMs, baseMs * 2 ** attempt);
  return d / 2 + random() * (d / 2);
}

/** Replaces every occurrence of `secret` in `text` by `***` (no-op for an empty or missing secret). */
export function redact(text: string, secret: string | undefined): string {
  if (secret === undefined || secret.length === 0) return text;
  return text.split(secret).join('***');
}

/** The system error code inside a fetch failure (`TypeError: fetch failed` with `cause.code`), if any. */
function errnoOf(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 5 && cur !== null && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A sliding 60-second window of (start time, tokens) for the per-minute limits. */
class MinuteWindow {
  private readonly events: { t: number; tokens: number }[] = [];
  /** Serialises acquirers so concurrent requests do not pass the limit together. */
  private gate: Promise<void> = Promise.resolve();

  constructor(
    private readonly rpm: number | null,
    private readonly tpm: number | null,
    private readonly clock: HttpClock,
  ) {}

  /** Waits until a request of `tokens` fits; records it; returns the record (to correct tokens) and the ms waited. */
  acquire(tokens: number): Promise<{ rec: { t: number; tokens: number }; waitedMs: number }> {
    const run = this.gate.then(async () => {
      let waitedMs = 0;
      for (;;) {
        const now = this.clock.now();
        while (this.events.length > 0 && this.events[0].t <= now - 60_000) this.events.shift();
        const used = this.events.reduce((s, e) => s + e.tokens, 0);
        const rpmOk = this.rpm === null || this.events.length < this.rpm;
        // A single request larger than the whole budget is let through once the window is empty.
        const tpmOk = this.tpm === null || used + tokens <= this.tpm || this.events.length === 0;
        if (rpmOk && tpmOk) {
          const rec = { t: now, tokens };
          this.events.push(rec);
          return { rec, waitedMs };
        }
        let until = now + 1;
        if (!rpmOk) until = this.events[this.events.length - this.rpm!].t + 60_000;
        if (!tpmOk) {
          // wait until enough of the oldest events leave the window
          let free = used + tokens - this.tpm!;
          for (const e of this.events) {
            free -= e.tokens;
            until = Math.max(until, e.t + 60_000);
            if (free <= 0) break;
          }
        }
        const ms = Math.max(1, until - now);
        waitedMs += ms;
        await this.clock.sleep(ms);
      }
    });
    this.gate = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
}

/** Options of one {@link HttpClient.postJson} call. */
export interface PostOptions<T> {
  /** Checks and converts the parsed JSON body; throw {@link InvalidResponse} for a wrong shape. */
  parse: (json: unknown) => T;
  /** Estimated tokens of the request, for `tokensPerMinute`. Default 0. */
  tokens?: number;
  /** Tokens the response says were used (e.g. `usage.total_tokens`); corrects the per-minute estimate. */
  usedTokens?: (value: T) => number | undefined;
}

/**
 * A JSON-over-HTTP client for one server. Create one per provider; {@link postJson} may be called concurrently (at
 * most `concurrency` attempts in flight).
 */
export class HttpClient {
  readonly baseUrl: string;
  private readonly o: Required<Omit<HttpClientOptions, 'apiKeyEnv' | 'env' | 'requestsPerMinute' | 'tokensPerMinute'>>;
  private readonly key: string | undefined;
  private readonly apiKeyEnv: string | null;
  private readonly limit: LimitFunction;
  private readonly window: MinuteWindow | undefined;
  private readonly counters: HttpStats = { requests: 0, retries: 0, retryWaitSeconds: 0, throttleWaitSeconds: 0 };

  /**
   * Throws `HarnessError(errorCode)` when `apiKeyEnv` is named but that variable is unset or empty (the remedy says
   * to export it), and `HarnessError('CONFIG_INVALID')` when `baseUrl` is not an http(s) URL, names a port fetch refuses
   * ({@link FETCH_BAD_PORTS}), or `maxResponseBytes` is not a whole number ≥ 1.
   */
  constructor(opts: HttpClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    let url: URL | undefined;
    try {
      url = new URL(this.baseUrl);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      throw new HarnessError('CONFIG_INVALID', `${opts.configPath}.baseUrl ${JSON.stringify(opts.baseUrl)} is not an http(s) URL`, {
        location: { path: `${opts.configPath}.baseUrl` },
        remedy: 'write the server address with its scheme, e.g. http://127.0.0.1:8080/v1',
      });
    }
    this.o = {
      baseUrl: this.baseUrl,
      what: opts.what,
      errorCode: opts.errorCode,
      configPath: opts.configPath,
      timeoutMs: opts.timeoutMs ?? 60_000,
      maxRetries: opts.maxRetries ?? 5,
      invalidRetries: opts.invalidRetries ?? 1,
      concurrency: opts.concurrency ?? 4,
      backoffBaseMs: opts.backoffBaseMs ?? 500,
      backoffMaxMs: opts.backoffMaxMs ?? 30_000,
      maxRetryAfterMs: opts.maxRetryAfterMs ?? 120_000,
      clock: opts.clock ?? realClock,
      random: opts.random ?? Math.random,
      fetch: opts.fetch ?? globalThis.fetch,
      maxResponseBytes: opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      batchKey: opts.batchKey === undefined ? 'batchSize' : opts.batchKey,
    };
    if (!Number.isInteger(this.o.maxResponseBytes) || this.o.maxResponseBytes < 1) {
      throw new HarnessError('CONFIG_INVALID', `${opts.configPath}.maxResponseBytes (${this.o.maxResponseBytes}) must be a whole number ≥ 1`, {
        location: { path: `${opts.configPath}.maxResponseBytes` },
        remedy: `leave it out for the default (${DEFAULT_MAX_RESPONSE_BYTES} bytes)`,
      });
    }
    this.apiKeyEnv = opts.apiKeyEnv ?? null;
    if (this.apiKeyEnv !== null) {
      const env = opts.env ?? process.env;
      const key = env[this.apiKeyEnv];
      if (key === undefined || key.length === 0) {
        throw new HarnessError(opts.errorCode, `${opts.what}: the environment variable ${this.apiKeyEnv} (apiKeyEnv) is not set`, {
          location: { path: `${opts.configPath}.apiKeyEnv` },
          remedy: `export ${this.apiKeyEnv}=<your API key> before running, or drop apiKeyEnv for a server that needs no key`,
        });
      }
      this.key = key;
    }
    const port = url.port === '' ? undefined : Number(url.port);
    if (port !== undefined && FETCH_BAD_PORTS.has(port)) {
      throw new HarnessError('CONFIG_INVALID', `${opts.configPath}.baseUrl ${JSON.stringify(opts.baseUrl)} uses port ${port}, which fetch refuses to connect to (a blocked "bad port" of the Fetch standard)`, {
        location: { path: `${opts.configPath}.baseUrl` },
        remedy: 'serve the model on another port (8080, 8000, 11434 ...) and put that port in baseUrl',
      });
    }
    this.limit = pLimit(this.o.concurrency);
    const rpm = opts.requestsPerMinute ?? null;
    const tpm = opts.tokensPerMinute ?? null;
    this.window = rpm !== null || tpm !== null ? new MinuteWindow(rpm, tpm, this.o.clock) : undefined;
  }

  /** A copy of the counters. */
  stats(): HttpStats {
    return { ...this.counters };
  }

  /** `text` with the API key replaced by `***`. */
  redact(text: string): string {
    return redact(text, this.key);
  }

  /**
   * POSTs `body` as JSON to `baseUrl + path` and returns `parse(json)`, retrying as described in the module doc.
   * Throws `HarnessError(errorCode)` naming the URL, the model (`what`), the HTTP status or failure, with a remedy
   * and an {@link HttpFailure} as `cause`; the API key never appears in it.
   */
  async postJson<T>(path: string, body: unknown, opts: PostOptions<T>): Promise<T> {
    const url = this.baseUrl + path;
    const payload = JSON.stringify(body);
    let invalidLeft = this.o.invalidRetries;
    for (let attempt = 0; ; attempt++) {
      const failure = await this.limit(() => this.attempt(url, payload, opts));
      if (!(failure instanceof HttpFailure)) return failure;
      let retry = failure.retryable && attempt < this.o.maxRetries;
      if (retry && failure.kind === 'invalid') retry = invalidLeft-- > 0;
      if (!retry) throw this.toError(url, failure, attempt);
      const wait =
        failure.retryAfterMs !== undefined
          ? Math.min(failure.retryAfterMs, this.o.maxRetryAfterMs)
          : backoffMs(attempt, this.o.backoffBaseMs, this.o.backoffMaxMs, this.o.random);
      this.counters.retries++;
      this.counters.retryWaitSeconds += wait / 1000;
      await this.o.clock.sleep(wait);
    }
  }

  /** One attempt: the parsed value, or the {@link HttpFailure} describing what went wrong. */
  private async attempt<T>(url: string, payload: string, opts: PostOptions<T>): Promise<T | HttpFailure> {
    let rec: { t: number; tokens: number } | undefined;
    if (this.window) {
      const got = await this.window.acquire(opts.tokens ?? 0);
      rec = got.rec;
      this.counters.throttleWaitSeconds += got.waitedMs / 1000;
    }
    this.counters.requests++;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.key !== undefined) headers.authorization = `Bearer ${this.key}`;
    let status = 0;
    let text: string | HttpFailure;
    let retryAfter: string | null = null;
    try {
      const res = await this.o.fetch(url, {
        method: 'POST',
        headers,
        body: payload,
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      status = res.status;
      retryAfter = res.headers.get('retry-after');
      text = await readCapped(res, this.o.maxResponseBytes);
    } catch (e) {
      const name = (e as { name?: unknown } | null)?.name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        return new HttpFailure('timeout', `no complete response within ${this.o.timeoutMs} ms`, { retryable: true });
      }
      const errno = errnoOf(e);
      const detail = this.redact(errno ?? (e instanceof Error ? e.message : String(e)));
      return new HttpFailure('network', `connection failed (${detail})`, {
        ...(errno !== undefined ? { errno } : {}),
        retryable: errno === undefined || !NO_RETRY_ERRNO.has(errno),
      });
    }
    if (text instanceof HttpFailure) return text;
    if (status < 200 || status > 299) {
      const snippet = this.redact(text.replace(/\s+/g, ' ').trim().slice(0, 300));
      const ra = parseRetryAfter(retryAfter, this.o.clock.now());
      return new HttpFailure('status', `HTTP ${status}${snippet ? `: ${snippet}` : ''}`, {
        status,
        retryable: status >= 500 || RETRY_STATUS.has(status),
        ...(ra !== undefined ? { retryAfterMs: ra } : {}),
      });
    }
    let value: T;
    try {
      value = opts.parse(JSON.parse(text) as unknown);
    } catch (e) {
      const msg = e instanceof InvalidResponse ? e.message : `response is not the expected JSON (${e instanceof Error ? e.message : String(e)})`;
      return new HttpFailure('invalid', this.redact(msg), { status, retryable: true });
    }
    if (rec && opts.usedTokens) {
      const used = opts.usedTokens(value);
      if (used !== undefined && Number.isFinite(used) && used >= 0) rec.tokens = used;
    }
    return value;
  }

  /** The final error for a request that failed `attempt + 1` times. */
  private toError(url: string, f: HttpFailure, attempt: number): HarnessError {
    const tries = attempt + 1;
    const after = tries > 1 ? ` after ${tries} attempts` : '';
    const message = `${this.o.what} at ${url}: ${f.message}${after}`;
    return new HarnessError(this.o.errorCode, this.redact(message), {
      location: { path: this.o.configPath },
      remedy: this.remedyFor(f),
      cause: f,
    });
  }

  /** What the user should do about a failure. */
  private remedyFor(f: HttpFailure): string {
    const key = this.apiKeyEnv;
    const batch = this.o.batchKey;
    if (f.kind === 'status') {
      const s = f.status ?? 0;
      if (s === 401 || s === 403) {
        return key !== null
          ? `the server refused the API key: put a valid key in the environment variable ${key} (apiKeyEnv)`
          : 'the server wants an API key: set apiKeyEnv to the name of an environment variable that holds it';
      }
      if (s === 404) return 'check baseUrl (OpenAI-style servers need the /v1 suffix, e.g. http://127.0.0.1:8080/v1) and the model name the server serves';
      if (s === 400 || s === 422)
        return batch !== null
          ? `the server rejected the request: check the model name, dimensions and ${batch} (servers cap inputs per request and their length)`
          : 'the server rejected the request: check the model name and the server log (the prompt may exceed its context length)';
      if (s === 429) return 'the server kept rate-limiting: lower concurrency or set requestsPerMinute / tokensPerMinute';
      if (s >= 500) return `the server kept failing: check its log; lower ${batch !== null ? `${batch} or ` : ''}concurrency if it runs out of memory`;
      return 'check baseUrl, the model name and the server log';
    }
    if (f.kind === 'timeout') return `the server is too slow: raise timeoutMs${batch !== null ? ` or lower ${batch}` : ' or lower concurrency'}`;
    if (f.kind === 'too-large')
      return batch !== null
        ? `lower ${batch} (fewer inputs per request), or raise ${this.o.configPath}.maxResponseBytes if answers this large are expected`
        : `the server answered with more than ${this.o.maxResponseBytes} bytes for one prompt: check that baseUrl points at a chat server`;
    if (f.kind === 'network') {
      return f.errno !== undefined && NO_RETRY_ERRNO.has(f.errno)
        ? `nothing answers at ${this.baseUrl}: start the server (see docs/integrations.md) or fix baseUrl`
        : 'the connection kept dropping: check the server and any proxy between; lower concurrency';
    }
    return 'the server answered with the wrong shape: check that baseUrl points at a server of this protocol';
  }
}

/**
 * The body of `res` as UTF-8 text, read chunk by chunk, or a `too-large` {@link HttpFailure} as soon as the bytes (or a
 * declared `Content-Length`) pass `max`; the rest of the stream is then cancelled, so at most `max` bytes plus one
 * chunk are ever held. Network errors while reading propagate (the caller maps them).
 */
async function readCapped(res: Response, max: number): Promise<string | HttpFailure> {
  const tooLarge = (n: string) =>
    new HttpFailure('too-large', `the response body was too large: ${n} bytes, more than the limit of ${max} bytes (maxResponseBytes)`, { retryable: false });
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => undefined);
    return tooLarge(String(declared));
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => undefined);
      return tooLarge(`over ${total}`);
    }
    parts.push(value);
  }
  return Buffer.concat(parts, total).toString('utf8');
}
