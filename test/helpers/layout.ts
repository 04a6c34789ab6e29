/**
 * What a page shows wrongly at the browser's width (console-layout, console-try): it scrolls sideways,
 * the header does not span the page, something is off the page, out of its card, or hidden in a box
 * that scrolls or clips sideways.
 */
import type { Page } from 'playwright-core';

export interface Problem {
  what: string;
  el: string;
}

/** What the page shows wrongly at this width, as a list (empty when it fits). */
export async function layoutProblems(page: Page, html: boolean): Promise<Problem[]> {
  return page.evaluate((html) => {
    const problems: { what: string; el: string }[] = [];
    // No named functions in here: tsx's keepNames would wrap them in a helper the page does not have.
    const doc = document.documentElement;
    if (doc.scrollWidth > innerWidth) problems.push({ what: `the page scrolls sideways: scrollWidth ${doc.scrollWidth} > innerWidth ${innerWidth}`, el: 'html' });
    if (!html) return problems;
    const header = document.querySelector('header');
    if (header && Math.abs(header.getBoundingClientRect().width - doc.clientWidth) > 0.5) {
      problems.push({ what: `the header is ${header.getBoundingClientRect().width} px wide in a ${doc.clientWidth} px page`, el: 'header' });
    }
    for (const el of document.querySelectorAll('body *')) {
      const style = getComputedStyle(el);
      if (style.display === 'none' || el.closest('.sr-only, .skip')) continue;
      const r = el.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue;
      // Visually hidden for screen readers only (a 1 px clipped box, like .sr-only): not shown, so not checked.
      let clipped = false;
      for (let a: Element | null = el; a && !clipped; a = a.parentElement) {
        const ar = a.getBoundingClientRect();
        clipped = ar.width <= 1 && ar.height <= 1 && getComputedStyle(a).overflow === 'hidden';
      }
      if (clipped) continue;
      const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.classList.length ? `.${[...el.classList].join('.')}` : ''} "${(el.textContent ?? '').trim().slice(0, 40)}"`;
      // Something hidden in a box that scrolls or clips sideways is as lost as something off-page.
      if (['auto', 'scroll', 'hidden'].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) {
        problems.push({ what: `its content is ${el.scrollWidth} px wide in a ${el.clientWidth} px box`, el: name });
      }
      if (r.right > innerWidth + 0.5 || r.left < -0.5) problems.push({ what: `off the page (${Math.round(r.left)}..${Math.round(r.right)} of ${innerWidth})`, el: name });
      const card = el.parentElement?.closest('.card, .alert');
      if (card) {
        const c = card.getBoundingClientRect();
        if (r.right > c.right + 0.5 || r.left < c.left - 0.5) problems.push({ what: `spills out of its ${card.className} (${Math.round(r.right)} > ${Math.round(c.right)})`, el: name });
      }
    }
    return problems;
  }, html);
}
