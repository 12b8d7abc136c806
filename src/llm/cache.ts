/**
 * Where a chat model's answers are kept, so that a rerun of `judge` or `generate` sends no request for what it asked
 * before, and an interrupted run resumes (each answer is committed as it arrives: kill -9 loses at most the requests
 * in flight).
 *
 * - File: `<cacheDir>/chat.sqlite` (its own file and schema version, opened with src/store/sqlite.ts: WAL journal,
 *   busy timeout, every write in a `BEGIN IMMEDIATE` transaction, so two runs can share it).
 * - Key ({@link chatCacheKey}): sha256 over the base URL, the server's model name, the temperature, the seed, the
 *   answer-token cap, the sha256 of the prompt template and the sha256 of each value filled into it (for the judge: the
 *   question text and the passage text). Any of them changing asks again.
 * - Value: the answer text exactly as received, and its token counts. Only answers that parsed are stored; an
 *   unparsable one is asked again on the next run.
 * - Nothing else is stored: no header, no API key.
 */
import { sha256Text } from '../embed/hash.js';
import { cacheError as sqliteCacheError, openSqliteCache, type Database } from '../store/sqlite.js';
import type { ChatAnswer } from './chat.js';

/** Bump when the table layout changes; a mismatch recreates the table. */
export const CHAT_CACHE_SCHEMA_VERSION = 1;

/** What identifies one question put to a model. */
export interface ChatCacheKeyParts {
  baseUrl: string;
  /** Model name as sent to the server. */
  model: string;
  temperature: number;
  seed: number | null;
  maxTokens: number | null;
  /** sha256 hex of the prompt template text. */
  promptSha: string;
  /** The values filled into the template, in placeholder order (hashed, never stored). */
  inputs: readonly string[];
}

/** sha256 hex of `[baseUrl, model, temperature, seed, maxTokens, promptSha, sha256(input)...]` as JSON. */
export function chatCacheKey(p: ChatCacheKeyParts): string {
  return sha256Text(JSON.stringify([p.baseUrl, p.model, p.temperature, p.seed, p.maxTokens, p.promptSha, ...p.inputs.map(sha256Text)]));
}

/** The parts of a {@link ChatCacheKeyParts} that belong to the client: where, which model, how it samples. */
export interface ChatKeySource {
  readonly baseUrl: string;
  readonly serverModel: string;
  readonly temperature: number;
  readonly seed: number | null;
  readonly maxTokens: number | null;
}

/**
 * The cache key of one prompt sent by `client`: {@link chatCacheKey} over the client's address, model and sampling,
 * the template's sha256 hex `promptSha`, and the values filled into it in placeholder order. The judge and the question
 * generator key their answers through this one function, so an answer cached by one is found by the other's same
 * question.
 */
export function answerKey(client: ChatKeySource, promptSha: string, inputs: readonly string[]): string {
  return chatCacheKey({
    baseUrl: client.baseUrl,
    model: client.serverModel,
    temperature: client.temperature,
    seed: client.seed,
    maxTokens: client.maxTokens,
    promptSha,
    inputs,
  });
}

/** Answers on SQLite. One instance per process. */
export class ChatCache {
  readonly file: string;
  private readonly db: Database;
  /** Keys found by {@link get} on this connection. */
  hits = 0;
  /** Keys not found by {@link get} on this connection. */
  misses = 0;

  private constructor(file: string, db: Database) {
    this.file = file;
    this.db = db;
  }

  /**
   * Opens (creating folders and file) the cache at `file`.
   * @throws HarnessError `CACHE_FAILED` naming the file.
   */
  static open(file: string): ChatCache {
    const { file: abs, db } = openSqliteCache(file, {
      label: 'chat cache',
      version: CHAT_CACHE_SCHEMA_VERSION,
      onSchemaMismatch: (conn) => conn.exec('DROP TABLE IF EXISTS answers'),
      createTables: (conn) =>
        conn.exec(
          'CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, ' +
            'prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL) WITHOUT ROWID',
        ),
    });
    return new ChatCache(abs, db);
  }

  /** The stored answer of `key`, or undefined. @throws HarnessError `CACHE_FAILED`. */
  get(key: string): ChatAnswer | undefined {
    let row: { text: string; prompt_tokens: number; completion_tokens: number } | undefined;
    try {
      row = this.db.prepare('SELECT text, prompt_tokens, completion_tokens FROM answers WHERE key = ?').get(key) as typeof row;
    } catch (e) {
      throw sqliteCacheError('chat cache', this.file, 'read failed', e);
    }
    if (row === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    return { text: row.text, promptTokens: row.prompt_tokens, completionTokens: row.completion_tokens };
  }

  /** Stores (or replaces) an answer, committed before returning. @throws HarnessError `CACHE_FAILED`. */
  put(key: string, model: string, a: ChatAnswer): void {
    try {
      this.db
        .prepare(
          'INSERT INTO answers (key, model, text, prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?, ?) ' +
            'ON CONFLICT (key) DO UPDATE SET text = excluded.text, prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens',
        )
        .run(key, model, a.text, a.promptTokens, a.completionTokens);
    } catch (e) {
      throw sqliteCacheError('chat cache', this.file, 'write failed', e);
    }
  }

  /** Closes the connection. Idempotent. */
  close(): void {
    if (this.db.open) this.db.close();
  }
}
