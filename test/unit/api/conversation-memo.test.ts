import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CONVERSATION_MEMO_BYTES, ConversationMemo, MIN_CONVERSATION_BYTES } from '../../../src/api/conversation-memo.js';
import { conversationMemoStats, keepConversations, parseRequest } from '../../../src/api/openai-request.js';
import { extractPromptText } from '../../../src/api/openai-prompt.js';
import { mulberry32 } from '../../helpers/mulberry32.js';
import { createTokenCounter } from '../../../src/tokens/create-token-counter.js';

const jsonTail = (tail: Buffer): unknown => JSON.parse(tail.toString('utf8'));

/** JSON.parse's value of raw, or its error's kind. */
function reference(raw: Buffer, from = 0): unknown {
  try {
    return JSON.parse(raw.toString('utf8', from));
  } catch {
    return 'invalid';
  }
}

/** The memo's value of raw (learning as parseRequest does), or 'invalid' where the whole parse throws. */
function viaMemo(memo: ConversationMemo, raw: Buffer, from = 0): unknown {
  const found = memo.parse(raw, from, jsonTail);
  if (found !== null) return found;
  const whole = reference(raw, from);
  if (whole !== 'invalid') memo.learn(raw, from, whole);
  return whole;
}

const PIECES = ['plain words', 'a brace } and {', '"quoted" text', 'code: {"a": [1, 2]}, {"b": 3}', 'back\\slash', 'é ü 漢字 🙂', '], "model": "x"}', '},{"role":"user"', 'line\nbreak\ttab'];

function message(rand: () => number, n: number): { role: string; content: string } {
  let content = `turn ${n}:`;
  while (content.length < 40 + rand() * 200) content += ` ${PIECES[Math.floor(rand() * PIECES.length)]}`;
  return { role: n % 2 === 0 ? 'user' : 'assistant', content };
}

/** A body as one of several clients would write it: compact, Python's separators, or indented. */
function write(rand: () => number, style: number, body: Record<string, unknown>): Buffer {
  if (style === 0) return Buffer.from(JSON.stringify(body));
  if (style === 1) return Buffer.from(JSON.stringify(body).replace(/","/g, '", "').replace(/},{/g, '}, {'));
  return Buffer.from(JSON.stringify(body, null, rand() < 0.5 ? 2 : '\t'));
}

