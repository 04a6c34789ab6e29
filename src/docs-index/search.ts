/**
 * Full-text search over the documentation's sections: MiniSearch (BM25+ ranking, an inverted index
 * built once, field boosts, prefix and fuzzy matching; no dependencies) rather than our own scoring.
 * One document per section (a heading and its text), so that an answer points at the part of a page
 * that answers, not at a whole page.
 */
import MiniSearch from 'minisearch';
import { Lexer, type Tokens } from 'marked';
import type { DocPage, DocSection } from './pages.js';

export interface DocPassage {
  page: string;
  page_title: string;
  section: string;
  anchor: string;
  /** BM25+ score, higher first; comparable within one answer only. */
  score: number;
  /** The section's Markdown, cut to `maxChars` at a line end. */
  text: string;
  truncated: boolean;
}

export interface DocsSearch {
  search(query: string, limit: number): DocPassage[];
  readonly sections: number;
}

/** Words that say nothing about which section answers ("what does queue_full mean"). */
const STOP_WORDS = new Set(
  'a an and are as at be by can do does for from how i if in is it me my of on or should so that the this to was what when where which who why will with you your mean means'.split(' '),
);

/**
 * Words and identifiers: `queue_full` is indexed as itself and as `queue` and `full`, so that the
 * exact code ranks first and its words still match prose.
 */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  // Ratios such as 1:1 and 1:N are terms of art ("1:N search"), kept whole.
  for (const m of text.matchAll(/\b\d+:[\p{L}\d]+\b/gu)) out.push(m[0]);
  for (const word of text.split(/[^\p{L}\p{N}_]+/u)) {
    if (!word) continue;
    out.push(word);
    if (word.includes('_')) for (const part of word.split('_')) if (part) out.push(part);
  }
  return out;
}

/**
 * A query's terms: each once, stop words out, at most MAX_QUERY_TERMS. Every term is a walk of the
 * index (with prefix and fuzzy matching), so a 500-character query repeating words cost 42 ms of the
 * event loop before; a search is free for the caller, so its cost stays small and bounded.
 */
export const MAX_QUERY_TERMS = 24;
export function queryTerms(text: string): string[] {
  const terms = new Set<string>();
  for (const token of tokenize(text)) {
    const t = token.toLowerCase();
    if (!STOP_WORDS.has(t)) terms.add(t);
    if (terms.size === MAX_QUERY_TERMS) break;
  }
  return [...terms];
}

/** Prefix and fuzzy matching for words of ordinary length; a very long term is matched exactly. */
const prefix = (term: string) => term.length >= 4 && term.length <= 24;
const fuzzy = (term: string) => (term.length >= 6 && term.length <= 24 ? 0.15 : false);

function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  return STOP_WORDS.has(t) ? null : t;
}

/** One searchable passage: a section, or one entry of a definition list inside it. */
interface Passage {
  page: string;
  title: string;
  heading: string;
  anchor: string;
  markdown: string;
}

const plain = (s: string) => s.replace(/[`*]/g, '').trim();

/**
 * The entries of a section's definition lists, each a passage of its own besides the section: a table
 * row whose first cell is code (an error code, a variable: the header row is kept with it), and a
 * paragraph that opens with a bold term ("**1:N search** (who is this…)"). A reference page such as
 * the errors table is one long section, where a single row is what answers "what does queue_full mean".
 */
function entries(section: DocSection, title: string): Passage[] {
  const out: Passage[] = [];
  const at = (term: string, markdown: string) => out.push({ page: section.page, title, heading: `${section.heading}: ${plain(term)}`, anchor: section.anchor, markdown });
  for (const token of new Lexer({ gfm: true }).lex(section.markdown)) {
    if (token.type === 'table') {
      const table = token as Tokens.Table;
      const head = `| ${table.header.map((c) => c.text).join(' | ')} |\n|${table.header.map(() => '---|').join('')}`;
      for (const row of table.rows) {
        const first = row[0]?.text ?? '';
        if (/^`[^`]+`$/.test(first.trim())) at(first, `${head}\n| ${row.map((c) => c.text).join(' | ')} |`);
      }
    } else if (token.type === 'paragraph') {
      const m = /^\*\*([^*]{1,80})\*\*/.exec(token.raw);
      if (m) at(m[1]!, token.raw.trim());
    }
  }
  return out;
}

interface Indexed {
  id: number;
  heading: string;
  title: string;
  body: string;
}

export function createDocsSearch(pages: DocPage[], opts: { maxChars?: number } = {}): DocsSearch {
  const maxChars = opts.maxChars ?? 1500;
  const sections: Passage[] = pages.flatMap((p) => p.sections.flatMap((s) => [{ ...s, title: p.title }, ...entries(s, p.title)]));
  const index = new MiniSearch<Indexed>({
    fields: ['heading', 'title', 'body'],
    tokenize,
    processTerm,
    searchOptions: { boost: { heading: 3, title: 1.5, body: 1 }, prefix, fuzzy, combineWith: 'OR', tokenize: queryTerms },
  });
  index.addAll(sections.map((s, id) => ({ id, heading: s.heading, title: s.title, body: s.markdown })));
  return {
    sections: sections.length,
    search(query, limit) {
      // One passage per section: an entry that ranks above its section stands for it, and the reverse.
      const shown = new Set<string>();
      const hits = index.search(query).filter((hit) => {
        const s = sections[hit.id as number]!;
        const key = `${s.page}#${s.anchor}`;
        if (shown.has(key)) return false;
        shown.add(key);
        return true;
      });
      return hits.slice(0, limit).map((hit) => {
        const s = sections[hit.id as number]!;
        let text = s.markdown;
        const truncated = text.length > maxChars;
        if (truncated) {
          const cut = text.lastIndexOf('\n', maxChars);
          text = text.slice(0, cut > maxChars / 2 ? cut : maxChars) + '\n…';
        }
        return { page: s.page, page_title: s.title, section: s.heading, anchor: s.anchor, score: Math.round(hit.score * 1000) / 1000, text, truncated };
      });
    },
  };
}
