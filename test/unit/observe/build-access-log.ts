import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../../../', import.meta.url).pathname;

/**
 * Compiles the access-log modules (only those, so other work in progress cannot break the
 * build) into a fresh directory under node_modules/.cache, where `sonic-boom` still resolves.
 * Returns the directory (remove it when done) and the URLs of the compiled modules.
 */
export function buildAccessLog(): { dir: string; moduleUrl: string; formatUrl: string } {
  mkdirSync(join(root, 'node_modules/.cache'), { recursive: true }); // absent in a fresh clone
  const out = mkdtempSync(join(root, 'node_modules/.cache/access-log-test-'));
  execFileSync(join(root, 'node_modules/.bin/tsc'), [
    '--outDir', out, '--rootDir', join(root, 'src'),
    '--module', 'NodeNext', '--moduleResolution', 'NodeNext', '--target', 'ES2022',
    '--strict', '--skipLibCheck', '--types', 'node', '--declaration', 'false',
    join(root, 'src/observe/access-log.ts'),
  ], { cwd: root, stdio: 'pipe' });
  return {
    dir: out,
    moduleUrl: 'file://' + join(out, 'observe/access-log.js'),
    formatUrl: 'file://' + join(out, 'observe/access-log-format.js'),
  };
}
