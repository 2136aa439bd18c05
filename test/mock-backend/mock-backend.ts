/**
 * Mock OpenAI-compatible backend (a model server pod) for the demo, e2e tests and benchmarks.
 *
 *   node dist/test/mock-backend/mock-backend.js --port 0 --name pod-a --latency-ms 20 --tokens-per-second 50
 *
 * Prints exactly one line on stdout once listening: `mock-backend listening on http://HOST:PORT`.
 * Exits with code 0 on SIGTERM/SIGINT. See mock-server.ts for routes and per-request headers,
 * mock-answers.ts for how the mock counts tokens, mock-options.ts for the flags.
 */

import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { MOCK_USAGE, parseMockArgs } from './mock-options.js';
import { startMockBackend } from './mock-server.js';

export { startMockBackend } from './mock-server.js';
export type { MockBackend, MockHooks, MockStats } from './mock-server.js';
export type { MockOptions } from './mock-options.js';

async function main(argv: readonly string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${MOCK_USAGE}\n`);
    return;
  }
  const options = parseMockArgs(argv);
  const backend = await startMockBackend(options);
  process.stdout.write(`mock-backend listening on ${backend.url}\n`);
  const stop = (): void => {
    backend.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

function isEntryPoint(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`mock-backend: ${message}\n`);
    process.exit(2);
  });
}
