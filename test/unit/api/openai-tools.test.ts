import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/errors.js';
import { parseRequest } from '../../../src/api/openai-request.js';
import { extractPromptText } from '../../../src/api/openai-prompt.js';
import { buildUpstreamBody } from '../../../src/api/openai-body.js';
import { openAiApi } from '../../../src/api/openai.js';

const CHAT = '/v1/chat/completions';

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

/** What the router counts of `raw` when it parses the body whole (the reference). */
function wholePrompt(raw: Buffer, url = CHAT) {
  const body = JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, ''));
  return extractPromptText(body, url === CHAT ? 'chat' : 'responses');
}

function prompt(raw: Buffer, url = CHAT) {
  const req = parseRequest(raw, url);
  return { req, prompt: extractPromptText(req.body, req.api, req.toolsText) };
}

function errorOf(f: () => unknown): string {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(RouterError);
    return `${(err as RouterError).status} ${(err as Error).message}`;
  }
  throw new Error('accepted');
}

describe('tool definitions read by their bytes', () => {
  it('counts the same texts as a whole parse, the first time and when the bytes repeat', () => {
    const t = tools('same');
    const bodies = [0, 1, 2].map((i) => Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `question ${i}` }], tools: t, temperature: 0 })));
    const first = prompt(bodies[0]);
    expect(first.req.toolsText).toBe(JSON.stringify(t));
    expect(first.req.body.tools).toBeUndefined();
    expect(first.req.body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'question 0' }], temperature: 0 });
    expect(first.prompt).toEqual(wholePrompt(bodies[0]));
    for (const raw of bodies.slice(1)) {
      const again = prompt(raw);
      // The text made the first time, not written again (the count cache then compares it by reference).
      expect(again.req.toolsText).toBe(first.req.toolsText);
      expect(again.prompt).toEqual(wholePrompt(raw));
    }
  });

  it('counts the compact JSON whatever white space and escapes the client sent', () => {
    const t = tools('pretty');
    const pretty = Buffer.from(JSON.stringify({ model: 'm', tools: t, messages: [{ role: 'user', content: 'hi' }] }, null, 2));
    const escaped = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], tools: t }).replace(/é/g, '\\u00e9'));
    for (const raw of [pretty, escaped, pretty, escaped]) {
      const { req, prompt: p } = prompt(raw);
      expect(req.toolsText).toBe(JSON.stringify(t));
      expect(p).toEqual(wholePrompt(raw));
    }
    // A key spelled with escapes is not looked for by its bytes: the body is parsed whole, with the same count.
    const escapedKey = Buffer.from(escaped.toString().replace('"tools"', '"\\u0074ools"'));
    const { req, prompt: p } = prompt(escapedKey);
    expect(req.toolsText).toBeNull();
    expect(p).toEqual(wholePrompt(escapedKey));
  });

  it('reads the member first, last, alone with the model, after a byte order mark, and for the Responses API', () => {
    const t = tools('places');
    const bodies = [
      `{"tools":${JSON.stringify(t)},"model":"m","messages":[{"role":"user","content":"a"}]}`,
      `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${JSON.stringify(t)}}`,
      `\uFEFF{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${JSON.stringify(t)}}`,
    ];
    for (const text of bodies) {
      for (let k = 0; k < 2; k++) {
        const raw = Buffer.from(text);
        const { req, prompt: p } = prompt(raw);
        expect(req.toolsText).not.toBeNull();
        expect(req.model).toBe('m');
        expect(p).toEqual(wholePrompt(raw));
      }
    }
    const responses = Buffer.from(JSON.stringify({ model: 'm', instructions: 'be brief', input: 'hi', tools: t }));
    for (let k = 0; k < 2; k++) {
      const { req, prompt: p } = prompt(responses, '/v1/responses');
      expect(req.toolsText).toBe(JSON.stringify(t));
      expect(p).toEqual(wholePrompt(responses, '/v1/responses'));
    }
  });

  it('parses the body whole when the tools are named twice, are small, are not an array, or are absent', () => {
    const t = tools('whole');
    const cases = [
      `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":[{"x":1}],"tools":${JSON.stringify(t)}}`,
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'a' }], tools: [{ type: 'function', function: { name: 'f' } }] }),
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'say "tools": ' + 'x'.repeat(300) }] }),
    ];
    for (const text of cases) {
      const raw = Buffer.from(text);
      const { req, prompt: p } = prompt(raw);
      expect(req.toolsText).toBeNull();
      expect(p).toEqual(wholePrompt(raw));
    }
    expect(prompt(Buffer.from(cases[0])).req.body.tools).toEqual(t);
    // Large but not an array: counted as nothing, as when parsed whole.
    const notArray = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'a' }], tools: { many: t } }));
    for (let k = 0; k < 2; k++) {
      const { req, prompt: p } = prompt(notArray);
      expect(req.toolsText).toBe('');
      expect(p).toEqual(wholePrompt(notArray));
    }
  });

  it('refuses a broken body with the same error as a whole parse, known tools or not', () => {
    const t = JSON.stringify(tools('broken'));
    const good = Buffer.from(`{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${t}}`);
    prompt(good);
    const broken = [
      `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${t.replace('"type"', '"type" 1')}}`,
      `{"model":"m","messages":[{"role":"user","content":a}],"tools":${t}}`,
      `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${t}]}`,
      `{"model":"m","messages":[{"role":"user","content":"a"}],"tools":${t},}`,
      `{"messages":[{"role":"user","content":"a"}],"tools":${t}}`,
    ];
    for (const text of broken) {
      const raw = Buffer.from(text);
      let whole = '';
      try {
        JSON.parse(text);
        whole = '400 request body must name a model: "model" must be a non-empty string';
      } catch (err) {
        whole = `400 request body is not valid JSON: ${(err as Error).message}`;
      }
      expect(errorOf(() => parseRequest(raw, CHAT)), text.slice(0, 80)).toBe(whole);
    }
  });

  it('sends the tools upstream when a body named twice is written again', () => {
    const t = tools('upstream');
    const raw = Buffer.from(`{"model":"a","model":"m","stream":true,"messages":[{"role":"user","content":"a"}],"tools":${JSON.stringify(t)}}`);
    for (let k = 0; k < 2; k++) {
      const req = parseRequest(raw, CHAT);
      expect(req.toolsText).not.toBeNull();
      const up = buildUpstreamBody(raw, req, 'served');
      expect(JSON.parse(up.body.toString())).toEqual({ model: 'served', stream: true, messages: [{ role: 'user', content: 'a' }], tools: t, stream_options: { include_usage: true } });
    }
  });

  it('is what the chat API counts', () => {
    const t = tools('api');
    const raw = Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'a' }], tools: t }));
    for (let k = 0; k < 2; k++) expect(openAiApi.promptText(openAiApi.parse(raw, CHAT))).toEqual(wholePrompt(raw));
  });
});

