/**
 * The user documentation (the repository's docs/*.md) as pages and sections, read once at start-up.
 * The console serves the pages (rendered at /docs/<page>, concatenated in /llms-full.txt) and the MCP
 * endpoint searches their sections and lists them as resources: one reading, so that every surface
 * answers from the same text. A section is a heading and the text up to the next heading, whatever
 * its level; its anchor is GitHub's (the console's rendered pages carry the same ids).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Lexer } from 'marked';
import { slug } from './slug.js';

export interface DocSection {
  /** The page's file name, e.g. `errors.md`. */
  page: string;
  /** The heading's text, without Markdown; the page's title for the text before its first heading. */
  heading: string;
  /** GitHub's anchor of the heading ('' for the text before the first heading). */
  anchor: string;
  depth: number;
  /** The section's Markdown, its heading line included. */
  markdown: string;
}

export interface DocPage {
  /** The file name, e.g. `errors.md`; README.md is the docs' index. */
  name: string;
  title: string;
  markdown: string;
  sections: DocSection[];
}

const plain = (s: string) => s.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').trim();

/** A page cut at every heading; anchors are numbered as GitHub numbers repeated ones. */
export function splitSections(name: string, markdown: string): { title: string; sections: DocSection[] } {
  const seen = new Map<string, number>();
  const sections: DocSection[] = [];
  let title = '';
  let current: DocSection | null = null;
  for (const token of new Lexer({ gfm: true }).lex(markdown)) {
    if (token.type === 'heading') {
      const heading = plain((token as { text: string }).text);
      const depth = (token as { depth: number }).depth;
      if (depth === 1 && !title) title = heading;
      let anchor = slug((token as { text: string }).text);
      const n = seen.get(anchor) ?? 0;
      seen.set(anchor, n + 1);
      if (n > 0) anchor = `${anchor}-${n}`;
      current = { page: name, heading, anchor, depth, markdown: token.raw };
      sections.push(current);
      continue;
    }
    if (!current) {
      if (token.type === 'space') continue;
      current = { page: name, heading: '', anchor: '', depth: 0, markdown: '' };
      sections.push(current);
    }
    current.markdown += token.raw;
  }
  title ||= name.replace(/\.md$/, '');
  for (const s of sections) {
    if (!s.heading) s.heading = title;
    s.markdown = s.markdown.trim();
  }
  return { title, sections };
}

/**
 * Every docs/*.md page, in the order docs/README.md (the index) links them, README first and pages it
 * does not link last by name: the order a reader of /llms-full.txt meets them. A missing directory is
 * no pages (an installation without docs serves none).
 */
export function loadDocPages(docsDir: string): DocPage[] {
  if (!existsSync(docsDir)) return [];
  const names = readdirSync(docsDir).filter((n) => n.endsWith('.md')).sort();
  const index = names.includes('README.md') ? readFileSync(join(docsDir, 'README.md'), 'utf8') : '';
  const linked = [...index.matchAll(/\]\(([a-z0-9-]+\.md)\)/g)].map((m) => m[1]!);
  const order = [...new Set(['README.md', ...linked, ...names])].filter((n) => names.includes(n));
  return order.map((name) => {
    const markdown = readFileSync(join(docsDir, name), 'utf8');
    return { name, markdown, ...splitSections(name, markdown) };
  });
}
