/**
 * The labelling server of `retrieval-sweep label` (issue 20 §3): node:http on 127.0.0.1 only, a random token in the
 * address (any request without it gets 403), the page of src/label/page.ts, and a small JSON API. Every judgment is
 * appended to the judgments log with `openJudgmentLog` (written and fsynced) before the answer is sent, so the page
 * moves on only once the judgment is durable; a kill loses at most the pair on screen. A restart resumes at the first
 * pair (queue order) without a current grade by the assessor.
 *
 * API (every request carries the token as `?token=` or the `x-label-token` header; POST bodies are JSON, ≤ 64 KiB):
 * - `GET /` the page; `GET /api/state` the state ({@link LabelState});
 * - `POST /api/grade {pair, grade}`, `POST /api/skip {pair}`, `POST /api/note {pair, note}`, `POST /api/undo {}`
 *   (takes back this assessor's latest grade still standing and shows that pair again), `POST /api/merge {}`
 *   (merges the resolved labels into the labels file; src/label/merge.ts). Each answers with the new state.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { HarnessError } from '../errors.js';
import { loadDataset, corpusFingerprintOf, fingerprintCorpus } from '../load/dataset.js';
import { scanDocumentFolder } from '../load/documents.js';
import { agreement } from '../score/agreement.js';
import { foldJudgments, isModelAssessor, judgmentsLogPath, openJudgmentLog, pairKey, readPool, resolveLabels, type Judgment, type JudgmentLog, type PoolHeader, type PoolPair } from './formats.js';
import { checkLabelsFile, isQrelsFile, mergeLabelsFile, type MergeOutcome } from './merge.js';
import { labelPage } from './page.js';

/** The default grade scale (issue 20 §3): grade i is `DEFAULT_SCALE[i]`. */
export const DEFAULT_SCALE: readonly string[] = ['not relevant', 'related', 'highly relevant', 'perfectly relevant'];

/** Options of {@link startLabelServer}. */
export interface LabelServerOptions {
  /** Pool file (`pool` command). */
  pool: string;
  /** The dataset's labels file: questions.jsonl or a BEIR qrels `.tsv`; the log is `<labels>.judgments.jsonl`. */
  labels: string;
  /** Who judges; a non-empty name (`llm:` names are the judge's). */
  assessor: string;
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Names of the grades 0..n−1, 2 ≤ n ≤ 10; default {@link DEFAULT_SCALE}. */
  scale?: readonly string[];
  /** The token (tests); default 32 random hex characters. */
  token?: string;
  /** Clock in ms (tests); default Date.now. */
  now?: () => number;
}

/** Agreement of two assessors over the pool's pairs both graded. */
export interface PairAgreement {
  a: string;
  b: string;
  n: number;
  /** Linear-weighted Cohen's kappa (src/score/agreement.ts); NaN when undefined. */
  weightedKappa: number;
  kappa: number;
}

/** What `GET /api/state` answers. */
export interface LabelState {
  assessor: string;
  scale: readonly string[];
  total: number;
  /** Pairs of the pool with a current grade by this assessor. */
  graded: number;
  done: boolean;
  /** The pair on screen (null when every pair is graded). */
  pair: PoolPair | null;
  /** This assessor's current grade of the pair on screen, if any. */
  currentGrade: number | null;
  /** This assessor's notes on the pair on screen. */
  notes: string[];
  /** Estimated seconds left: the median time between this session's grades (each capped at 300 s) × pairs left. */
  etaSeconds: number | null;
  agreement: PairAgreement[];
  message?: string;
}

/** A running label server. */
export interface LabelServer {
  /** `http://127.0.0.1:<port>/?token=<token>` */
  url: string;
  port: number;
  token: string;
  header: PoolHeader;
  log: JudgmentLog;
  /** Warnings from opening the log (a cut last line moved aside). */
  warnings: readonly string[];
  state(): LabelState;
  /** Merges the resolved labels of the whole log into the labels file. */
  merge(): MergeOutcome;
  /** Stops accepting requests and closes the log. */
  close(): Promise<void>;
}

/** The dataset folder a labels file belongs to, when it sits in one: questions.jsonl beside docs/, or qrels/<split>.tsv under a BEIR root. */
export function datasetOfLabels(labels: string): { root: string; layout: 'folder' | 'beir'; split?: string } | undefined {
  const abs = path.resolve(labels);
  const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();
  if (isQrelsFile(abs)) {
    const root = path.dirname(path.dirname(abs));
    if (path.basename(path.dirname(abs)) === 'qrels' && existsSync(path.join(root, 'corpus.jsonl'))) return { root, layout: 'beir', split: path.basename(abs).replace(/\.tsv$/i, '') };
    return undefined;
  }
  const root = path.dirname(abs);
  return isDir(path.join(root, 'docs')) ? { root, layout: 'folder' } : undefined;
}

