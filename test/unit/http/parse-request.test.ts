import { describe, expect, it } from 'vitest';
import { RouterError } from '../../../src/errors.js';
import { apiKindOf, parseRequest } from '../../../src/api/openai-request.js';

const buf = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

function rejects(raw: unknown, url: string, msg: RegExp): void {
  try {
    parseRequest(buf(raw), url);
    throw new Error('accepted');
  } catch (err) {
    expect(err).toBeInstanceOf(RouterError);
    expect((err as RouterError).type).toBe('invalid_request');
    expect((err as RouterError).status).toBe(400);
    expect((err as Error).message).toMatch(msg);
  }
}

describe('parseRequest', () => {
  it('knows the API by path', () => {
    expect(apiKindOf('/v1/completions')).toBe('completions');
    expect(apiKindOf('/v1/chat/completions')).toBe('chat');
    expect(apiKindOf('/v1/embeddings')).toBe('other');
  });

  it('reads model, stream and whether the client asked for stream usage', () => {
    const r = parseRequest(buf({ model: 'm', prompt: 'p', stream: true, stream_options: { include_usage: true } }), '/v1/completions');
    expect(r).toMatchObject({ model: 'm', api: 'completions', stream: true, clientAskedUsage: true });
    const c = parseRequest(buf({ model: 'm', messages: [{ role: 'user', content: 'x' }] }), '/v1/chat/completions');
    expect(c).toMatchObject({ stream: false, clientAskedUsage: false, api: 'chat' });
    expect(parseRequest(buf({ model: 'e', input: 'x' }), '/v1/embeddings').api).toBe('other');
  });

  it('rejects malformed bodies with a message naming the problem', () => {
    rejects('', '/v1/completions', /empty/);
    rejects('{', '/v1/completions', /not valid JSON/);
    rejects('\ufeff', '/v1/completions', /not valid JSON/);
    rejects('\ufeff\ufeff{"model":"m","prompt":"p"}', '/v1/completions', /not valid JSON/);
    rejects('"str"', '/v1/completions', /JSON object/);
    rejects({ prompt: 'x' }, '/v1/completions', /"model"/);
    rejects({ model: 3, prompt: 'x' }, '/v1/completions', /"model"/);
    rejects({ model: 'm' }, '/v1/completions', /"prompt" is required/);
    rejects({ model: 'm', prompt: 7 }, '/v1/completions', /"prompt"/);
    rejects({ model: 'm', messages: 'hi' }, '/v1/chat/completions', /"messages" is required/);
  });

  it('says when the body that is not JSON is a form (curl -F, or -d with fields), and only then', () => {
    const multipart = '--------------------------d74496d66958873e\r\nContent-Disposition: form-data; name="model"\r\n\r\nsf-model\r\n--------------------------d74496d66958873e--\r\n';
    rejects(multipart, '/v1/completions', /^request body is not valid JSON \(it is a multipart form, as curl -F sends; send the JSON object itself.*\): /);
    rejects('model=sf-model&prompt=hi', '/v1/completions', /^request body is not valid JSON \(it looks like form fields, name=value; send a JSON object.*\): /);
    rejects('model=sf-model', '/v1/chat/completions', /form fields/);
    // Broken JSON, or text that is neither: the parser's message alone.
    rejects('{"model": "m", ', '/v1/completions', /^request body is not valid JSON: /);
    rejects('hello', '/v1/completions', /^request body is not valid JSON: /);
    rejects('--x\r\nnot a part', '/v1/completions', /^request body is not valid JSON: /);
  });

  it('skips a UTF-8 byte order mark before the JSON, as the model servers do', () => {
    const raw = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), buf({ model: 'm', prompt: 'p' })]);
    const r = parseRequest(raw, '/v1/completions');
    expect(r.model).toBe('m');
    expect(r.body).toEqual({ model: 'm', prompt: 'p' });
  });
});
