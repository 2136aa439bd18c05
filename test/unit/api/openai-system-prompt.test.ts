import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/errors.js';
import { parseRequest, type ParsedRequest } from '../../../src/api/openai-request.js';
import { extractPromptText } from '../../../src/api/openai-prompt.js';
import { MIN_PROMPT_BYTES, systemPromptMemoStats } from '../../../src/api/openai-system-prompt.js';
import { fuzzedObject, parsedOrUndefined, randomSpace, refusalOf, seededBelow, wholeParseRefusal } from '../../helpers/json-body-fuzz.js';

const CHAT = '/v1/chat/completions';
const RESPONSES = '/v1/responses';

/** A system prompt of about `chars` characters; `tag` makes it differ from the other tests'. */
function prompt(tag: string, chars = 3000): string {
  let s = `You are the assistant of ${tag}. Rules:\n`;
  for (let i = 1; s.length < chars; i++) s += `${i}. Answer "briefly" and cite policy ${100 + i}; never guess \\ é ✓ (${tag})\n`;
  return s;
}

function whole(raw: Buffer): Record<string, unknown> {
  return JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, ''));
}

/** Tool definitions of about 3 KB. */
function tools(tag: string): unknown[] {
  return Array.from({ length: 8 }, (_, i) => ({
    type: 'function',
    function: { name: `${tag}_${i}`, description: `Looks up data in system ${i} for ${tag}; use it before answering.`, parameters: { type: 'object', properties: { id: { type: 'string' } } } },
  }));
}

/**
 * Parses `raw` as the router does and checks it against a whole parse: the same body (its tools
 * given back when they were read by their bytes) and the same prompt. Returns the request and
 * whether its system prompt was read by its bytes.
 */
function check(raw: Buffer, url = CHAT): { req: ParsedRequest; byBytes: boolean } {
  const found = systemPromptMemoStats.found;
  const req = parseRequest(raw, url);
  const w = whole(raw);
  const byTools = !Object.hasOwn(req.body, 'tools') && Object.hasOwn(w, 'tools');
  expect(byTools ? { ...req.body, tools: w.tools } : req.body).toEqual(w);
  expect(extractPromptText(req.body, req.api, req.toolsText)).toEqual(extractPromptText(w, req.api));
  return { req, byBytes: systemPromptMemoStats.found === found + 1 };
}

const body = (system: string, i: number, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ model: 'm', messages: [{ role: 'system', content: system }, { role: 'user', content: `question ${i}` }], ...extra });

