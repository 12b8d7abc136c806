/**
 * A real HTTP server inside the test process (node:http on 127.0.0.1, a free port) that speaks the three server
 * protocols the harness uses, with deterministic answers and injectable faults:
 *
 * - `POST /v1/embeddings` (OpenAI): `{model, input: string[], dimensions?}` → `{data: [{object, index, embedding}],
 *   model, usage: {prompt_tokens, total_tokens}}`. The vector is a hashed bag of words (see {@link fakeEmbedding}),
 *   deliberately not normalised, so retrieval over it is meaningful (it behaves like keyword overlap).
 * - `POST /rerank` (Text Embeddings Inference): `{query, texts}` → `[{index, score}]`, sorted by score descending as TEI
 *   does.
 * - `POST /v1/rerank` (Cohere, Jina, vLLM): `{model, query, documents}` → `{results: [{index, relevance_score}]}`,
 *   sorted by score descending.
 * - `POST /v1/chat/completions` (OpenAI chat): `{model, messages}` → `{choices: [{message: {content}}], usage}`, the
 *   content worked out from the last message by {@link fakeChatAnswer} (a judge grade from word overlap, generated
 *   questions from the passage's sentences, `pong` to the probe).
 *
 * Faults are taken from the front of `server.faults`, one per request, in arrival order; with the queue empty every
 * request is answered correctly. The server is started and stopped inside the test that uses it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One injected fault, applied to one request. */
export type Fault =
  /** Answer with this status (and `Retry-After` when given) instead of the real answer. */
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  /** Answer correctly, but only after `ms` milliseconds (past the client's timeout). */
  | { kind: 'slow'; ms: number }
  /** Destroy the connection after reading the request, without a response. */
  | { kind: 'reset' }
  /** Leave the last item out of the answer. */
  | { kind: 'wrong-count' }
  /** Return the items in reverse order of `index` (valid: the client must reorder by `index`). */
  | { kind: 'shuffle' }
  /** Give the second item the first item's `index`. */
  | { kind: 'duplicate-index' }
  /** Drop the last component of the first vector. */
  | { kind: 'wrong-dimension' }
  /** Put a non-finite number into the first vector or score (sent as a huge literal that parses to Infinity). */
  | { kind: 'non-finite' }
  /** No fault: answer correctly (spaces faults apart in the queue). */
  | { kind: 'none' }
  /** Chat only: answer with this content instead of the real answer (an unparsable answer, a grade out of range). */
  | { kind: 'answer'; content: string };

/** What the server saw of one request. */
export interface RecordedRequest {
  path: string;
  /** The `Authorization` header as sent, or undefined. */
  authorization: string | undefined;
  body: Record<string, unknown>;
  /** The fault applied to this request, if any. */
  fault: Fault['kind'] | undefined;
}

/** Options of {@link startFakeServer}. */
export interface FakeServerOptions {
  /** Embedding length when the request names no `dimensions`. Default 64. */
  dimensions?: number;
  /** When set, a request without `Authorization: Bearer <apiKey>` gets 401 with a body naming the key it was sent. */
  apiKey?: string;
  /** Faults for the first requests, in order. */
  faults?: Fault[];
  /** When set, only requests for which it returns true take a fault from the queue (e.g. not a probe). */
  faultFilter?: (path: string, body: Record<string, unknown>) => boolean;
  /** When set, an embeddings or chat request naming another model gets 404 `model not found`. */
  models?: string[];
}

/** A running fake server. */
export interface FakeServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Every request received, in arrival order. */
  requests: RecordedRequest[];
  /** Pending faults (mutable: push more between calls). */
  faults: Fault[];
  /** Stops listening and drops open connections. */
  close(): Promise<void>;
}

/** Lowercase word tokens: runs of letters and digits. */
export function fakeTokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** FNV-1a 32-bit hash of a string's UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * The deterministic vector of `text`: for each word token, component `h mod d` gains +1 or −1 (sign from bit 31 of
 * the FNV-1a hash `h`). Not normalised. An empty text gives the zero vector.
 */