describe('ConversationMemo', () => {
  it('gives what JSON.parse gives, for conversations that grow turn by turn in every style, and takes most from what it kept', () => {
    const rand = mulberry32(20261205);
    const memo = new ConversationMemo(8 * 1024 * 1024);
    let bodies = 0;
    for (let c = 0; c < 12; c++) {
      const style = c % 3;
      const messages: { role: string; content: string }[] = [{ role: 'system', content: `conversation ${c}: ${'rules. '.repeat(1200)}` }];
      const before = rand() < 0.5 ? { model: `m-${c}`, temperature: 0.5 } : { model: `m-${c}` };
      for (let turn = 0; turn < 20; turn++) {
        messages.push(message(rand, turn * 2), message(rand, turn * 2 + 1));
        const after: Record<string, unknown> = rand() < 0.5 ? { stream: true, stream_options: { include_usage: true } } : {};
        if (rand() < 0.3) after.tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
        const raw = write(rand, style, { ...before, messages, ...after });
        if (raw.length < MIN_CONVERSATION_BYTES) continue;
        bodies++;
        expect(isDeepStrictEqual(viaMemo(memo, raw), reference(raw)), `conversation ${c}, turn ${turn}`).toBe(true);
      }
    }
    expect(bodies).toBeGreaterThan(200);
    // Every conversation's first body is parsed whole; most later ones go on from a kept one.
    expect(memo.stats.found).toBeGreaterThan(bodies * 0.8);
  });

  it('takes a kept conversation only when all its bytes are the body\'s, not just those its key reads', () => {
    const memo = new ConversationMemo(1024 * 1024);
    const turns = [{ role: 'user', content: 'same question' }, { role: 'assistant', content: 'same answer' }, { role: 'user', content: 'same again' }];
    // Two conversations of the same length whose last 64 bytes before the end of their messages are alike.
    const a = [{ role: 'system', content: 'A'.repeat(9000) }, ...turns];
    const b = [{ role: 'system', content: 'B'.repeat(9000) }, ...turns];
    viaMemo(memo, Buffer.from(JSON.stringify({ model: 'm', messages: a })));
    const next = Buffer.from(JSON.stringify({ model: 'm', messages: [...b, { role: 'assistant', content: 'more' }] }));
    expect(viaMemo(memo, next)).toEqual(JSON.parse(next.toString()));
    expect(memo.stats.found).toBe(0);
  });

  it('takes a body sent again (a retry) whole from what it kept', () => {
    const memo = new ConversationMemo(1024 * 1024);
    const messages = [{ role: 'system', content: 'x'.repeat(9000) }, { role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }];
    const raw = Buffer.from(JSON.stringify({ model: 'm', messages, n: 1 }));
    viaMemo(memo, raw);
    expect(memo.parse(raw, 0, jsonTail)).toEqual(JSON.parse(raw.toString()));
    expect(memo.stats.found).toBe(1);
  });

  describe('a body that goes on from a kept conversation but is not valid JSON, or not as it seems, is left to the whole parse', () => {
    const messages = [{ role: 'system', content: 'y'.repeat(9000) }, { role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }];
    const first = JSON.stringify({ model: 'm', messages, stream: true });
    const prefix = first.slice(0, first.lastIndexOf(']'));
    const cases: [string, string][] = [
      ['a trailing comma in the messages', `${prefix},{"role":"user","content":"x"},],"stream":true}`],
      ['an empty element', `${prefix},,{"role":"user","content":"x"}],"stream":true}`],
      ['a message that is not closed', `${prefix},{"role":"user","content":"x"],"stream":true}`],
      ['a broken value in a new message', `${prefix},{"role":"user","content":x}],"stream":true}`],
      ['a trailing comma in the members after', `${prefix},{"role":"user","content":"x"}],"stream":true,}`],
      ['bytes after the object', `${prefix},{"role":"user","content":"x"}],"stream":true} x`],
      ['a comma and no member', `${prefix},{"role":"user","content":"x"}],}`],
      ['a new element that is not an object', `${prefix},"text"],"stream":true}`],
      ['__proto__ after the messages', `${prefix},{"role":"user","content":"x"}],"__proto__":{"polluted":1}}`],
    ];
    for (const [what, text] of cases) {
      it(what, () => {
        const memo = new ConversationMemo(1024 * 1024);
        viaMemo(memo, Buffer.from(first));
        const raw = Buffer.from(text);
        expect(memo.parse(raw, 0, jsonTail)).toBeNull();
        // The whole parse then says what JSON.parse says (the memo's null changes nothing).
        expect(viaMemo(memo, raw)).toEqual(reference(raw));
      });
    }
  });

  it('a member named again after the messages takes its last value, where it first came, as JSON.parse; messages named again too', () => {
    const memo = new ConversationMemo(1024 * 1024);
    const messages = [{ role: 'system', content: 'z'.repeat(9000) }, { role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }, { role: 'user', content: 'q2' }];
    const first = JSON.stringify({ model: 'm', temperature: 1, messages });
    viaMemo(memo, Buffer.from(first));
    const prefix = first.slice(0, first.lastIndexOf(']'));
    for (const text of [
      `${prefix},{"role":"user","content":"x"}],"model":"other","stream":false}`,
      `${prefix},{"role":"user","content":"x"}],"messages":[{"role":"user","content":"only"}]}`,
    ]) {
      const raw = Buffer.from(text);
      const found = memo.parse(raw, 0, jsonTail);
      expect(found).not.toBeNull();
      expect(JSON.stringify(found)).toBe(JSON.stringify(JSON.parse(text)));
    }
  });

  it('does not keep bodies with a member named twice, an escaped name or __proto__, nor short ones or ones of fewer than 3 messages', () => {
    const memo = new ConversationMemo(1024 * 1024);
    const three = [{ role: 'system', content: 'w'.repeat(9000) }, { role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }];
    const texts = [
      `{"model":"m","model":"n","messages":${JSON.stringify(three)}}`,
      `{"mod\\u0065l":"m","messages":${JSON.stringify(three)}}`,
      `{"__proto__":{},"model":"m","messages":${JSON.stringify(three)}}`,
      JSON.stringify({ model: 'm', messages: three.slice(0, 2) }),
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'short' }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'b' }] }),
    ];
    for (const t of texts) viaMemo(memo, Buffer.from(t));
    expect(memo.stats.kept).toBe(0);
  });

  it('reads a body after a byte order mark, from `from`', () => {
    const memo = new ConversationMemo(1024 * 1024);
    const messages = [{ role: 'system', content: 'v'.repeat(9000) }, { role: 'user', content: 'q1' }, { role: 'assistant', content: 'a1' }];
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    viaMemo(memo, Buffer.concat([bom, Buffer.from(JSON.stringify({ model: 'm', messages }))]), 3);
    messages.push({ role: 'user', content: 'q2' });
    const raw = Buffer.concat([bom, Buffer.from(JSON.stringify({ model: 'm', messages }))]);
    expect(memo.parse(raw, 3, jsonTail)).toEqual({ model: 'm', messages });
  });
});

