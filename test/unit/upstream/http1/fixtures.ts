/** Full responses used by the parser and socket conformance tests, with what each must parse to. */
export interface Fixture {
  readonly name: string;
  readonly bytes: Buffer;
  readonly status: number;
  readonly body: string;
  readonly trailers: string[] | null;
  /** The body ends only when the connection does. */
  readonly closeDelimited: boolean;
  readonly keepAlive: boolean;
  readonly head?: boolean;
}

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

export const FIXTURES: readonly Fixture[] = [
  {
    name: 'content-length',
    bytes: b('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 27\r\nX-Multi: a\r\nX-Multi: b\r\n\r\n{"id":"cmpl-1","ok":"yes!"}'),
    status: 200, body: '{"id":"cmpl-1","ok":"yes!"}', trailers: null, closeDelimited: false, keepAlive: true,
  },
  {
    name: 'chunked with extensions and trailers',
    bytes: b('HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n'
      + '8;ext=1\r\ndata: a\n\r\n' + 'B \t; name="v"\r\nhello world\r\n' + '0;last\r\nx-usage: 42\r\nServer-Timing: db;dur=5\r\n\r\n'),
    status: 200, body: 'data: a\nhello world', trailers: ['x-usage', '42', 'Server-Timing', 'db;dur=5'], closeDelimited: false, keepAlive: true,
  },
  {
    name: 'chunked, empty trailers, upper-case hex',
    bytes: b('HTTP/1.1 201 Created\r\nTransfer-Encoding: Chunked\r\n\r\n1F\r\n0123456789abcdef0123456789ABCDE\r\n0\r\n\r\n'),
    status: 201, body: '0123456789abcdef0123456789ABCDE', trailers: null, closeDelimited: false, keepAlive: true,
  },
  {
    name: 'chunked, sizes with leading zeros (the last of 21 digits)',
    bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0005\r\nhello\r\n000000000000000000000\r\n\r\n'),
    status: 200, body: 'hello', trailers: null, closeDelimited: false, keepAlive: true,
  },
  {
    name: 'close-delimited',
    bytes: b('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end of the connection'),
    status: 200, body: 'until the end of the connection', trailers: null, closeDelimited: true, keepAlive: false,
  },
  {
    name: '1xx interim responses, then the answer',
    bytes: b('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal'),
    status: 200, body: 'final', trailers: null, closeDelimited: false, keepAlive: true,
  },
  {
    name: '204 without a body, no reason phrase',
    bytes: b('HTTP/1.1 204\r\nx-a: 1\r\n\r\n'),
    status: 204, body: '', trailers: null, closeDelimited: false, keepAlive: true,
  },
  {
    name: 'connection: close with content-length',
    bytes: b('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbusy'),
    status: 503, body: 'busy', trailers: null, closeDelimited: false, keepAlive: false,
  },
  {
    name: 'HTTP/1.0 keep-alive',
    bytes: b('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok'),
    status: 200, body: 'ok', trailers: null, closeDelimited: false, keepAlive: true,
  },
];

export interface Malformed { readonly name: string; readonly bytes: Buffer; readonly message: RegExp; readonly code?: string }

export const MALFORMED: readonly Malformed[] = [
  { name: 'bad status line', bytes: b('HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n'), message: /bad status line "HTTP\/1.1 2x0 OK"/ },
  { name: 'not HTTP', bytes: b('SSH-2.0-OpenSSH_9.2\r\n\r\n'), message: /bad status line/ },
  { name: 'HTTP/2 status line', bytes: b('HTTP/2 200 OK\r\n\r\n'), message: /bad status line/ },
  { name: 'bad chunk size', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n'), message: /bad chunk size/ },
  { name: 'chunk without CRLF after data', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n'), message: /chunk data not followed by CRLF/ },
  { name: 'chunk size too large', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n'), message: /chunk size too large/ },
  { name: 'conflicting content-length', bytes: b('HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello'), message: /conflicting content-length/ },
  { name: 'conflicting content-length list', bytes: b('HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\nhello'), message: /conflicting content-length/ },
  { name: 'negative content-length', bytes: b('HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n'), message: /bad content-length/ },
  { name: 'space before colon', bytes: b('HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n'), message: /bad header name/ },
  { name: 'obsolete line folding', bytes: b('HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n'), message: /bad header name|without a colon/ },
  { name: 'bare LF in a header', bytes: b('HTTP/1.1 200 OK\r\nX-A: 1\nX-B: 2\r\nContent-Length: 0\r\n\r\n'), message: /bare CR or LF/ },
  { name: '101 switching protocols', bytes: b('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n'), message: /unexpected 101/ },
  { name: 'NUL in a header value', bytes: b('HTTP/1.1 200 OK\r\nX-A: 1\u00002\r\nContent-Length: 0\r\n\r\n'), message: /bare CR or LF or NUL/ },
  { name: 'bare CR in a header value', bytes: b('HTTP/1.1 200 OK\r\nX-A: 1\r2\r\nContent-Length: 0\r\n\r\n'), message: /bare CR or LF or NUL/ },
  { name: 'every line ended by LF alone', bytes: b('HTTP/1.1 200 OK\nx-a: one\ncontent-length: 2\n\nok'), message: /bare CR or LF or NUL/ },
  { name: 'CRLF lines, the head ended by LF LF', bytes: b('HTTP/1.1 200 OK\r\ncontent-length: 2\n\nok'), message: /bare CR or LF or NUL/ },
  { name: 'chunk size of 14 significant digits', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000\r\n'), message: /chunk size too large/ },
  { name: 'bare LF in the status line', bytes: b('HTTP/1.1 200 O\nK\r\nContent-Length: 0\r\n\r\n'), message: /bare CR or LF or NUL/ },
  { name: 'header line without a colon', bytes: b('HTTP/1.1 200 OK\r\nX-A 1\r\nContent-Length: 0\r\n\r\n'), message: /header line without a colon: "X-A 1"/ },
  { name: 'empty header name', bytes: b('HTTP/1.1 200 OK\r\n: 1\r\nContent-Length: 0\r\n\r\n'), message: /bad header name ""/ },
  { name: 'non-token byte in a header name', bytes: b('HTTP/1.1 200 OK\r\nX-\u00e9: 1\r\nContent-Length: 0\r\n\r\n'), message: /bad header name "X-\u00e9"/ },
  { name: 'gzip before chunked', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'), message: /transfer coding "gzip, chunked" not supported/ },
  { name: 'chunked not last (close-delimited)', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\nok\r\n0\r\n\r\n'), message: /transfer coding "chunked, gzip" not supported/ },
  { name: 'chunked applied twice, in two headers', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'), message: /transfer coding "chunked, chunked" not supported/ },
  { name: 'a lone transfer coding other than chunked', bytes: b('HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok'), message: /transfer coding "identity" not supported/ },
  { name: 'header too large', bytes: b(`HTTP/1.1 200 OK\r\nX-Big: ${'x'.repeat(20_000)}\r\nContent-Length: 0\r\n\r\n`), message: /header section larger than 16384 bytes/, code: 'HTTP1_HEADERS_TOO_LARGE' },
];