export function fakeEmbedding(text: string, d: number): number[] {
  const v = new Array<number>(d).fill(0);
  for (const t of fakeTokens(text)) {
    const h = fnv1a(t);
    v[h % d] += h & 0x80000000 ? -1 : 1;
  }
  return v;
}

/** The deterministic rerank score: shared distinct words / sqrt(1 + words of the text). */
export function fakeRerankScore(query: string, text: string): number {
  const q = new Set(fakeTokens(query));
  const words = fakeTokens(text);
  const shared = new Set(words.filter((w) => q.has(w))).size;
  return shared / Math.sqrt(1 + words.length);
}

/**
 * The fake chat model's answer to one user message:
 * - `ping` → `pong`;
 * - a judge prompt (holding `##final score`, with lines `Question: ...` and `Passage: ...`): grade = the number of
 *   distinct words of 4 or more letters the question shares with the passage, capped at 3, as
 *   `Reasoning...\n##final score: <grade>`;
 * - a generation prompt (holding `"questions"`, the passage between `<passage>` lines and `Write <n> different`):
 *   `{"questions": [...]}` with n questions, question i = the first 6 words of sentence i (mod the sentence count)
 *   followed by `?`, after a line of chatter;
 * - anything else → `I cannot help with that.`
 */
export function fakeChatAnswer(content: string): string {
  if (content === 'ping') return 'pong';
  if (content.includes('##final score')) {
    const q = /^Question: (.*)$/m.exec(content)?.[1] ?? '';
    const p = /^Passage: ([\s\S]*?)\n\n/m.exec(content)?.[1] ?? '';
    const long = (t: string) => new Set(fakeTokens(t).filter((w) => w.length >= 4));
    const pw = long(p);
    const shared = [...long(q)].filter((w) => pw.has(w)).length;
    return `M: the passage shares ${shared} words with the question.\n##final score: ${Math.min(3, shared)}`;
  }
  if (content.includes('"questions"')) {
    const passage = /<passage>\n([\s\S]*?)\n<\/passage>/.exec(content)?.[1] ?? '';
    const n = Number(/Write (\d+) different/.exec(content)?.[1] ?? '1');
    const sentences = passage.split(/(?<=[.!?])\s+/).filter((x) => fakeTokens(x).length > 0);
    const qs: string[] = [];
    for (let i = 0; i < n && sentences.length > 0; i++) qs.push(`${fakeTokens(sentences[i % sentences.length]).slice(0, 6).join(' ')}?`);
    return `Sure, here they are.\n${JSON.stringify({ questions: qs })}\nHope this helps {really}.`;
  }
  return 'I cannot help with that.';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

/** Applies the item-level faults to a list of items that carry `index`. */
function applyItemFault<T extends { index: number }>(items: T[], fault: Fault | undefined): T[] {
  if (fault === undefined) return items;
  if (fault.kind === 'wrong-count') return items.slice(0, -1);
  if (fault.kind === 'shuffle') return [...items].sort((a, b) => b.index - a.index);
  if (fault.kind === 'duplicate-index' && items.length > 1) {
    const out = [...items];
    const first = out.find((x) => x.index === 0) ?? out[0];
    out[out[0] === first ? 1 : 0] = { ...out[out[0] === first ? 1 : 0], index: first.index };
    return out;
  }
  return items;
}

/** JSON text; a NaN/Infinity placeholder becomes `1e999`, which JSON.parse reads as Infinity. */
function jsonWithInfinity(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? '__INF__' : v)).replace(
    /"__INF__"/g,
    '1e999',
  );
}