/**
 * The corpus fingerprint of the dataset the labels file belongs to (else of the pool's own dataset folder), and where.
 * @throws what the loaders throw (`DATASET_NOT_FOUND` for a folder that is gone).
 */
async function corpusOf(labels: string, header: PoolHeader): Promise<{ root: string; corpus: string }> {
  const ds = datasetOfLabels(labels);
  const root = ds?.root ?? header.dataset.root;
  if ((ds?.layout ?? (existsSync(path.join(root, 'corpus.jsonl')) ? 'beir' : 'folder')) === 'folder') {
    const scan = await scanDocumentFolder(path.join(root, 'docs'));
    return { root, corpus: fingerprintCorpus(scan.docs) };
  }
  const d = await loadDataset({ path: root, ...(ds?.split ? { split: ds.split } : {}), labels: 'keep', strictness: 'warn' });
  return { root, corpus: corpusFingerprintOf(d) };
}

/** Cohen's kappa (linear) for every two assessors who graded some of `pairs` (persons and models alike). */
export function poolAgreement(judgments: readonly Judgment[], pairs: readonly PoolPair[], scaleSize: number): PairAgreement[] {
  const folded = foldJudgments(judgments);
  const names = new Set<string>();
  const graded: Map<string, number>[] = [];
  let maxGrade = scaleSize - 1;
  for (const p of pairs) {
    const m = new Map<string, number>();
    for (const [who, s] of folded.get(pairKey(p)) ?? []) {
      if (s.grade === undefined) continue;
      m.set(who, s.grade);
      names.add(who);
      if (s.grade > maxGrade) maxGrade = s.grade;
    }
    graded.push(m);
  }
  const list = [...names].sort();
  const out: PairAgreement[] = [];
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      const both: [number, number][] = [];
      for (const m of graded) if (m.has(list[i]) && m.has(list[j])) both.push([m.get(list[i])!, m.get(list[j])!]);
      if (both.length === 0) continue;
      const a = agreement(both, { grades: maxGrade + 1, weights: 'linear' });
      out.push({ a: list[i], b: list[j], n: a.n, weightedKappa: a.weightedKappa, kappa: a.kappa });
    }
  }
  return out;
}

function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Starts the label server (module comment). Checks, before listening, that the pool's corpus fingerprint equals that
 * of the dataset the labels file belongs to (or, for a labels file outside a dataset folder, of the pool's dataset
 * folder), and opens the judgments log (recovering a line cut mid-write, with a warning).
 * @throws HarnessError `LABEL_INVALID` for a pool from another corpus (both fingerprints and folders named) or an
 *   invalid pool/log; `USAGE` for a bad assessor, scale or port, and for a port in use (named, with `--port 0`
 *   suggested); what `readPool` and the loaders throw.
 */
