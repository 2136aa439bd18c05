/** Parts of a bench run beside the load rounds: limiter micro benchmarks and the router CPU profile. */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { summarizeProfiles, type ProfileSummary } from './cpu-profile.js';
import { ROOT, startRouter, tempDir } from './targets.js';
import type { MicroOutput } from './report.js';

/** Runs dist/bench/<name>.js as a child process; its output (or why it failed) is kept verbatim. */
export async function runMicro(name: string, timeoutMs: number): Promise<MicroOutput> {
  const file = join(ROOT, 'dist/bench', `${name}.js`);
  if (!existsSync(file)) return { name, ok: false, output: `${file} not found (not written yet); skipped` };
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => { out += d; });
  child.stderr.setEncoding('utf8').on('data', (d: string) => { out += d; });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  // The JSON line some micro benchmarks print repeats the table above it; keep the table only.
  const text = out.split('\n').filter((l) => !l.startsWith('{')).join('\n');
  return { name, ok: code === 0, output: code === 0 ? text : `${text}\nexited ${code ?? 'on timeout'}` };
}

/**
 * Starts a router with `node --cpu-prof` (workers inherit node's execArgv), loads it,
 * stops it (workers write their .cpuprofile on exit) and summarizes the profiles.
 */
export async function profileRouter(
  resourcesYaml: string, workers: number, env: NodeJS.ProcessEnv,
  load: (url: string) => Promise<unknown>,
): Promise<ProfileSummary> {
  const dir = tempDir('ir-bench-prof-');
  const router = await startRouter('router (profiled)', resourcesYaml, workers, env, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  try {
    await load(router.url);
  } finally {
    await router.proc.stop('SIGTERM');
  }
  return summarizeProfiles(dir);
}