/** Starts a fake server on 127.0.0.1 (a free port). Close it inside the test. */
export async function startFakeServer(opts: FakeServerOptions = {}): Promise<FakeServer> {
  const dims = opts.dimensions ?? 64;
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [...(opts.faults ?? [])];
  const timers = new Set<NodeJS.Timeout>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      body = {};
    }
    const path = (req.url ?? '/').split('?')[0];
    const fault = opts.faultFilter === undefined || opts.faultFilter(path, body) ? faults.shift() : undefined;
    requests.push({ path, authorization: req.headers.authorization, body, fault: fault?.kind });
    const send = (status: number, payload: string, headers: Record<string, string> = {}): void => {
      if (res.destroyed || res.writableEnded) return;
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(payload);
    };
    if (opts.apiKey !== undefined && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      // Like some real servers, the error echoes the key it was sent.
      const sent = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      send(401, JSON.stringify({ error: { message: `Incorrect API key provided: ${sent}`, type: 'invalid_request_error' } }));
      return;
    }
    if (fault?.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'status') {
      send(fault.status, fault.body ?? JSON.stringify({ error: { message: `injected ${fault.status}` } }), {
        ...(fault.retryAfter !== undefined ? { 'retry-after': fault.retryAfter } : {}),
      });
      return;
    }
    let status = 200;
    let payload: string;
    if (path === '/v1/embeddings') {
      if (opts.models && !opts.models.includes(String(body.model))) {
        send(404, JSON.stringify({ error: { message: `model ${String(body.model)} not found` } }));
        return;
      }
      const input = Array.isArray(body.input) ? (body.input as unknown[]).map(String) : [String(body.input)];
      const d = typeof body.dimensions === 'number' ? body.dimensions : dims;
      let data = input.map((t, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(t, d) }));
      data = applyItemFault(data, fault);
      if (fault?.kind === 'wrong-dimension') data[0] = { ...data[0], embedding: data[0].embedding.slice(0, -1) };
      if (fault?.kind === 'non-finite') data[0] = { ...data[0], embedding: [Infinity, ...data[0].embedding.slice(1)] };
      const tokens = input.reduce((s, t) => s + fakeTokens(t).length, 0);
      payload = jsonWithInfinity({
        object: 'list',
        data,
        model: body.model,
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      });
    } else if (path === '/v1/chat/completions') {
      if (opts.models && !opts.models.includes(String(body.model))) {
        send(404, JSON.stringify({ error: { message: `The model \`${String(body.model)}\` does not exist.`, code: 'model_not_found' } }));
        return;
      }
      const messages = Array.isArray(body.messages) ? (body.messages as { content?: unknown }[]) : [];
      const content = String(messages[messages.length - 1]?.content ?? '');
      const answer = fault?.kind === 'answer' ? fault.content : fakeChatAnswer(content);
      payload = JSON.stringify({
        id: 'fake-chat',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
        usage: { prompt_tokens: fakeTokens(content).length, completion_tokens: fakeTokens(answer).length },
      });
    } else if (path === '/rerank' || path === '/v1/rerank') {
      const query = String(body.query);
      const texts = ((path === '/rerank' ? body.texts : body.documents) as unknown[] | undefined)?.map(String) ?? [];
      let items = texts
        .map((t, index) => ({ index, score: fakeRerankScore(query, t) }))
        .sort((a, b) => b.score - a.score || a.index - b.index);
      items = applyItemFault(items, fault);
      if (fault?.kind === 'non-finite' && items.length > 0) items[0] = { ...items[0], score: NaN };
      payload =
        path === '/rerank'
          ? jsonWithInfinity(items)
          : jsonWithInfinity({
              id: 'fake',
              results: items.map((x) => ({ index: x.index, relevance_score: x.score })),
              meta: { billed_units: { search_units: 1 } },
            });
    } else {
      status = 404;
      payload = JSON.stringify({ error: { message: `no route ${path}` } });
    }
    if (fault?.kind === 'slow') {
      const t = setTimeout(() => {
        timers.delete(t);
        send(status, payload);
      }, fault.ms);
      timers.add(t);
      return;
    }
    send(status, payload);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.destroyed) res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
