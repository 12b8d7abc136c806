/**
 * The project's error vocabulary. Library code throws {@link HarnessError}; only `src/cli/main.ts` turns it into
 * an exit code (1 for the user's mistakes, 2 for our bugs, i.e. any other error).
 */

/** Stable machine-readable error codes. Decide on `code`, never on message text. */
export type ErrorCode =
  | 'CONFIG_INVALID'
  | 'CONFIG_NOT_FOUND'
  | 'DATASET_NOT_FOUND'
  | 'DATASET_EMPTY'
  | 'DOCUMENT_INVALID'
  | 'QUESTIONS_INVALID'
  | 'LABEL_INVALID'
  | 'QRELS_INVALID'
  | 'RUN_INVALID'
  | 'MEASURE_UNKNOWN'
  | 'EMBEDDING_UNKNOWN'
  | 'EMBEDDING_FAILED'
  | 'MODEL_NOT_FOUND'
  | 'CACHE_FAILED'
  | 'RESULTS_INVALID'
  | 'OUTPUT_INVALID'
  | 'RUN_FAILED'
  | 'RERANK_FAILED'
  | 'LLM_FAILED'
  | 'RETRIEVER_FAILED'
  | 'UNIT_STALLED'
  | 'RESOURCE_UNAVAILABLE'
  | 'USAGE';

/** Where in a file a problem is: a 1-based line, or a key path such as `chunking.overlap`. */
export interface ErrorLocation {
  /** File path as the user gave it (or as resolved). */
  file?: string;
  /** 1-based line number. */
  line?: number;
  /** 1-based column in the line (UTF-16 code units), when known: `file:line:column:`. */
  column?: number;
  /** Dotted key path inside a config or JSON object. */
  path?: string;
}

/**
 * A user-facing error: a code, a one-line message that names the file, line or key and the bad value, and a remedy.
 * `toString()` renders `file:line: message\n  remedy: ...`.
 */
export class HarnessError extends Error {
  readonly code: ErrorCode;
  readonly location: ErrorLocation;
  readonly remedy: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { location?: ErrorLocation; remedy?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HarnessError';
    this.code = code;
    this.location = options.location ?? {};
    this.remedy = options.remedy;
  }

  /** `file:line: message` (or `file: key.path: message`) followed by the remedy on its own line. */
  format(): string {
    const { file, line, column, path } = this.location;
    let where = '';
    if (file !== undefined) where += line !== undefined ? `${file}:${line}${column !== undefined ? `:${column}` : ''}: ` : `${file}: `;
    if (path !== undefined && !this.message.startsWith(path)) where += `${path}: `;
    return `${where}${this.message}${this.remedy ? `\n  remedy: ${this.remedy}` : ''}`;
  }
}

/** True when `e` is a {@link HarnessError}, optionally with the given code. */
export function isHarnessError(e: unknown, code?: ErrorCode): e is HarnessError {
  return e instanceof HarnessError && (code === undefined || e.code === code);
}