/** Bodies of one conversation growing by an answer and a question of about 1 KB a turn, from a 9 KB system prompt and a greeting. */
function growingConversation(turns: number): Buffer[] {
  const messages: { role: string; content: string }[] = [{ role: 'system', content: 's'.repeat(9000) }, { role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi' }];
  const bodies: Buffer[] = [];
  for (let turn = 0; turn < turns; turn++) {
    messages.push({ role: 'user', content: `question ${turn} ${'q'.repeat(500)}` });
    bodies.push(Buffer.from(JSON.stringify({ model: 'm', messages })));
    messages.push({ role: 'assistant', content: `answer ${turn} ${'a'.repeat(500)}` });
  }
  return bodies;
}

describe('the memory of the memo (ROUTER_TOKENIZER_CONVERSATION_BYTES)', () => {
  it('keeps nothing with none, and still gives what JSON.parse gives', () => {
    const memo = new ConversationMemo(0);
    for (const raw of growingConversation(6)) expect(viaMemo(memo, raw)).toEqual(reference(raw));
    expect(memo.stats).toEqual({ found: 0, kept: 0 });
  });

  it('keeps no conversation charged more than half of it: a longer turn goes on from the last one kept', () => {
    // 120,000 bytes: a generation of 60,000, a conversation charged three times its bytes: at most 20,000 of them.
    const memo = new ConversationMemo(120_000);
    const bodies = growingConversation(14);
    for (const raw of bodies) expect(viaMemo(memo, raw)).toEqual(reference(raw));
    // A body's messages end 2 bytes before its end (`]}`): kept up to 20,000 bytes, then no longer kept.
    const keptTurns = bodies.filter((raw) => raw.length - 2 <= 20_000).length;
    expect(keptTurns).toBeGreaterThan(3);
    expect(keptTurns).toBeLessThan(bodies.length - 2);
    expect(memo.stats.kept).toBe(keptTurns);
    // Every turn after the first is still found: those past the size go on from the last one kept.
    expect(memo.stats.found).toBe(bodies.length - 1);
  });

  it('lets go of what it kept when its memory is set again', () => {
    const memo = new ConversationMemo(CONVERSATION_MEMO_BYTES);
    const [first, second, third] = growingConversation(3);
    viaMemo(memo, first);
    expect(memo.parse(second, 0, jsonTail)).not.toBeNull();
    memo.setMaxBytes(CONVERSATION_MEMO_BYTES);
    expect(memo.parse(third, 0, jsonTail)).toBeNull();
  });
});

describe('parseRequest with the memo', () => {
  it('refuses a turn that goes on from a kept conversation and nests too deep, with the whole check\'s error, and keeps nothing of it', () => {
    const bodies = growingConversation(2);
    for (const raw of bodies) parseRequest(raw, '/v1/chat/completions');
    const kept = bodies[1].toString().slice(0, -2); // `{"model":"m","messages":[...` without `]}`
    const deep = `${kept},{"role":"assistant","content":"a"},{"role":"user","content":${'['.repeat(600)}"x"${']'.repeat(600)}}`;
    const error = 'request body nests arrays/objects deeper than 512 levels';
    expect(() => parseRequest(Buffer.from(`${deep}]}`), '/v1/chat/completions')).toThrow(error);
    // Had the refused turn been kept, this one would go on from it and have only its own new bytes checked.
    const next = Buffer.from(`${deep},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]}`);
    expect(() => parseRequest(next, '/v1/chat/completions')).toThrow(error);
    // A turn that nests within the limit goes on from the kept conversation.
    const fine = Buffer.from(`${kept},{"role":"assistant","content":"a"},{"role":"user","content":${'['.repeat(500)}"x"${']'.repeat(500)}}]}`);
    expect(parseRequest(fine, '/v1/chat/completions').conversation).not.toBeNull();
  });

  it('keeps no conversation when its memory is set to none, and the same again when set back', () => {
    const bodies = growingConversation(4);
    try {
      keepConversations(0);
      const found = conversationMemoStats.found;
      for (const raw of bodies) expect(parseRequest(raw, '/v1/chat/completions').conversation).toBeNull();
      expect(conversationMemoStats.found).toBe(found);
      keepConversations(CONVERSATION_MEMO_BYTES);
      const turns = bodies.map((raw) => parseRequest(raw, '/v1/chat/completions'));
      expect(turns.map((req) => req.conversation !== null)).toEqual([false, true, true, true]);
      expect(turns.map((req) => req.body)).toEqual(bodies.map((raw) => JSON.parse(raw.toString())));
    } finally {
      keepConversations(CONVERSATION_MEMO_BYTES);
    }
  });

  it('gives the same request and prompt as a whole parse, tools after the messages included', () => {
    const found = conversationMemoStats.found;
    const tools = [{ type: 'function', function: { name: 'lookup', description: 'd'.repeat(300), parameters: { type: 'object', properties: { id: { type: 'string' } } } } }];
    const messages: { role: string; content: string }[] = [{ role: 'system', content: 's'.repeat(9000) }];
    for (let turn = 0; turn < 8; turn++) {
      messages.push({ role: 'user', content: `question ${turn}` }, { role: 'assistant', content: `answer ${turn}` }, { role: 'user', content: `next ${turn}` });
      const raw = Buffer.from(JSON.stringify({ model: 'sf-model', messages, tools, stream: true }));
      const req = parseRequest(raw, '/v1/chat/completions');
      const whole = JSON.parse(raw.toString()) as Record<string, unknown>;
      // Tools read by their bytes come as their text, the body without them (openai-tools.ts).
      const { tools: _tools, ...rest } = whole;
      expect(req.toolsText === null ? req.body : { ...req.body, tools: whole.tools }).toEqual(whole);
      expect(req.body).toMatchObject(rest);
      expect(extractPromptText(req.body, 'chat', req.toolsText)).toEqual(extractPromptText(whole, 'chat', null));
      expect(req.stream).toBe(true);
    }
    // The first body is parsed whole and kept; each later one goes on from the one before.
    expect(conversationMemoStats.found - found).toBe(7);
  });
});

describe('the count of a conversation kept with it', () => {
  const settings = { estimator: 'bpe' as const, inlineMaxChars: 1e9, poolSize: 0, queue: 64, budgetMs: 200, cacheChars: 4_000_000, parseMinBytes: 262_144, conversationBytes: 0 };

  it('counts each turn as a whole count does, and from its third turn on reads only the texts of its last two turns', async () => {
    const rand = mulberry32(7);
    const counter = createTokenCounter(settings);
    const reference = createTokenCounter({ ...settings, cacheChars: 0 });
    const messages: { role: string; content: unknown }[] = [{ role: 'system', content: `count me: ${'policy words. '.repeat(700)}` }];
    const textsRead: number[] = [];
    for (let turn = 0; turn < 12; turn++) {
      messages.push(message(rand, turn * 2), message(rand, turn * 2 + 1));
      // An image part now and then: its estimate is kept with the conversation too.
      if (turn % 4 === 1) messages.push({ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] });
      const raw = Buffer.from(JSON.stringify({ model: 'sf-model', messages, max_tokens: 10 }));
      const req = parseRequest(raw, '/v1/chat/completions');
      const p = extractPromptText(req.body, 'chat', req.toolsText, req.conversation);
      textsRead.push(p.texts.length);
      const whole = extractPromptText(JSON.parse(raw.toString()) as Record<string, unknown>, 'chat', null);
      expect(await counter.countPrompt(p), `turn ${turn}`).toBe(await reference.countPrompt(whole));
      expect(p.messages).toBe(whole.messages);
    }
    // The first turn is parsed whole, the second reads every text again (their count is kept then).
    expect(textsRead[0]).toBeGreaterThan(4);
    // Later ones the texts of their last two turns: the one before (counted this turn, kept with it) and their own.
    expect(textsRead.slice(3).every((n) => n <= 12), String(textsRead)).toBe(true);
    await counter.close?.();
  });

  it('without the cache of repeated texts, reads every text each turn and counts the same', async () => {
    const rand = mulberry32(8);
    const counter = createTokenCounter({ ...settings, cacheChars: 0 });
    const messages: { role: string; content: string }[] = [{ role: 'system', content: `no cache: ${'other words. '.repeat(800)}` }];
    for (let turn = 0; turn < 5; turn++) {
      messages.push(message(rand, turn * 2), message(rand, turn * 2 + 1));
      const raw = Buffer.from(JSON.stringify({ model: 'sf-model', messages }));
      const req = parseRequest(raw, '/v1/chat/completions');
      const p = extractPromptText(req.body, 'chat', req.toolsText, req.conversation);
      const whole = extractPromptText(JSON.parse(raw.toString()) as Record<string, unknown>, 'chat', null);
      expect(p.texts).toEqual(whole.texts);
      expect(await counter.countPrompt(p)).toBe(await counter.countPrompt(whole));
    }
  });
});
