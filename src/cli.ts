#!/usr/bin/env node
import cluster from 'node:cluster';
import { logFormat, parseCommand, USAGE } from './config/settings.js';
import { VERSION } from './config/version.js';
import { ResourceError } from './config/resources.js';
import { loadUws } from './http/uws.js';
import { journalLevelMark, OpsLog } from './observe/ops-log.js';
import { parseAllSettings } from './settings.js';

async function main(): Promise<void> {
  // The one read of the command line and the environment; a bad value stops the router here
  // with a message naming it (exit 2), before any worker starts, instead of a crash loop.
  const argv = process.argv.slice(2);
  const command = parseCommand(argv);
  if (command !== 'run') {
    process.stdout.write(command === 'version' ? `inference-router ${VERSION}\n` : `${USAGE}\n`);
    return;
  }
  let settings;
  try {
    settings = parseAllSettings(argv, process.env);
  } catch (err) {
    // A bad flag or setting, whichever part of the router reads it: --help lists them all.
    if (err instanceof Error) exitWith(`${err.message}\nRun with --help for usage.`, formatForExit(process.env));
    throw err;
  }
  if (settings === null) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  try {
    loadUws(undefined, settings.maxHeaderBytes);
  } catch (err) {
    if (err instanceof Error) exitWith(err.message, settings.logFormat);
    throw err;
  }

  if (cluster.isPrimary) {
    const { runPrimary } = await import('./primary/primary.js');
    try {
      await runPrimary(settings, argv);
    } catch (err) {
      const msg = err instanceof ResourceError ? err.message : `cannot start: ${(err as Error).message}`;
      new OpsLog(settings.logFormat, 'primary').error('exit', `${msg}; exit 2`, { code: 2 });
      process.exit(2);
    }
  } else {
    const { runWorker } = await import('./worker/worker.js');
    try {
      await runWorker(settings);
    } catch (err) {
      process.send?.({ t: 'core:fatal', message: (err as Error).message });
      new OpsLog(settings.logFormat, 'worker').error('exit', `${(err as Error).message}; exit 1`, { code: 1 });
      process.exit(1);
    }
  }
}

/**
 * Stops before anything started, exit 2: the message on stderr in the operational log's format.
 * Text: as is, each of its lines an error's priority for the journal when it reads them; JSON: one
 * line of event `exit`, as the router's other lines, so that a JSON log pipeline reads it too.
 */
function exitWith(message: string, format: 'json' | 'text'): never {
  if (format === 'json') {
    new OpsLog('json', 'primary').error('exit', `${message.replaceAll('\n', '. ')}; exit 2`, { code: 2 });
    process.exit(2);
  }
  const mark = journalLevelMark('error');
  process.stderr.write(`${mark}inference-router: ${message.replaceAll('\n', `\n${mark}`)}\n`);
  process.exit(2);
}

/** The operational log's format for a settings error: text when the format setting is itself bad. */
function formatForExit(env: NodeJS.ProcessEnv): 'json' | 'text' {
  try {
    return logFormat(env);
  } catch {
    return 'text';
  }
}

void main();
