/**
 * What a change of a ModelServer's pods costs the requests being served when the configuration has
 * many routes: one router (2 workers, log off, no limit) on a resources file of `--routes`
 * ModelRoutes (a model each) to one ModelServer, requests to one route at `--rate` a second, each
 * timed from when it was due. The file is rewritten `--changes` times, each time with the server's
 * one pod moved to the other of two mock backends (the routes as they were: what a rollout of the
 * model server's pods is). A change's window runs from the write until both workers send to the new
 * pod (eight requests in a row, each on a connection of its own, answered by it), plus 200 ms.
 * Prints each change's time to apply and the latency of the requests due in its window beside
 * those due in the quiet second before it.
 *
 *   npm run build && node dist/bench/resources-change-scale.js [--routes 5000] [--changes 3] [--rate 200]
 */
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { readCommandLine, type CommandSpec } from './cli-args.js';
import { modelRouteYaml, modelServerYaml } from '../test/helpers/resource-yaml.js';
import { ChangeWindows, PacedRequests } from './paced-requests.js';
import { startMock, startRouter, stopAll } from './targets.js';
import { stopChildrenOnInterrupt } from './interrupt.js';

const COMMAND: CommandSpec = {
  usage: 'Usage: node dist/bench/resources-change-scale.js [--routes N] [--changes N] [--rate REQ_PER_S]',
  values: ['--routes', '--changes', '--rate'],
};
const { ROUTES, CHANGES, RATE } = readCommandLine(COMMAND, (line) => ({
  ROUTES: line.positiveNumber('--routes') ?? 5_000,
  CHANGES: line.positiveNumber('--changes') ?? 3,
  RATE: line.positiveNumber('--rate') ?? 200,
}));

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The routes, all to `scale-server`, whose one pod is `pod` on `port`. */
function resources(pod: string, port: number, routes: string): string {
  return modelServerYaml('scale-server', pod, port) + routes;
}

/** The pod that answered one request on a connection of its own ('' when none did). */
function answeringPod(url: string, body: string): Promise<string> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? String(res.headers['x-mock-pod'] ?? '') : ''));
    });
    req.on('error', () => resolve(''));
    req.end(body);
  });
}

async function main(): Promise<void> {
  stopChildrenOnInterrupt('resources-change-scale');
  let routes = '';
  for (let i = 0; i < ROUTES; i++) routes += modelRouteYaml(`route-${i}`, `model-${i}`, 'scale-server');
  const pods = [await startMock('pod-a'), await startMock('pod-b')];
  // The router starts on pod-a; the changes rewrite the file it watches.
  // The file of 20,000 routes is past the 4 MiB ROUTER_RESOURCES_MAX_BYTES allows by default.
  const router = await startRouter('router (routes)', resources('pod-a', pods[0].port, routes), 2, { ACCESS_LOG_ENABLED: 'false', ROUTER_RESOURCES_MAX_BYTES: String(64 << 20) });
  const file = router.resourcesFile;
  const url = `${router.url}/v1/completions`;
  const body = JSON.stringify({ model: 'model-0', prompt: 'San Francisco is a', max_tokens: 4 });
  const paced = new PacedRequests({ url, body, headers: { 'content-type': 'application/json' }, rate: RATE });
  await sleep(1000); // warm-up, not read
  const everyWorkerSendsTo = async (pod: string): Promise<boolean> => {
    for (let i = 0; i < 8; i++) if ((await answeringPod(url, body)) !== pod) return false;
    return true;
  };
  if (!(await everyWorkerSendsTo('pod-a'))) throw new Error('the router does not send to pod-a at its start');
  const windows = new ChangeWindows(paced);
  for (let c = 1; c <= CHANGES; c++) {
    const pod = pods[c % 2];
    await windows.measure(`change ${c} (to ${pod.name})`, () => writeFileSync(file, resources(pod.name, pod.port, routes)), () => everyWorkerSendsTo(pod.name));
  }
  await paced.stop();
  process.stdout.write(`\nA ModelServer's pod moved under ${RATE} req/s (2 workers, log off, ${ROUTES} routes, ${(routes.length / 1e6).toFixed(1)} MB of resources), requests timed from when they were due:\n\n${windows.table('change')}`);
  await stopAll();
}

main().catch(async (err: Error) => {
  process.stderr.write(`resources-change-scale: ${err.stack ?? err.message}\n`);
  await stopAll();
  process.exit(1);
});
