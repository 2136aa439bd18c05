/**
 * FileSource on a real file in a temporary directory: a reload that cannot read the file (removed,
 * or replaced by a directory) keeps the last good config and says what is wrong in the words the
 * start-up uses, not as a bare system error.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { pathToFileURL } from 'node:url';
import { FileSource, type FileSourceEvent, type LoadedResources } from '../../../src/config/file-source.js';
import { PARSE_IN_PLACE_CHARS, parseHere } from '../../../src/config/parse-off-thread.js';
import { resourcesFor } from '../../helpers/processes.js';

const dirs: string[] = [];
const sources: FileSource[] = [];
afterEach(() => {
  for (const s of sources.splice(0)) s.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A FileSource started on a valid resources file; its log lines and applied loads. `parseThread`: the parser thread's module. */
function started(parseThread = new URL('../../../dist/config/resource-parse-thread.js', import.meta.url)): { file: string; source: FileSource; lines: string[]; applied: LoadedResources[] } {
  const dir = mkdtempSync(join(tmpdir(), 'ir-file-source-'));
  dirs.push(dir);
  const file = join(dir, 'resources.yaml');
  writeFileSync(file, resourcesFor([{ name: 'pod-a', port: 1 }]));
  const lines: string[] = [];
  const applied: LoadedResources[] = [];
  const source = new FileSource({
    file, rules: { apiGroup: 'networking.serving.volcano.sh', redisCluster: false }, maxBytes: 1 << 20,
    log: (m: string, _e: FileSourceEvent) => lines.push(m), apply: (r) => applied.push(r),
    // A long change is parsed in a worker thread, which runs compiled code (npm run build).
    parseThread,
  });
  sources.push(source);
  source.start(60_000);
  return { file, source, lines, applied };
}

describe('FileSource reloads of a file that cannot be read', () => {
  it('a removed file is named with the path looked for, and the last good config stays', async () => {
    const { file, source, lines, applied } = started();
    rmSync(file);
    await source.reload();
    expect(applied).toHaveLength(1);
    expect(source.rejected).toBe(1);
    expect(lines.at(-1)).toBe(`resources reload failed, keeping the last good config: ${file}: no such resources file `
      + `(looked for ${file}); it was removed or renamed: put it back to apply changes again`);
  });

  it('a directory in the file\'s place is named as one', async () => {
    const { file, source, lines, applied } = started();
    rmSync(file);
    mkdirSync(file);
    await source.reload();
    expect(applied).toHaveLength(1);
    expect(lines.at(-1)).toBe(`resources reload failed, keeping the last good config: ${file}: is a directory; `
      + '--resources (ROUTER_RESOURCES) takes one YAML file of ModelRoute/ModelServer resources');
  });

  it('one removal is one message, however often the watch reports it; a file put back then removed again is told again', async () => {
    const { file, source, lines, applied } = started();
    source.stop(); // the reloads below stand for the watch's reports, one at a time
    const text = readFileSync(file, 'utf8');
    const failed = (): string[] => lines.filter((l) => l.startsWith('resources reload failed'));
    rmSync(file);
    await source.reload();
    await source.reload(); // a second report of the same removal (the watch and its poll)
    expect(failed()).toHaveLength(1);
    expect(source.rejected).toBe(1);
    writeFileSync(file, text); // put back as it was: applied again (the same), so the last line about it is no longer the refusal
    await source.reload();
    expect(applied).toHaveLength(2);
    expect(applied[1]).toEqual(applied[0]);
    await source.reload(); // read again unchanged: nothing
    expect(applied).toHaveLength(2);
    rmSync(file);
    await source.reload();
    expect(failed()).toHaveLength(2);
    expect(source.rejected).toBe(2);
    mkdirSync(file); // a different change: its own message
    await source.reload();
    expect(failed()).toHaveLength(3);
    expect(failed()[2]).toMatch(/: is a directory; /);
  });

  it('a file larger than the cap is told once, until it changes', async () => {
    const { file, source, lines } = started();
    source.stop();
    writeFileSync(file, `${readFileSync(file, 'utf8')}${'#'.repeat(1 << 20)}\n`);
    await source.reload();
    await source.reload();
    expect(lines.filter((l) => l.includes('more than ROUTER_RESOURCES_MAX_BYTES'))).toHaveLength(1);
    expect(source.rejected).toBe(1);
  });
});

describe('FileSource reloads of a file the router refuses', () => {
  it('a pdGroup ModelServer whose endpoint has no group or role labels is refused naming file, resource and field; the last good config stays', async () => {
    const { file, source, lines, applied } = started();
    source.stop(); // the reload below stands for the watch's report
    const pdGroup = '  workloadSelector:\n    matchLabels: {app: x}\n    pdGroup: {groupKey: g, prefillLabels: {role: prefill}, decodeLabels: {role: decode}}\n';
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^spec:\n {2}endpoints:/m, `spec:\n${pdGroup}  endpoints:`));
    await source.reload();
    expect(applied).toHaveLength(1);
    expect(source.rejected).toBe(1);
    expect(lines.at(-1)).toBe(`resources reload rejected, keeping the last good config: ${file}: document 1 (ModelServer default/sf-server): `
      + 'spec.endpoints[0].labels: must carry the label "g" (spec.workloadSelector.pdGroup.groupKey) and those of prefillLabels {role: prefill} '
      + 'or decodeLabels {role: decode}, got none');
  });
});

describe('FileSource parses a change in place or in a thread, by its length', () => {
  /** Backends enough for a file over PARSE_IN_PLACE_CHARS. */
  const many = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `pod-${i}`, port: 1000 + i }));

  it('a change up to PARSE_IN_PLACE_CHARS in place, a longer one in the parser thread, with the same loads', async () => {
    const { file, source, applied } = started();
    source.stop(); // the reloads below stand for the watch's reports
    const small = resourcesFor(many(3));
    const large = resourcesFor(many(800));
    expect(small.length).toBeLessThanOrEqual(PARSE_IN_PLACE_CHARS);
    expect(large.length).toBeGreaterThan(PARSE_IN_PLACE_CHARS);
    writeFileSync(file, large);
    await source.reload();
    writeFileSync(file, small);
    await source.reload();
    expect(applied).toHaveLength(3);
    const rules = { apiGroup: 'networking.serving.volcano.sh', redisCluster: false };
    const here = (text: string): LoadedResources => {
      const o = parseHere({ text, file, rules });
      if (!o.ok) throw new Error(o.message);
      return { routes: o.parsed.routes, servers: o.parsed.servers };
    };
    expect(applied[1]).toEqual(here(large));
    expect(applied[1].servers[0].endpoints).toHaveLength(800);
    expect(applied[2]).toEqual(here(small));
  });

  it('which path a change takes: a parser thread that refuses everything sees the long change only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ir-file-source-'));
    dirs.push(dir);
    const thread = join(dir, 'refusing-thread.mjs');
    writeFileSync(thread, "import { parentPort } from 'node:worker_threads';\nparentPort.postMessage({ ok: false, message: 'refused by the thread' });\n");
    const { file, source, lines, applied } = started(pathToFileURL(thread));
    source.stop();
    writeFileSync(file, resourcesFor(many(3)));
    await source.reload();
    expect(applied).toHaveLength(2);
    writeFileSync(file, resourcesFor(many(800)));
    await source.reload();
    expect(applied).toHaveLength(2);
    expect(lines.at(-1)).toBe('resources reload rejected, keeping the last good config: refused by the thread');
  });
});