describe('system prompts read by their bytes', () => {
  it('parses a new prompt with the body and keeps its bytes; the next bodies with it skip its parse', () => {
    const p = prompt('same');
    const kept = systemPromptMemoStats.kept;
    expect(check(Buffer.from(JSON.stringify(body(p, 0)))).byBytes).toBe(false);
    expect(systemPromptMemoStats.kept).toBe(kept + 1);
    for (let i = 1; i < 4; i++) expect(check(Buffer.from(JSON.stringify(body(p, i)))).byBytes).toBe(true);
    expect(systemPromptMemoStats.kept).toBe(kept + 1);
  });

  it('reads it whatever white space, escapes and members around it the client sent, with tools known too', () => {
    const shapes = [
      (p: string, i: number) => JSON.stringify(body(p, i), null, 2),
      // Python's json.dumps: a space after each colon and comma, non-ASCII escaped.
      (p: string, i: number) => JSON.stringify(body(p, i)).replace(/":/g, '": ').replace(/é/g, '\\u00e9').replace(/✓/g, '\\u2713'),
      (p: string, i: number) => `\uFEFF${JSON.stringify(body(p, i))}`,
      (p: string, i: number) => JSON.stringify({ messages: body(p, i).messages, model: 'm', temperature: 0 }),
      (p: string, i: number) => JSON.stringify(body(p, i, { tools: tools('shape'), tool_choice: 'auto' })),
      (p: string, i: number) => JSON.stringify({ model: 'm', messages: [{ role: 'developer', name: 'ops', content: p }, { role: 'user', content: `q ${i}` }] }),
    ];
    shapes.forEach((shape, k) => {
      const p = prompt(`shape${k}`);
      expect(check(Buffer.from(shape(p, 1))).byBytes, shape(p, 1).slice(0, 60)).toBe(false);
      const again = check(Buffer.from(shape(p, 2)));
      expect(again.byBytes, shape(p, 2).slice(0, 60)).toBe(true);
      expect((again.req.body.messages as { content: string }[])[0].content).toBe(p);
      // With the tools read by their bytes as well.
      if (k === 4) expect(again.req.toolsText).toBe(JSON.stringify(tools('shape')));
    });
  });

  it('parses the body as it came, with the same result, when the bytes found are not the first message\'s content', () => {
    const p = prompt('elsewhere');
    check(Buffer.from(JSON.stringify(body(p, 0))));
    expect(check(Buffer.from(JSON.stringify(body(p, 1)))).byBytes).toBe(true);
    const cases = [
      // The same bytes as another object's content, before the messages.
      `{"model":"m","metadata":{"content":${JSON.stringify(p)}},"messages":[{"role":"system","content":"short"}]}`,
      // The first message names content twice: the parser keeps the last.
      `{"model":"m","messages":[{"role":"system","content":${JSON.stringify(p)},"content":"later"}]}`,
      // Inside the first message's content parts.
      `{"model":"m","messages":[{"role":"user","content":[{"type":"text","content":${JSON.stringify(p)}}]}]}`,
    ];
    for (const text of cases) for (let n = 0; n < 2; n++) expect(check(Buffer.from(text)).byBytes, text.slice(0, 80)).toBe(false);
    // The kept bytes followed by more of the string: another prompt, kept then.
    const longer = JSON.stringify(body(`${p}and more`, 2));
    expect(check(Buffer.from(longer)).byBytes).toBe(false);
    expect(check(Buffer.from(longer)).byBytes).toBe(true);
    // Tools the body is parsed with (not the last large member): the prompt is found wherever the members are.
    for (const text of [
      JSON.stringify({ model: 'm', tools: tools('before'), messages: body(p, 3).messages }),
      JSON.stringify({ model: 'm', tools: tools('after'), temperature: 0, messages: body(p, 4).messages }),
    ]) expect(check(Buffer.from(text)).byBytes, text.slice(0, 80)).toBe(true);
  });

  it('does not read a prompt under the size, or one that is not a string', () => {
    const short = 'x'.repeat(MIN_PROMPT_BYTES - 10);
    for (let i = 0; i < 3; i++) expect(check(Buffer.from(JSON.stringify(body(short, i)))).byBytes).toBe(false);
    const parts = [{ type: 'text', text: prompt('parts') }];
    for (let i = 0; i < 3; i++) expect(check(Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'system', content: parts }, { role: 'user', content: `q ${i}` }] }))).byBytes).toBe(false);
  });

  it('refuses a broken body with the same error as a whole parse, its prompt known', () => {
    const p = JSON.stringify(prompt('broken'));
    const good = (i: number) => `{"model":"m","messages":[{"role":"system","content":${p}},{"role":"user","content":"a${i}"}]}`;
    check(Buffer.from(good(1)));
    expect(check(Buffer.from(good(2))).byBytes).toBe(true);
    const broken = [
      `{"model":"m","messages":[{"role":"system","content":${p}},{"role":"user","content":a}]}`,
      `{"model":"m","messages":[{"role":"system","content":${p}} {"role":"user","content":"a"}]}`,
      `{"model":"m","messages":[{"role":"system","content":${p}},{"role":"user","content":"a"}]`,
      `{"model":"m","messages":[{"role":"system" "content":${p}}]}`,
      `{"messages":[{"role":"system","content":${p}}]}`,
      `{"model":"m","messages":[{"role":"system","content":${p}}],"model":1}`,
    ];
    for (const text of broken) expect(refusalOf(() => parseRequest(Buffer.from(text), CHAT)), text.slice(0, 80)).toBe(wholeParseRefusal(text));
  });

  it('stops keeping new prompts after 16 bodies in a row brought one not kept, and keeps one again once one is found', () => {
    const known = prompt('known');
    check(Buffer.from(JSON.stringify(body(known, 0))));
    expect(check(Buffer.from(JSON.stringify(body(known, 1)))).byBytes).toBe(true);
    const kept = systemPromptMemoStats.kept;
    for (let i = 0; i < 20; i++) check(Buffer.from(JSON.stringify(body(prompt(`new${i}`), i))));
    expect(systemPromptMemoStats.kept).toBe(kept + 16);
    // A prompt seen after the 16th is not kept, so it is not found either.
    expect(check(Buffer.from(JSON.stringify(body(prompt('new19'), 1)))).byBytes).toBe(false);
    expect(check(Buffer.from(JSON.stringify(body(known, 2)))).byBytes).toBe(true);
    check(Buffer.from(JSON.stringify(body(prompt('late'), 0))));
    expect(check(Buffer.from(JSON.stringify(body(prompt('late'), 1)))).byBytes).toBe(true);
    // Short prompts (under the size) in between do not count: a long one after 40 of them is kept.
    for (let i = 0; i < 40; i++) {
      const short = body(`${'s'.repeat(600)} ${i}`, i);
      check(Buffer.from(JSON.stringify({ ...short, messages: [...(short.messages as unknown[]), { role: 'assistant', content: 'a long answer '.repeat(200) }] })));
    }
    check(Buffer.from(JSON.stringify(body(prompt('after short ones'), 0))));
    expect(check(Buffer.from(JSON.stringify(body(prompt('after short ones'), 1)))).byBytes).toBe(true);
  });
});