describe('tool definitions read by their bytes, against a whole parse (seeded random bodies)', () => {
  it('gives the same body, texts and errors for 400 bodies of random member order, spacing and breakage', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const toolSets = [tools('fz0'), tools('fz1'), tools('fz2').slice(0, 3)].map((t) => JSON.stringify(t));
    const spaces = ['', ' ', '\n  ', '\t'];
    let byBytes = 0;
    for (let n = 0; n < 400; n++) {
      const sp = () => spaces[rand(spaces.length)];
      const members = [
        `"model"${sp()}:${sp()}"m"`,
        `"messages":[{"role":"user","content":"q ${n} \\"tools\\": [] ${'x'.repeat(rand(300))}"},{"role":"tool","content":"{\\"tools\\":1}","tools":[1]}]`,
        `"tools"${sp()}:${sp()}${toolSets[rand(toolSets.length)]}`,
        `"temperature":${rand(3)}`,
      ];
      if (rand(8) === 0) members.push(`"tools":${toolSets[0]}`);
      for (let i = members.length - 1; i > 0; i--) {
        const j = rand(i + 1);
        [members[i], members[j]] = [members[j], members[i]];
      }
      let text = `${sp()}{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}${sp()}`;
      if (rand(6) === 0) {
        const at = rand(text.length);
        text = text.slice(0, at) + ['}', ',', '"', 'x', ']'][rand(5)] + text.slice(at);
      }
      const raw = Buffer.from(text);
      let whole: unknown;
      try {
        whole = JSON.parse(text);
      } catch {
        whole = undefined;
      }
      if (whole === undefined || typeof (whole as { model?: unknown }).model !== 'string') {
        expect(() => parseRequest(raw, CHAT), text).toThrow(RouterError);
        continue;
      }
      const req = parseRequest(raw, CHAT);
      if (req.toolsText !== null) {
        byBytes++;
        expect({ ...req.body, tools: JSON.parse(req.toolsText) }, text).toEqual(whole);
      } else expect(req.body, text).toEqual(whole);
      expect(extractPromptText(req.body, req.api, req.toolsText), text).toEqual(extractPromptText(whole as Record<string, unknown>, 'chat'));
    }
    expect(byBytes).toBeGreaterThan(200);
  });
});
