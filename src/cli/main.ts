/**
 * `facecompute <command>`: one binary for every process of the service (contract §1).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EXIT_LISTEN_FAILED, isListenError } from '../http/listen.js';
import { USAGE } from './usage.js';


async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return (await import('./serve.js')).run(rest);
    case 'gateway':
      return (await import('../gateway/main.js')).run(rest);
    case 'mcp':
      return (await import('../mcp/main.js')).run(rest);
    case 'console':
      return (await import('../console/main.js')).run(rest);
    case 'model-server':
      return (await import('../model-server/main.js')).run(rest);
    case 'models':
      return (await import('../models/cli.js')).run(rest);
    case 'debug':
      return (await import('./debug.js')).run(rest);
    case 'bench': {
      // Development code, kept out of the service's bundle: the tsc build of bench/ when there is one,
      // else its sources (a checkout run through tsx). A computed path, so that esbuild leaves it alone.
      const { PACKAGE_ROOT } = await import('../package-root.js');
      const built = join(PACKAGE_ROOT, 'dist', 'bench', 'run.js');
      const entry = existsSync(built) ? built : join(PACKAGE_ROOT, 'bench', 'run.ts');
      return ((await import(pathToFileURL(entry).href)) as { run(args: string[]): Promise<number> }).run(rest);
    }
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
      return 2;
  }
}

// A failed command exits at once: listeners that did bind, database pools or a child's pipes would
// otherwise keep a half-started process alive (each command has closed what it could already).
main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    // ConfigError, ListenError and the like carry a message meant for the operator; anything else is a bug.
    process.stderr.write(`facecompute: ${err instanceof Error ? err.message : String(err)}\n`);
    // A refusal that must not be retried carries its own exit status (src/errors/exit-codes.ts).
    const own = (err as { exitCode?: unknown } | null)?.exitCode;
    process.exit(isListenError(err) ? EXIT_LISTEN_FAILED : typeof own === 'number' ? own : 1);
  },
);
