import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/errors.js';
import { parseRequest, type ParsedRequest } from '../../../src/api/openai-request.js';
import { extractPromptText } from '../../../src/api/openai-prompt.js';
import { buildUpstreamBody } from '../../../src/api/openai-body.js';
import { openAiApi } from '../../../src/api/openai.js';
import { fuzzedObject, parsedOrUndefined, randomSpace, refusalOf, seededBelow, wholeParseRefusal } from '../../helpers/json-body-fuzz.js';

const CHAT = '/v1/chat/completions';
const RESPONSES = '/v1/responses';

/** Tool definitions of about 3 KB; `tag` makes them differ from the other tests'. */
function tools(tag: string): unknown[] {
  return Array.from({ length: 8 }, (_, i) => ({
    type: 'function',
    function: {
      name: `${tag}_${i}`,
      description: `Looks up data in system ${i} for ${tag}; use it before answering "questions" about it. é ✓`,
      parameters: { type: 'object', properties: { id: { type: 'string', description: 'An identifier.' }, n: { type: 'integer', minimum: 0 } }, required: ['id'] },
    },
  }));
}

function whole(raw: Buffer): Record<string, unknown> {
  return JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, ''));
}

/**
 * Parses `raw` as the router does and checks it against a whole parse: the same prompt, the same
 * body (its tools given back when they were read by their bytes). Returns the request and whether
 * its tools were read by their bytes.
 */
function check(raw: Buffer, url = CHAT): { req: ParsedRequest; byBytes: boolean } {
  const req = parseRequest(raw, url);
  const w = whole(raw);
  const api = url === CHAT ? 'chat' : 'responses';
  expect(extractPromptText(req.body, req.api, req.toolsText)).toEqual(extractPromptText(w, api));
  const byBytes = !Object.hasOwn(req.body, 'tools') && Object.hasOwn(w, 'tools');
  expect(byBytes ? { ...req.body, tools: w.tools } : req.body).toEqual(w);
  if (req.toolsText !== null) expect(req.toolsText).toBe(JSON.stringify(w.tools));
  if (byBytes) expect(req.toolsText).not.toBeNull();
  return { req, byBytes };
}

