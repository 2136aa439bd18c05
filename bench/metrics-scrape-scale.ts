/**
 * What a scrape of /metrics takes with many routes in use, and what it costs the requests served
 * meanwhile: one router (2 workers, log off, no limit) on a mock backend, `--routes` ModelRoutes
 * (a model each, one ModelServer), one request to every route first (so each has its ~60 series),
 * then `--scrapes` scrapes one after another, each timed to its whole text, while requests go to
 * one route at `--rate` a second, each timed from when it was due. Prints each scrape's status,
 * time and size, and the latency of the requests due during the scrapes beside those due in the
 * quiet seconds before them, with how many a scrape took over 10 and over 50 ms.
 *
 *   npm run build && node dist/bench/metrics-scrape-scale.js [--routes 5000] [--scrapes 5] [--rate 200]
 */
import { Agent, request } from 'node:http';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { modelRouteYaml, modelServerYaml } from '../test/helpers/resource-yaml.js';
import { describeTimes, PacedRequests } from './paced-requests.js';
import { startMock, startRouter, stopAll } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/metrics-scrape-scale.js [--routes N] [--scrapes N] [--rate REQ_PER_S]',
  values: ['--routes', '--scrapes', '--rate'],
};
const { ROUTES, SCRAPES, RATE } = readCommandLine(COMMAND, (line) => ({
  ROUTES: line.positiveNumber('--routes') ?? 5_000,
  SCRAPES: line.positiveNumber('--scrapes') ?? 5,
  RATE: line.positiveNumber('--rate') ?? 200,
}));

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function resources(mockPort: number): string {
  let yaml = modelServerYaml('scale-server', 'pod-a', mockPort);
  for (let i = 0; i < ROUTES; i++) yaml += modelRouteYaml(`route-${i}`, `model-${i}`, 'scale-server');
  return yaml;
}

function post(url: string, agent: Agent, body: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/** One scrape: its status, wall time to the whole text and size. */
function scrape(url: string): Promise<{ status: number; ms: number; bytes: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = request(`${url}/metrics`, { agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => { bytes += c.length; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, bytes }));
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0, bytes: 0 }));
    req.end();
  });
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('metrics-scrape-scale');
  const mock = await startMock('pod-a');
  const router = await startRouter('router (routes)', resources(mock.port), 2, { ACCESS_LOG_ENABLED: 'false' });
  const url = `${router.url}/v1/completions`;
  // One request to every route (32 at a time), so that each has its series.
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  let next = 0;
  let warmFailed = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < ROUTES) {
      const i = next++;
      if ((await post(url, agent, JSON.stringify({ model: `model-${i}`, prompt: 'San Francisco is a', max_tokens: 4 }))) !== 200) warmFailed++;
    }
  }));
  agent.destroy();
  if (warmFailed > 0) throw new Error(`${warmFailed} of the ${ROUTES} first requests were not answered 200`);
  const paced = new PacedRequests({ url, body: JSON.stringify({ model: 'model-0', prompt: 'San Francisco is a', max_tokens: 4 }), headers: { 'content-type': 'application/json' }, rate: RATE });
  await sleep(1000); // warm-up, not read
  const quietFrom = performance.now();
  await sleep(2000);
  const scrapesFrom = performance.now();
  const scrapes: { status: number; ms: number; bytes: number }[] = [];
  for (let i = 0; i < SCRAPES; i++) scrapes.push(await scrape(router.url));
  const until = performance.now();
  await paced.answered(until);
  const quiet = paced.timesDue(quietFrom, scrapesFrom);
  const during = paced.timesDue(scrapesFrom, until);
  await paced.stop();
  process.stdout.write(`\n/metrics with ${ROUTES} routes in use (2 workers, log off, no limit), ${SCRAPES} scrapes one after another, requests at ${RATE} a second timed from when they were due:\n\n`);
  process.stdout.write('| scrape | status | time to the whole text | size |\n|---|---|---|---|\n');
  scrapes.forEach((s, i) => process.stdout.write(`| ${i + 1} | ${s.status} | ${s.ms.toFixed(0)} ms | ${(s.bytes / 1e6).toFixed(1)} MB |\n`));
  // Per scrape, comparable between builds whose scrapes take longer or shorter (a p99 over a shorter window is over fewer requests).
  const over = (ms: number): string => (during.filter((t) => t > ms).length / SCRAPES).toFixed(1);
  process.stdout.write(`\nrequests: quiet 2 s before ${describeTimes(quiet)}; during the scrapes ${describeTimes(during)}; over 10 ms ${over(10)} and over 50 ms ${over(50)} a scrape; answers not 200: ${paced.failed()}\n`);
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`metrics-scrape-scale: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