export async function startLabelServer(opts: LabelServerOptions): Promise<LabelServer> {
  const now = opts.now ?? Date.now;
  const scale = opts.scale ?? DEFAULT_SCALE;
  if (scale.length < 2 || scale.length > 10) throw new HarnessError('USAGE', `the grade scale needs 2 to 10 names, got ${scale.length}`, { remedy: 'pass e.g. --scale "not relevant,related,highly relevant,perfectly relevant"' });
  const assessor = opts.assessor.trim();
  if (assessor === '' || isModelAssessor(assessor)) throw new HarnessError('USAGE', `--assessor must be a person's name (not empty, not llm:...), got ${JSON.stringify(opts.assessor)}`, { remedy: 'pass --assessor alice' });
  const port = opts.port ?? 0;
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) throw new HarnessError('USAGE', `--port must be an integer from 0 to 65535, got ${String(port)}`, { remedy: 'pass --port 0 to pick a free port' });
  const labelsFile = path.resolve(opts.labels);
  // A wrong --labels fails now, not at the merge after the grading (a folder, a missing or unreadable file).
  checkLabelsFile(labelsFile);
  const { header, pairs } = readPool(opts.pool);
  const ds = await corpusOf(labelsFile, header);
  if (ds.corpus !== header.dataset.corpus) {
    throw new HarnessError(
      'LABEL_INVALID',
      `the pool was made from another corpus: ${opts.pool} names dataset ${header.dataset.name} (${header.dataset.root}, corpus ${header.dataset.corpus.slice(0, 12)}…), but the documents at ${ds.root} have corpus ${ds.corpus.slice(0, 12)}…`,
      { location: { file: opts.pool, line: 1 }, remedy: `pool the results of a sweep over ${ds.root} (retrieval-sweep pool RESULTS), or pass the labels file of ${header.dataset.root}` },
    );
  }
  const log = openJudgmentLog(judgmentsLogPath(labelsFile));
  const token = opts.token ?? randomBytes(16).toString('hex');
  const keys = pairs.map((p) => pairKey(p));
  const indexOf = new Map(keys.map((k, i) => [k, i] as const));
  const chunkLanding = header.sweepLevel === 'chunk' ? 'chunk' : 'evidence';

  // This assessor's current grades by pair index, and the stack of grades still standing (for undo), from the log.
  const current = new Map<number, number>();
  const stack: string[] = [];
  const applyOwn = (j: Judgment) => {
    if (j.assessor !== assessor) return;
    const k = pairKey(j);
    if (j.action === 'grade') stack.push(k);
    else if (j.action === 'undo') {
      const at = stack.lastIndexOf(k);
      if (at >= 0) stack.splice(at, 1);
    }
  };
  const refreshCurrent = (i: number) => {
    const s = foldJudgments(log.judgments.filter((j) => j.assessor === assessor && pairKey(j) === keys[i])).get(keys[i])?.get(assessor);
    if (s?.grade === undefined) current.delete(i);
    else current.set(i, s.grade);
  };
  for (const [k, byWho] of foldJudgments(log.judgments)) {
    const i = indexOf.get(k);
    const g = byWho.get(assessor)?.grade;
    if (i !== undefined && g !== undefined) current.set(i, g);
  }
  for (const j of log.judgments) applyOwn(j);

  const skipped = new Set<number>();
  const gradeTimes: number[] = [];
  const firstOpen = (from: number, avoidSkipped: boolean): number => {
    for (let i = from; i < pairs.length; i++) if (!current.has(i) && !(avoidSkipped && skipped.has(i))) return i;
    return -1;
  };
  const nextAfter = (i: number): number => {
    let n = firstOpen(i + 1, true);
    if (n < 0) n = firstOpen(0, true);
    if (n < 0) n = firstOpen(0, false);
    return n;
  };
  let cursor = firstOpen(0, false);

  const eta = (): number | null => {
    if (gradeTimes.length < 2) return null;
    const gaps: number[] = [];
    for (let i = 1; i < gradeTimes.length; i++) gaps.push(Math.min(300, (gradeTimes[i] - gradeTimes[i - 1]) / 1000));
    gaps.sort((a, b) => a - b);
    const mid = gaps.length >> 1;
    const median = gaps.length % 2 ? gaps[mid] : (gaps[mid - 1] + gaps[mid]) / 2;
    return median * (pairs.length - current.size);
  };
  const state = (message?: string): LabelState => {
    const pair = cursor >= 0 ? pairs[cursor] : null;
    const own = pair ? foldJudgments(log.judgments.filter((j) => j.assessor === assessor && pairKey(j) === keys[cursor])).get(keys[cursor])?.get(assessor) : undefined;
    return {
      assessor,
      scale,
      total: pairs.length,
      graded: current.size,
      done: cursor < 0,
      pair,
      currentGrade: pair ? (current.get(cursor) ?? null) : null,
      notes: own?.notes ?? [],
      etaSeconds: eta(),
      agreement: poolAgreement(log.judgments, pairs, scale.length),
      ...(message !== undefined ? { message } : {}),
    };
  };
  const judgment = (p: PoolPair, action: Judgment['action'], extra: Partial<Judgment> = {}): Judgment => ({
    v: 1,
    time: new Date(now()).toISOString(),
    assessor,
    action,
    qid: p.qid,
    doc: p.doc,
    ...(p.chunk !== undefined ? { chunk: p.chunk } : {}),
    start: p.start,
    end: p.end,
    corpus: header.dataset.corpus,
    ...extra,
  });
  const merge = (): MergeOutcome => mergeLabelsFile(labelsFile, resolveLabels(log.judgments), chunkLanding);

  const pairArg = (body: Record<string, unknown>): number => {
    const n = body.pair;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1 || n > pairs.length) throw new HttpError(400, `"pair" must be an integer from 1 to ${pairs.length}`);
    return n - 1;
  };
  const post = (route: string, body: Record<string, unknown>): LabelState => {
    switch (route) {
      case '/api/grade': {
        const i = pairArg(body);
        const g = body.grade;
        if (typeof g !== 'number' || !Number.isSafeInteger(g) || g < 0 || g >= scale.length) throw new HttpError(400, `"grade" must be an integer from 0 to ${scale.length - 1}`);
        const j = judgment(pairs[i], 'grade', { grade: g });
        log.append(j);
        applyOwn(j);
        current.set(i, g);
        skipped.delete(i);
        gradeTimes.push(now());
        cursor = nextAfter(i);
        return state();
      }
      case '/api/skip': {
        const i = pairArg(body);
        log.append(judgment(pairs[i], 'skip'));
        skipped.add(i);
        cursor = nextAfter(i);
        return state();
      }
      case '/api/note': {
        const i = pairArg(body);
        const note = body.note;
        if (typeof note !== 'string' || note.trim() === '' || note.length > 10_000) throw new HttpError(400, '"note" must be a non-empty string of at most 10,000 characters');
        log.append(judgment(pairs[i], 'note', { note }));
        cursor = i;
        return state('note saved');
      }
      case '/api/undo': {
        let k: string | undefined;
        for (let s = stack.length - 1; s >= 0 && k === undefined; s--) if (indexOf.has(stack[s])) k = stack[s];
        if (k === undefined) throw new HttpError(409, 'nothing to undo: no grade of yours in this pool is standing');
        const i = indexOf.get(k)!;
        const j = judgment(pairs[i], 'undo');
        log.append(j);
        applyOwn(j);
        refreshCurrent(i);
        cursor = i;
        return state(`undone: pair ${i + 1}`);
      }
      case '/api/merge': {
        const m = merge();
        return state(mergeMessage(m));
      }
      default:
        throw new HttpError(404, `no such endpoint: POST ${route}`);
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      const status = e instanceof HttpError ? e.status : 500;
      const msg = e instanceof HttpError ? e.message : isHarness(e) ? e.format() : `internal error: ${(e as Error)?.message ?? String(e)}`;
      send(res, status, { error: msg });
    });
  });
  let boundPort = port;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const given = url.searchParams.get('token') ?? (req.headers['x-label-token'] as string | undefined);
    if (!sameToken(given ?? undefined, token)) {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end('403 forbidden: open the address printed by `retrieval-sweep label` (it carries the token)\n');
      return;
    }
    const host = (req.headers.host ?? '').toLowerCase();
    if (host !== `127.0.0.1:${boundPort}` && host !== `localhost:${boundPort}`) throw new HttpError(403, `unexpected Host header ${JSON.stringify(host)}`);
    if (req.method === 'GET' && url.pathname === '/') {
      const nonce = randomBytes(16).toString('base64');
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
        'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      });
      res.end(labelPage(nonce));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/state') return send(res, 200, state());
    if (req.method === 'POST' && url.pathname.startsWith('/api/')) {
      if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'POST bodies must be application/json');
      const body = await readBody(req);
      return send(res, 200, post(url.pathname, body));
    }
    throw new HttpError(404, `no such page: ${req.method} ${url.pathname}`);
  };

  await new Promise<void>((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException) => {
      log.close();
      if (e.code === 'EADDRINUSE') {
        reject(new HarnessError('USAGE', `port ${port} on 127.0.0.1 is in use`, { remedy: 'pass --port 0 to pick a free port, or another --port', cause: e }));
      } else if (e.code === 'EACCES') {
        reject(new HarnessError('USAGE', `port ${port} on 127.0.0.1 needs privileges this user lacks`, { remedy: 'pass --port 0 to pick a free port, or a port above 1023', cause: e }));
      } else reject(e);
    };
    server.once('error', onError);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', onError);
      resolve();
    });
  });
  const addr = server.address();
  boundPort = typeof addr === 'object' && addr ? addr.port : port;
  let closed = false;
  return {
    url: `http://127.0.0.1:${boundPort}/?token=${token}`,
    port: boundPort,
    token,
    header,
    log,
    warnings: log.warnings,
    state: () => state(),
    merge,
    async close() {
      if (closed) return;
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      log.close();
    },
  };
}

/** One line saying what a merge did. */
export function mergeMessage(m: MergeOutcome): string {
  return (
    `merged into ${m.file}: ${m.added} added, ${m.unchanged} already there` +
    (m.logOnly > 0 ? `, ${m.logOnly} grade-0 chunk label(s) kept in the judgments log only` : '') +
    (m.conflicts.length > 0 ? `; ${m.conflicts.length} conflict(s) not written, listed in ${m.conflictsFile}` : '')
  );
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function isHarness(e: unknown): e is HarnessError {
  return e instanceof HarnessError;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(JSON.stringify(body));
}

function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (tooLarge) {
        // Drained, not kept, so the 413 can be answered; a client that keeps sending far past the limit is cut off.
        if (size > 16 << 20) req.destroy();
        return;
      }
      if (size > 65536) {
        tooLarge = true;
        parts.length = 0;
        reject(new HttpError(413, 'request body over 64 KiB'));
        return;
      }
      parts.push(c);
    });
    req.on('end', () => {
      try {
        const o = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as unknown;
        if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error('not an object');
        resolve(o as Record<string, unknown>);
      } catch {
        reject(new HttpError(400, 'the body must be a JSON object'));
      }
    });
    req.on('error', reject);
  });
}
