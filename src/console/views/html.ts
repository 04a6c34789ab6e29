/**
 * A tagged template that escapes every interpolated value unless it is already `Html`, so that
 * user-supplied text (key names, emails) can never become markup.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Timestamps as people read them, in UTC so that every viewer sees the same value. */
export function when(iso: string | null): string {
  if (!iso) return '—';
  // Non-breaking inside the date and inside the time, so narrow cells wrap only between the two.
  return `${iso.slice(0, 10).replace(/-/g, '\u2011')} ${iso.slice(11, 16)}\u00a0UTC`;
}