describe('tool definitions read by their bytes', () => {
  it('parses new tools with the body and keeps their bytes; the next body with them skips their parse', () => {
    const t = tools('same');
    const bodies = [0, 1, 2].map((i) => Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${i}` }], tools: t, temperature: 0 })));
    const first = check(bodies[0]);
    expect(first.byBytes).toBe(false);
    for (const raw of bodies.slice(1)) {
      const again = check(raw);
      expect(again.byBytes).toBe(true);
      // The text made the first time, not written again (the count cache then compares it by reference).
      expect(again.req.toolsText).toBe(first.req.toolsText);
    }
  });

  it('reads them when only small members follow them, whatever white space and escapes the client sent', () => {
    // Each shape its own tools, so that the first body of each brings new bytes.
    const t = [0, 1, 2, 3].map((k) => tools(`shape${k}`));
    const text = (k: number, i: number) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `hi ${i}` }], tools: t[k] });
    const shapes = [
      (i: number) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `hi ${i}` }], tools: t[0], tool_choice: 'auto', temperature: 0.5, stop: ['END'], stream: false, user: null }, null, 2),
      (i: number) => text(1, i).replace(/é/g, '\\u00e9'),
      (i: number) => `\uFEFF${text(2, i)}`,
    ];
    for (const shape of shapes) {
      expect(check(Buffer.from(shape(1))).byBytes).toBe(false);
      expect(check(Buffer.from(shape(2))).byBytes, shape(2).slice(0, 60)).toBe(true);
    }
    // The first member, with small ones after it (a Responses request whose input is a string).
    const first = (i: number) => Buffer.from(` \n{"tools":${JSON.stringify(t[3])}, "model":"m","input":"hi ${i}"}\n`);
    expect(check(first(1), RESPONSES).byBytes).toBe(false);
    expect(check(first(2), RESPONSES).byBytes).toBe(true);
    const responses = (i: number) => Buffer.from(JSON.stringify({ model: 'm', instructions: 'be brief', input: `hi ${i}`, tools: t }));
    expect(check(responses(1), RESPONSES).byBytes).toBe(false);
    expect(check(responses(2), RESPONSES).byBytes).toBe(true);
  });

  it('parses the body whole, with the same count, when the tools come before the messages, are small, named twice, keyed with an escape, or followed by a member it does not read', () => {
    const t = tools('whole');
    const msgs = (i: number) => [{ role: 'user', content: `a ${i}` }];
    const cases = [
      (i: number) => JSON.stringify({ model: 'm', tools: t, messages: msgs(i) }),
      (i: number) => JSON.stringify({ model: 'm', messages: msgs(i), tools: [{ type: 'function', function: { name: 'f' } }] }),
      (i: number) => `{"model":"m","tools":[{"x":1}],"messages":${JSON.stringify(msgs(i))},"tools":${JSON.stringify(t)}}`,
      (i: number) => JSON.stringify({ model: 'm', messages: msgs(i), tools: t }).replace('"tools"', '"\\u0074ools"'),
      (i: number) => JSON.stringify({ model: 'm', messages: msgs(i), tools: t, stop: ['\n'] }),
      (i: number) => JSON.stringify({ model: 'm', messages: msgs(i), tools: t, user: 'u'.repeat(300) }),
      (i: number) => JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `say "tools": ${JSON.stringify(t)} ${i}` }] }),
    ];
    for (const make of cases) for (let i = 0; i < 3; i++) expect(check(Buffer.from(make(i))).byBytes, make(i).slice(0, 60)).toBe(false);
    // The same bytes under another key of the same length: not tools.
    check(Buffer.from(JSON.stringify({ model: 'm', messages: msgs(0), tools: t })));
    const other = Buffer.from(JSON.stringify({ model: 'm', messages: msgs(1), other: t }));
    expect(check(other).byBytes).toBe(false);
    expect(check(other).req.body.other).toEqual(t);
    // Large but not an array: counted as nothing, as when parsed whole.
    for (let i = 0; i < 3; i++) check(Buffer.from(JSON.stringify({ model: 'm', messages: msgs(i), tools: { many: t } })));
  });

  it('refuses a broken body with the same error as a whole parse, its tools known or not', () => {
    const t = JSON.stringify(tools('broken'));
    const good = (i: number) => `{"model":"m","messages":[{"role":"user","content":"a${i}"}],"tools":${t}}`;
    check(Buffer.from(good(1)));
    expect(check(Buffer.from(good(2))).byBytes).toBe(true);
    const broken = [
      `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${t.replace('"type"', '"type" 1')}}`,
      `{"model":"m","messages":[{"role":"user","content":a}],"tools":${t}}`,
      `{"model":"m","messages":[{"role":"user","content":"a"}] "tools":${t}}`,
      `{"model":"m","messages":[{"role":"user","content":"a"}],,"tools":${t}}`,
      `{"model":"m","messages":[{"role":"user","content":"a"},"tools":${t}}`,
      `["model","m","tools":${t}}`,
      `{"messages":[{"role":"user","content":"a"}],"tools":${t}}`,
    ];
    for (const text of broken) expect(refusalOf(() => parseRequest(Buffer.from(text), CHAT)), text.slice(0, 80)).toBe(wholeParseRefusal(text));
  });

  it('refuses a body that nests too deep with the usual message, its tools kept or not, and takes one at the limit', () => {
    const deep = '400 request body nests arrays/objects deeper than 512 levels';
    // Tools of many brackets (more than the limit: the count alone cannot settle these bodies).
    const many = (tag: string) => JSON.stringify(Array.from({ length: 12 }, () => tools(tag)).flat());
    expect(many('deep').split('{').length - 1).toBeGreaterThan(512);
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    // Tools of their own per API: the memo is one for both.
    const chat = (extra: string, i: number) => `{"model":"m","messages":[{"role":"user","content":"d${i}"}],"extra":${extra},"tools":${many('deep-chat')}}`;
    const responses = (extra: string, i: number) => `{"model":"m","input":"d${i}","extra":${extra},"tools":${many('deep-responses')}}`;
    for (const [url, body] of [[CHAT, chat], [RESPONSES, responses]] as const) {
      // The first body keeps the tools; the object is level 1, so 511 more levels is the limit.
      expect(refusalOf(() => parseRequest(Buffer.from(body(nested(512), 0)), url))).toBe(deep);
      expect(check(Buffer.from(body(nested(511), 1)), url).byBytes).toBe(false);
      expect(check(Buffer.from(body(nested(511), 2)), url).byBytes).toBe(true);
      expect(check(Buffer.from(body('1', 3)), url).byBytes).toBe(true);
      expect(refusalOf(() => parseRequest(Buffer.from(body(nested(512), 4)), url))).toBe(deep);
      // Deep inside the messages (or the input), before the kept tools: one level past the limit.
      const inMessages = body('1', 5).replace('"d5"', nested(url === CHAT ? 510 : 512));
      expect(refusalOf(() => parseRequest(Buffer.from(inMessages), url))).toBe(deep);
    }
  });

  it('sends the tools upstream when a body named twice is written again', () => {
    const t = tools('upstream');
    const raw = (i: number) => Buffer.from(`{"model":"a","model":"m","stream":true,"messages":[{"role":"user","content":"a${i}"}],"tools":${JSON.stringify(t)}}`);
    for (let i = 0; i < 2; i++) {
      const { req, byBytes } = check(raw(i));
      expect(byBytes).toBe(i === 1);
      const up = buildUpstreamBody(raw(i), req, 'served');
      expect(JSON.parse(up.body.toString())).toEqual({ model: 'served', stream: true, messages: [{ role: 'user', content: `a${i}` }], tools: t, stream_options: { include_usage: true } });
    }
  });

  it('is what the chat API counts', () => {
    const t = tools('api');
    for (let i = 0; i < 3; i++) {
      const raw = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `a${i}` }], tools: t }));
      expect(openAiApi.promptText(openAiApi.parse(raw, CHAT))).toEqual(extractPromptText(whole(raw), 'chat'));
    }
  });
});

describe('tool definitions read by their bytes, against a whole parse (seeded random bodies)', () => {
  it('gives the same body, texts and errors for 600 bodies of random member order, spacing and breakage', () => {
    const rand = seededBelow(7);
    const toolSets = [tools('fz0'), tools('fz1'), tools('fz2').slice(0, 3)].map((t) => JSON.stringify(t));
    let byBytes = 0;
    for (let n = 0; n < 600; n++) {
      const sp = () => randomSpace(rand);
      const head = [
        `"model"${sp()}:${sp()}"m"`,
        `"messages":[{"role":"user","content":"q ${n} \\"tools\\": [] ${'x'.repeat(rand(300))}"},{"role":"tool","content":"{\\"tools\\":1}","tools":[1]}]`,
      ];
      const tail = [`"temperature":${rand(3)}`, '"stream":false', '"tool_choice":"auto"', '"stop":["END"]', '"user":null'].slice(0, rand(4));
      const toolsMember = `"tools"${sp()}:${sp()}${toolSets[rand(toolSets.length)]}`;
      // Mostly the tools after the messages and before small members, as SDKs send them; sometimes anywhere.
      const members = rand(4) === 0 ? [...head, ...tail, toolsMember].sort(() => rand(3) - 1) : [...head, toolsMember, ...tail];
      if (rand(10) === 0) members.unshift(`"tools":${toolSets[0]}`);
      const text = fuzzedObject(members, rand);
      const raw = Buffer.from(text);
      const w = parsedOrUndefined(text);
      if (w === undefined || typeof (w as { model?: unknown }).model !== 'string') {
        expect(() => parseRequest(raw, CHAT), text).toThrow(RouterError);
        continue;
      }
      if (check(raw).byBytes) byBytes++;
    }
    expect(byBytes).toBeGreaterThan(250);
  });
});
