#!/usr/bin/env node
/**
 * The container image's HEALTHCHECK (deploy/Dockerfile): asks GET /healthz of the router running in
 * the same container, on the port it listens on however that was given (router-process.ts reads it
 * from the router process's command line and environment). Exit 0 when /healthz answers 200, else
 * 1 with the reason on stderr. `node dist/healthcheck.js [PID]`: the router's pid, found in /proc
 * when not given (PID 1, the image's ENTRYPOINT, or the first process running dist/cli.js).
 */
import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
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
    const status = await statusOf(url);
    return status === 200 ? 0 : unhealthy(`${url} answered ${status}`);
  } catch (err) {
    return unhealthy(`${url}: ${(err as Error).message}`);
  }
}

/**
 * The status of a GET of `url`, within TIMEOUT_MS. Over HTTPS the certificate is not checked: the
 * router asked is the one in this container, found by its process, and a certificate issued for the
 * names clients use seldom names the loopback address asked here.
 */
function statusOf(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const get = url.startsWith('https:') ? httpsGet : httpGet;
    const req = get(url, { timeout: TIMEOUT_MS, rejectUnauthorized: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

function unhealthy(reason: string): number {
  process.stderr.write(`inference-router health check: ${reason}\n`);
  return 1;
}

void main().then((code) => { process.exitCode = code; });
