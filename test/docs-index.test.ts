/**
 * src/docs-index/ without a server: sections and their anchors (GitHub's, as the console renders
 * them), the terms a text is indexed under, and the bound on a query's terms (a search is free for the
 * caller, so its cost is held down: each distinct term once, at most MAX_QUERY_TERMS).
 */
import t from 'tap';
import { splitSections } from '../src/docs-index/pages.js';
import { MAX_QUERY_TERMS, queryTerms, tokenize } from '../src/docs-index/search.js';

t.test('a page is cut at every heading, anchors numbered as GitHub numbers repeats', async (t) => {
  const { title, sections } = splitSections('x.md', 'Intro text.\n\n# The `x` page\n\nA.\n\n## Use it\n\nB.\n\n### Use it\n\nC.\n');
  t.equal(title, 'The x page');
  t.same(
    sections.map((s) => [s.heading, s.anchor, s.depth]),
    [['The x page', '', 0], ['The x page', 'the-x-page', 1], ['Use it', 'use-it', 2], ['Use it', 'use-it-1', 3]],
  );
  t.equal(sections[2]!.markdown, '## Use it\n\nB.');
});

t.test('identifiers are indexed whole and by their parts; ratios whole', async (t) => {
  t.same(tokenize('a queue_full, then 1:N search'), ['1:N', 'a', 'queue_full', 'queue', 'full', 'then', '1', 'N', 'search']);
});

t.test('a query is at most MAX_QUERY_TERMS distinct terms, stop words out', async (t) => {
  t.same(queryTerms('What does queue_full mean? What does QUEUE_FULL mean?'), ['queue_full', 'queue', 'full']);
  const long = 'threshold verification embedding detector configuration deployment '.repeat(8);
  t.same(queryTerms(long), ['threshold', 'verification', 'embedding', 'detector', 'configuration', 'deployment'], 'repeats once');
  const many = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
  t.equal(queryTerms(many).length, MAX_QUERY_TERMS);
  t.equal(MAX_QUERY_TERMS, 24);
});
