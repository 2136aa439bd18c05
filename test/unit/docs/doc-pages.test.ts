import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Operator docs (README.md, docs/) and contributor docs (docs/internals/) stay free of issue
 * numbers and work-session references, and every relative markdown link points to a file (and a
 * heading, when it names one) that exists.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

function markdownPages(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownPages(path);
    return name.endsWith('.md') ? [path] : [];
  });
}

const PAGES = [join(ROOT, 'README.md'), ...markdownPages(join(ROOT, 'docs'))];

/** The text outside fenced code blocks. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** What a page says about issues or sessions that operators cannot look up. */
function trackerReferences(text: string): string[] {
  const body = prose(text);
  const found: string[] = [];
  for (const re of [/\bissues?\s+#?\d+/gi, /(?<![Ii]ssues?)(?:^|[\s(\[,;])#\d+\b/gm, /\b(?:same|this|that|previous|one|a)\s+session\b/gi]) {
    for (const m of body.matchAll(re)) found.push(m[0].trim());
  }
  return found;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/`/g, '');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative links of a page that point to a missing file or heading. */
function brokenLinks(page: string, text: string): string[] {
  const broken: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const [file, anchor] = target.split('#', 2) as [string, string | undefined];
    const path = file === '' ? page : resolve(dirname(page), file);
    if (!existsSync(path)) {
      broken.push(target);
      continue;
    }
    if (anchor !== undefined && path.endsWith('.md') && !anchors(readFileSync(path, 'utf8')).has(anchor)) {
      broken.push(target);
    }
  }
  return broken;
}

/**
 * Shell lines of a page that run `inference-router` as a command: `npm ci` puts no such command on
 * the PATH (the pages run `node dist/cli.js`, as the README does).
 */
function bareCommands(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/^(```|~~~)(?:sh|bash|shell|console)\b[^\n]*\n([\s\S]*?)^\1[^\n]*$/gm)) {
    for (const line of m[2]!.split('\n')) {
      // The command word: after a prompt, environment assignments, `exec` or `sudo`, or a `|`, `;`, `&&`.
      if (/(?:^|[|;&]\s*)\$?\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:(?:exec|sudo)\s+)?inference-router(?:\s|$)/.test(line)) found.push(line.trim());
    }
  }
  return found;
}

describe('doc pages', () => {
  it('finds the pages: README, operator pages and internals', () => {
    const names = PAGES.map((p) => relative(ROOT, p));
    expect(names).toContain('README.md');
    expect(names).toContain('docs/README.md');
    expect(names).toContain('docs/rate-limiting.md');
    expect(names.some((n) => n.startsWith('docs/internals/'))).toBe(true);
  });

  it('the checks catch what they look for', () => {
    expect(trackerReferences('Fixed in issue 7, see Issue #12 and #34; measured in the same session.')).toEqual([
      'issue 7',
      'Issue #12',
      '#34',
      'same session',
    ]);
    expect(trackerReferences('[cost](access-log.md#cost), the `session` query parameter, `#` comments')).toEqual([]);
    expect(trackerReferences('```\n# 1. the image\nissue 3\n```\n')).toEqual([]);
    const page = join(ROOT, 'docs/README.md');
    expect(brokenLinks(page, '[a](rate-limiting.md) [b](no-such-page.md) [c](rate-limiting.md#no-such-heading)')).toEqual([
      'no-such-page.md',
      'rate-limiting.md#no-such-heading',
    ]);
    expect(slug('Estimators (`ROUTER_TOKEN_ESTIMATOR`)')).toBe('estimators-router_token_estimator');
    expect(bareCommands('```sh\nROUTER_AUTH_CONFIG=a.yaml inference-router --resources r.yaml &\n$ inference-router --help\n```\n')).toEqual([
      'ROUTER_AUTH_CONFIG=a.yaml inference-router --resources r.yaml &',
      '$ inference-router --help',
    ]);
    expect(bareCommands('```sh\nhelm install ir deploy/helm/inference-router -n inference-router\nnode dist/cli.js --resources r.yaml\n```\n`inference-router --help`\n')).toEqual([]);
  });

  it('docs/README.md links to every page of docs/, as README.md says it does', () => {
    const index = join(ROOT, 'docs/README.md');
    const linked = new Set([...prose(readFileSync(index, 'utf8')).matchAll(/\]\(([^)#\s]+)(?:#[^)\s]*)?\)/g)]
      .map((m) => resolve(dirname(index), m[1]!)));
    const unlisted = PAGES.filter((p) => p.startsWith(join(ROOT, 'docs') + '/') && p !== index && !linked.has(p)).map((p) => relative(ROOT, p));
    expect(unlisted).toEqual([]);
  });

  for (const page of PAGES) {
    const name = relative(ROOT, page);
    const text = readFileSync(page, 'utf8');
    it(`${name} names no issue number or session`, () => {
      expect(trackerReferences(text)).toEqual([]);
    });
    it(`${name} runs the router as node dist/cli.js, the command a checkout has`, () => {
      expect(bareCommands(text)).toEqual([]);
    });
    it(`${name} links only to files and headings that exist`, () => {
      expect(brokenLinks(page, text)).toEqual([]);
    });
  }
});