describe('Responses instructions read by their bytes', () => {
  it('keeps long instructions, finds them in the next bodies wherever they are, with tools known too, and parses the body as it came otherwise', () => {
    const p = prompt('responses');
    const shapes = [
      (i: number) => JSON.stringify({ model: 'm', instructions: p, input: `question ${i}` }),
      (i: number) => JSON.stringify({ model: 'm', input: [{ role: 'user', content: `question ${i}` }], instructions: p, tools: tools('resp') }),
    ];
    // The first body keeps them; the other shape has the same bytes, found at once.
    expect(check(Buffer.from(shapes[0](0)), RESPONSES).byBytes).toBe(false);
    for (const shape of shapes) {
      for (let i = 1; i < 3; i++) {
        const again = check(Buffer.from(shape(i)), RESPONSES);
        expect(again.byBytes).toBe(true);
        expect(again.req.body.instructions).toBe(p);
      }
    }
    // The same bytes as another object's instructions, before the body's own: parsed as it came.
    const other = `{"model":"m","metadata":{"instructions":${JSON.stringify(p)}},"instructions":"short","input":"q"}`;
    for (let n = 0; n < 2; n++) expect(check(Buffer.from(other), RESPONSES).byBytes).toBe(false);
    // A chat body's first message with the same text is found too (one memo of prompts).
    expect(check(Buffer.from(JSON.stringify(body(p, 9)))).byBytes).toBe(true);
    // Completions are parsed whole.
    expect(check(Buffer.from(JSON.stringify({ model: 'm', prompt: 'hi', content: p })), '/v1/completions').byBytes).toBe(false);
  });
});

describe('system prompts read by their bytes, against a whole parse (seeded random bodies)', () => {
  it('gives the same body, texts and errors for 600 bodies of random prompts, member order, spacing and breakage', () => {
    const rand = seededBelow(11);
    const prompts = [prompt('fz0'), prompt('fz1', 1200), `${prompt('fz2')}"content":"x"`, 'short system prompt'];
    let byBytes = 0;
    for (let n = 0; n < 600; n++) {
      const sp = () => randomSpace(rand);
      const system = prompts[rand(prompts.length)];
      const first = rand(8) === 0
        ? `{"role":"system","content"${sp()}:${sp()}${JSON.stringify(system)},"content":"again"}`
        : `{${sp()}"role":"system",${sp()}"content"${sp()}:${sp()}${JSON.stringify(system)}${sp()}}`;
      const members = [`"model"${sp()}:${sp()}"m"`, `"messages":[${first},{"role":"user","content":"q ${n} \\"content\\": ${'y'.repeat(rand(50))}"}]`, `"temperature":${rand(3)}`];
      if (rand(4) === 0) members.sort(() => rand(3) - 1);
      if (rand(8) === 0) members.unshift(`"meta":{"content":${JSON.stringify(prompts[0])}}`);
      const text = fuzzedObject(members, rand);
      const raw = Buffer.from(text);
      const w = parsedOrUndefined(text);
      if (w === undefined || typeof (w as { model?: unknown }).model !== 'string' || !Array.isArray((w as { messages?: unknown }).messages)) {
        expect(() => parseRequest(raw, CHAT), text.slice(0, 80)).toThrow(RouterError);
        continue;
      }
      if (check(raw).byBytes) byBytes++;
    }
    expect(byBytes).toBeGreaterThan(200);
  });
});
