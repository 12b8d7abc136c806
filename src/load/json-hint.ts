/**
 * A readable reason for the JSON mistakes people make by hand in a JSON Lines file, where `JSON.parse`'s own message
 * ("Unexpected token ']', ..."funds.md",]}" is not valid JSON") names neither the mistake nor the column. Pure.
 */

/** One recognised mistake: what it is and where (1-based column in the line, counted in UTF-16 code units). */
export interface JsonHint {
  kind: 'trailing-comma';
  column: number;
  message: string;
}

/**
 * Finds a trailing comma: a `,` outside strings followed (after optional whitespace) by `]` or `}`, which JSON does
 * not allow (RFC 8259 §4-5) but JavaScript and JSON5 do. Strings are skipped with their escapes, so a comma inside
 * a question's text is never reported. Returns the first one, or null when the line has none.
 */
export function jsonSyntaxHint(line: string): JsonHint | null {
  let inString = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') {
      inString = true;
      continue;
    }
    if (ch !== ',') continue;
    let j = i + 1;
    while (j < line.length && (line[j] === ' ' || line[j] === '\t' || line[j] === '\r')) j++;
    if (line[j] === ']' || line[j] === '}') {
      const what = line[j] === ']' ? 'the last item of a list' : 'the last key of an object';
      return {
        kind: 'trailing-comma',
        column: i + 1,
        message: `a trailing comma at column ${i + 1}, after ${what} (before "${line[j]}"), which JSON does not allow`,
      };
    }
  }
  return null;
}
