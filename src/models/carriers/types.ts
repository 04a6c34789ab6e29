import type { ClientOptions } from './client.js';

/** What every registry client is run with: its environment (its own configuration) and limits. */
export interface DownloadOptions extends Omit<ClientOptions, 'cwd'> {
  /** The converters' Python, which runs pip. */
  python: string;
  /** npm's command; `npm` from PATH by default. */
  npm?: string;
}
