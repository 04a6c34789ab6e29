/**
 * The runnable examples of a Markdown document, as test/doc-examples.test.ts runs them: shell blocks,
 * and in the client libraries' READMEs also Python and TypeScript blocks (CLIENT_LANGUAGES). Every
 * fenced block in a language the caller runs runs, unless the line before its fence (blank lines
 * aside) marks it:
 *
 *   <!-- doc-test: skip (why) -->   not meant to run here (installs packages, starts the service, …);
 *                                   the reason is required, so that a skip is a decision with a why
 *   <!-- doc-test: env -->          assignments a reader sets to where their service listens
 *                                   (NAME=value lines and comments only); the test checks the values
 *                                   are the documented defaults and sets them to the live service
 *
 * Anything the extractor does not understand is an error rather than a silently skipped block: an
 * unknown directive, a marker with no shell block after it, a fence without a language, an
 * unterminated fence.
 */

export const SHELL_LANGUAGES: ReadonlySet<string> = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);
/** clients/*\/README.md: shell, plus Python (run with the client's venv) and TypeScript (run with tsx). */
export const CLIENT_LANGUAGES: ReadonlySet<string> = new Set([...SHELL_LANGUAGES, 'python', 'ts']);

export interface DocBlock {
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  mode: 'run' | 'skip' | 'env';
  reason?: string;
}

const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)/;
const MARKER = /^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$/;

export function shellBlocks(markdown: string, source = 'document', languages: ReadonlySet<string> = SHELL_LANGUAGES): DocBlock[] {
  const lines = markdown.split('\n');
  const out: DocBlock[] = [];
  let pending: { mode: 'skip' | 'env'; reason?: string; line: number } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const text = lines[i]!;
    const marker = MARKER.exec(text);
    if (marker) {
      if (pending) throw new Error(`${source}:${i + 1}: a second doc-test marker before a block (the first is on line ${pending.line})`);
      const directive = marker[1]!;
      const skip = /^skip\s*\((.+)\)$/.exec(directive);
      if (skip) pending = { mode: 'skip', reason: skip[1]!.trim(), line: i + 1 };
      else if (directive === 'env') pending = { mode: 'env', line: i + 1 };
      else throw new Error(`${source}:${i + 1}: unknown doc-test directive ${JSON.stringify(directive)} (use "skip (reason)" or "env")`);
      continue;
    }
    const fence = FENCE.exec(text);
    if (!fence) {
      if (pending && text.trim() !== '') throw new Error(`${source}:${pending.line}: a doc-test marker must be followed by a shell block, found ${JSON.stringify(text.slice(0, 60))}`);
      continue;
    }
    const [, indent, ticks, lang] = fence as unknown as [string, string, string, string];
    if (lang === '') throw new Error(`${source}:${i + 1}: a fenced block without a language; name it (sh, json, text, …) so the test knows whether to run it`);
    const body: string[] = [];
    let j = i + 1;
    const close = new RegExp(`^ {0,3}${ticks[0] === '`' ? '`' : '~'}{${ticks.length},}\\s*$`);
    for (; j < lines.length && !close.test(lines[j]!); j++) body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!);
    if (j >= lines.length) throw new Error(`${source}:${i + 1}: unterminated code fence`);
    if (languages.has(lang.toLowerCase())) {
      out.push({ line: i + 1, lang, code: body.join('\n'), mode: pending?.mode ?? 'run', ...(pending?.reason ? { reason: pending.reason } : {}) });
    } else if (pending) {
      throw new Error(`${source}:${pending.line}: a doc-test marker before a ${lang} block; markers are for the blocks this document runs (${[...languages].join(', ')})`);
    }
    pending = null;
    i = j;
  }
  if (pending) throw new Error(`${source}:${pending.line}: a doc-test marker at the end with no block after it`);
  return out;
}

/**
 * The assignments of an env block, `NAME=value` (optionally `export`), with trailing comments; any
 * other command in it is an error, since the test replaces the values rather than running the block.
 */
export function envAssignments(block: DocBlock): Map<string, string> {
  const vars = new Map<string, string>();
  for (const raw of block.code.split('\n')) {
    const text = raw.replace(/\s+#.*$/, '').trim();
    if (text === '' || text.startsWith('#')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S+)$/.exec(text);
    if (!m) throw new Error(`line ${block.line}: an env block holds only NAME=value lines, found ${JSON.stringify(raw)}`);
    vars.set(m[1]!, m[2]!.replace(/^(['"])(.*)\1$/, '$2'));
  }
  return vars;
}

export type Promise_ = Array<{ key: string; value?: string | number | boolean }>;

/**
 * What each `# {…}` comment (`// {…}` in TypeScript) in a block promises about an answer the block
 * prints: its top-level keys, and the literal values it spells out (strings, booleans, numbers; `…`
 * stands for "some value").
 */
export function promisedAnswers(block: DocBlock): Promise_[] {
  const out: Promise_[] = [];
  for (const line of block.code.split('\n')) {
    const m = /^\s*(?:#|\/\/)\s*(\{.*)$/.exec(line);
    if (!m) continue;
    // Top level only: nested objects and lists become "some value".
    let s = m[1]!.slice(1);
    let prev;
    do { prev = s; s = s.replace(/\{[^{}]*\}/g, '…').replace(/\[[^[\]]*\]/g, '…'); } while (s !== prev);
    const fields: Promise_ = [];
    for (const f of s.matchAll(/"([A-Za-z_]\w*)":\s*("(?:[^"\\]|\\.)*"|true|false|-?\d+(?:\.\d+)?|…|null)/g)) {
      const [, key, v] = f as unknown as [string, string, string];
      if (v === '…' || v === 'null') fields.push({ key });
      else if (v === 'true' || v === 'false') fields.push({ key, value: v === 'true' });
      else if (v.startsWith('"')) fields.push({ key, value: JSON.parse(v) as string });
      else fields.push({ key, value: Number(v) });
    }
    if (fields.length > 0) out.push(fields);
  }
  return out;
}

/** The JSON objects and arrays in a block's output, also when curl printed them with no newline between. */
export function jsonValues(output: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < output.length; i++) {
    const c = output[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"' && depth > 0) inString = true;
    else if (c === '{' || c === '[') {
      if (depth === 0) start = i;
      depth++;
    } else if ((c === '}' || c === ']') && depth > 0) {
      depth--;
      if (depth === 0) {
        try {
          values.push(JSON.parse(output.slice(start, i + 1)));
        } catch {
          // Not JSON after all (shell text with brackets); the checks only look at what parses.
        }
      }
    }
  }
  return values;
}

export function keeps(value: unknown, promise: Promise_): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const o = value as Record<string, unknown>;
  return promise.every(({ key, value: v }) => {
    if (!(key in o)) return false;
    if (v === undefined) return true;
    if (typeof v === 'number') return typeof o[key] === 'number' && Math.abs((o[key] as number) - v) <= 1e-6;
    return o[key] === v;
  });
}
