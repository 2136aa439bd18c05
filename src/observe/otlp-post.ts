import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { gzip } from 'node:zlib';
import { otlpTlsStamp, readOtlpTls, type OtlpTlsMaterial } from './otlp-tls.js';
import type { TraceSettings } from './trace-settings.js';

/** The exporter's lines in the operational log. */
export type ExportLog = (level: 'info' | 'warn', message: string) => void;

/** What one POST to the collector came to: the status it answered, or why there was no answer. */
export type PostOutcome = { readonly status: number; readonly failure: null } | { readonly status: 0; readonly failure: string };

/** An idle connection to the collector is closed after this long (as undici's default), before a server's usual 5 s. */
const IDLE_MS = 4000;

/**
 * zlib level of OTEL_EXPORTER_OTLP_COMPRESSION=gzip: a batch of 512 spans (about 570 KB) to about
 * 47 KB in about 1.2 ms of CPU, on the thread pool; the default level 6 takes 2.5 times as long
 * for 10% less (docs/tracing.md).
 */
const GZIP_LEVEL = 3;

/**
 * The export's HTTP leg (otlp-exporter.ts): one POST of a batch's bytes at a time over one kept
 * connection (node:http or node:https by the endpoint's scheme), its answer read and discarded.
 * The body is written as it is (no copy, unlike fetch, which clones a byte body and builds a
 * Request, Headers and streams per call), and `send` resolves only once the request is closed,
 * so the caller may fill the same buffer again. A request sent on a kept connection that the
 * collector closed meanwhile (the race of an idle close) is sent once more on a new one.
 *
 * With TLS files (otlp-tls.ts), each export first looks whether they changed (a stat of each, once
 * per export): if so they are read again and, when they pass the checks, the next connection uses
 * them; files that fail the checks are logged and the ones read before stay in use.
 */
export class CollectorPost {
  private readonly url: URL;
  private agent: HttpAgent;
  private readonly request: typeof httpRequest;
  private readonly headers: Record<string, string>;
  private readonly tls: TraceSettings['tls'];
  /** The TLS files' stamp when last read (otlpTlsStamp). */
  private tlsStamp: string;
  private readonly gzip: boolean;
  private readonly log: ExportLog | null;

  /** `opts`: the TLS files (none: Node's CA list), where TLS reloads are logged, the body's compression (none). */
  constructor(endpoint: string, headers: Record<string, string>, private readonly timeoutMs: number,
    opts: { tls?: TraceSettings['tls']; log?: ExportLog | null; compression?: TraceSettings['compression'] } = {}) {
    this.log = opts.log ?? null;
    this.url = new URL(endpoint);
    this.gzip = opts.compression === 'gzip';
    const secure = this.url.protocol === 'https:';
    this.tls = secure ? opts.tls ?? null : null;
    this.tlsStamp = this.tls === null ? '' : otlpTlsStamp(this.tls.files);
    this.agent = secure ? newHttpsAgent(this.tls?.material ?? null) : new HttpAgent(AGENT_OPTIONS);
    this.request = secure ? httpsRequest : httpRequest;
    this.headers = this.gzip ? { ...headers, 'content-encoding': 'gzip' } : headers;
  }

  /**
   * POSTs `body` (gzipped first on the thread pool with compression); resolves (never rejects) once
   * the request is over, the answer read or given up on.
   */
  send(body: Uint8Array): Promise<PostOutcome> {
    if (this.tls !== null) this.reloadTlsIfChanged(this.tls);
    const deadline = Date.now() + this.timeoutMs;
    if (!this.gzip) return new Promise<PostOutcome>((resolve) => this.attempt(body, true, deadline, resolve));
    return new Promise<PostOutcome>((resolve) => {
      gzip(body, { level: GZIP_LEVEL }, (err, zipped) => {
        if (err !== null) resolve(failed(`gzip failed: ${err.message}`));
        else this.attempt(zipped, true, deadline, resolve);
      });
    });
  }

  /** Between exports (none in flight): the TLS files read again when they changed, and a new agent when they pass. */
  private reloadTlsIfChanged(tls: NonNullable<TraceSettings['tls']>): void {
    const stamp = otlpTlsStamp(tls.files);
    if (stamp === this.tlsStamp) return;
    this.tlsStamp = stamp;
    let material: OtlpTlsMaterial;
    try {
      material = readOtlpTls(tls.files);
    } catch (err) {
      this.log?.('warn', `the exporter's TLS files changed but cannot be used, the ones read before stay in use: ${(err as Error).message}`);
      return;
    }
    this.agent.destroy();
    this.agent = newHttpsAgent(material);
    this.log?.('info', `the exporter's TLS files changed; new connections use them: ${material.summary}`);
  }

  /** Closes the kept connection. */
  close(): void {
    this.agent.destroy();
  }

  private attempt(body: Uint8Array, mayRetry: boolean, deadline: number, resolve: (o: PostOutcome) => void): void {
    /** The first thing known of the attempt: the answer's status, or why there was none. */
    let outcome: PostOutcome | null = null;
    let again = false;
    const options: RequestOptions = { method: 'POST', agent: this.agent, headers: { ...this.headers, 'content-length': String(body.length) } };
    let req: ClientRequest;
    try {
      req = this.request(this.url, options, (res: IncomingMessage) => {
        res.on('data', ignore);
        res.on('end', () => {
          outcome ??= { status: res.statusCode ?? 0, failure: null };
        });
        res.on('error', (err: Error) => {
          outcome ??= failed(err.message);
        });
      });
    } catch (err) {
      resolve(failed((err as Error).message));
      return;
    }
    const timer = setTimeout(() => {
      outcome ??= failed(`no answer within ${this.timeoutMs} ms`);
      req.destroy();
    }, Math.max(deadline - Date.now(), 0));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (outcome !== null) return;
      // A kept connection the collector closed as the request went out: once more, on a new one.
      again = mayRetry && req.reusedSocket && err.code === 'ECONNRESET';
      outcome = failed(err.message);
    });
    // Last of all: the body is no longer in use, the answer read or given up on.
    req.on('close', () => {
      clearTimeout(timer);
      if (again) this.attempt(body, false, deadline, resolve);
      else resolve(outcome ?? failed('the connection closed before the whole answer'));
    });
    req.end(body);
  }
}

const AGENT_OPTIONS = { keepAlive: true, maxSockets: 1, timeout: IDLE_MS };

/** An HTTPS agent trusting `material.ca` in place of Node's CA list and presenting its client pair, when given. */
function newHttpsAgent(material: OtlpTlsMaterial | null): HttpsAgent {
  return new HttpsAgent({ ...AGENT_OPTIONS, ca: material?.ca, cert: material?.cert, key: material?.key });
}

function failed(failure: string): PostOutcome {
  return { status: 0, failure };
}

function ignore(): void {}
