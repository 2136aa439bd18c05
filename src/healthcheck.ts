#!/usr/bin/env node
/**
 * The container image's HEALTHCHECK (deploy/Dockerfile): asks GET /healthz of the router running in
 * the same container, on the port it listens on however that was given (router-process.ts reads it
 * from the router process's command line and environment). Exit 0 when /healthz answers 200, else
 * 1 with the reason on stderr. `node dist/healthcheck.js [PID]`: the router's pid, found in /proc
 * when not given (PID 1, the image's ENTRYPOINT, or the first process running dist/cli.js).
 */
import { findRouterPid, processHealthTarget } from './config/router-process.js';

const TIMEOUT_MS = 2_000;

async function main(): Promise<number> {
  const given = process.argv[2];
  if (given !== undefined && !/^\d+$/.test(given)) return unhealthy(`expected a process id, got "${given}"`);
  const pid = given !== undefined ? Number(given) : findRouterPid();
  if (pid === null) return unhealthy('no router process (node …/cli.js) found in /proc');
  let url: string;
  try {
    url = processHealthTarget(pid).url;
  } catch (err) {
    return unhealthy((err as Error).message);
  }
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    await r.arrayBuffer();
    return r.status === 200 ? 0 : unhealthy(`${url} answered ${r.status}`);
  } catch (err) {
    return unhealthy(`${url}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`);
  }
}

function unhealthy(reason: string): number {
  process.stderr.write(`inference-router health check: ${reason}\n`);
  return 1;
}

void main().then((code) => { process.exitCode = code; });
