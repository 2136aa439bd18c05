#!/usr/bin/env node
import cluster from 'node:cluster';
import { parseSettings, UsageError, USAGE } from './config/settings.js';
import { ResourceError } from './config/resources.js';
import { validateEnvironment } from './config/validate-environment.js';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let settings;
  try {
    settings = parseSettings(argv, process.env);
    if (settings === null) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    validateEnvironment(process.env);
  } catch (err) {
    if (err instanceof UsageError || err instanceof Error) {
      process.stderr.write(`inference-router: ${err.message}\n${err instanceof UsageError ? 'Run with --help for usage.\n' : ''}`);
      process.exit(2);
    }
    throw err;
  }

  if (cluster.isPrimary) {
    const { runPrimary } = await import('./primary/primary.js');
    try {
      await runPrimary(settings, argv);
    } catch (err) {
      const msg = err instanceof ResourceError ? err.message : `cannot start: ${(err as Error).message}`;
      process.stderr.write(`inference-router: ${msg}\n`);
      process.exit(2);
    }
  } else {
    const { runWorker } = await import('./worker/worker.js');
    try {
      await runWorker(settings);
    } catch (err) {
      process.send?.({ t: 'core:fatal', message: (err as Error).message });
      process.stderr.write(`inference-router worker: ${(err as Error).message}\n`);
      process.exit(1);
    }
  }
}

void main();
