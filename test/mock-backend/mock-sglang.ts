/**
 * The mock as an SGLang pod of prefill/decode disaggregation (--pd-role sglang-prefill or
 * sglang-decode), with SGLang's bootstrap handoff played over the mock's own HTTP port. A prefill
 * pod takes a one-token request without stream carrying an integer `bootstrap_room`, then waits
 * for a decode pod to join that room (GET /_mock/bootstrap/<room>) before it answers; no decode
 * joining in ROOM_WAIT_MS: 500, as SGLang aborts a transfer nobody took. A decode pod takes a
 * request carrying `bootstrap_room` and `bootstrap_host`, joins the room at
 * http://<bootstrap_host>:<--bootstrap-port>, and answers (x-mock-kv-from: the prefill pod's
 * name) only once the prefill pod there got the same room; else 500. So a router that sends the
 * decode request after the prefill's answer, or with another room or host, gets errors.
 */
import { get } from 'node:http';

/** How long a prefill waits for its decode, and a decode for its prefill. */
export const ROOM_WAIT_MS = 60_000;

/** The digits of the top-level `"bootstrap_room": <integer>` of `raw` (kept exact: above 2^53 a JS number is not), or null. */
export function bootstrapRoom(raw: string): string | null {
  const m = /"bootstrap_room"\s*:\s*(\d+)\s*[,}]/.exec(raw);
  return m === null ? null : m[1];
}

/** Why the request is refused by an SGLang pod of `role` (400), or null when it takes it. */
export function sglangRefusal(role: 'sglang-prefill' | 'sglang-decode', body: Record<string, unknown>, raw: string): string | null {
  const room = bootstrapRoom(raw);
  if (typeof body.bootstrap_room !== 'number' || room === null || BigInt(room) >= 1n << 63n) {
    return `mock ${role} pod: bootstrap_room must be an integer from 0 to 2^63-1, got ${JSON.stringify(body.bootstrap_room)}`;
  }
  if (body.kv_transfer_params !== undefined) return `mock ${role} pod: an SGLang request has no kv_transfer_params`;
  if (role === 'sglang-prefill') {
    if (body.stream !== undefined || body.stream_options !== undefined) return 'mock sglang-prefill pod: a prefill request has no stream or stream_options';
    if (body.max_tokens !== 1) return `mock sglang-prefill pod: a prefill request has max_tokens 1, got ${JSON.stringify(body.max_tokens)}`;
    if (body.bootstrap_host !== undefined) return 'mock sglang-prefill pod: a prefill request has no bootstrap_host';
    return null;
  }
  if (typeof body.bootstrap_host !== 'string' || body.bootstrap_host === '') return `mock sglang-decode pod: no bootstrap_host, got ${JSON.stringify(body.bootstrap_host)}`;
  return null;
}

interface Room {
  prefillArrived: boolean;
  decodeJoined: boolean;
  onPrefill: (() => void)[];
  onDecode: (() => void)[];
}

/** The bootstrap rooms of a prefill pod: which prefill requests came, which decode pods joined. */
export class BootstrapRooms {
  private readonly rooms = new Map<string, Room>();

  private room(id: string): Room {
    let r = this.rooms.get(id);
    if (r === undefined) this.rooms.set(id, r = { prefillArrived: false, decodeJoined: false, onPrefill: [], onDecode: [] });
    return r;
  }

  /** A prefill request of room `id` came: true once a decode pod joined it, false after ROOM_WAIT_MS. */
  prefillArrived(id: string): Promise<boolean> {
    const r = this.room(id);
    r.prefillArrived = true;
    for (const f of r.onPrefill.splice(0)) f();
    return wait(r.decodeJoined, r.onDecode, () => this.rooms.delete(id));
  }

  /** A decode pod joins room `id`: true once its prefill request came, false after ROOM_WAIT_MS. */
  decodeJoined(id: string): Promise<boolean> {
    const r = this.room(id);
    r.decodeJoined = true;
    for (const f of r.onDecode.splice(0)) f();
    return wait(r.prefillArrived, r.onPrefill, () => undefined);
  }
}

function wait(done: boolean, waiters: (() => void)[], after: () => void): Promise<boolean> {
  if (done) {
    after();
    return Promise.resolve(true);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ROOM_WAIT_MS);
    waiters.push(() => {
      clearTimeout(timer);
      after();
      resolve(true);
    });
  });
}

/** A decode pod joins room `room` of the prefill pod at host:port: the prefill pod's name, or null when it did not join. */
export function joinRoom(host: string, port: number, room: string): Promise<string | null> {
  return new Promise((resolve) => {
    const h = host.includes(':') ? `[${host}]` : host;
    const req = get(`http://${h}:${port}/_mock/bootstrap/${room}`, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { text += c; });
      res.on('end', () => {
        if (res.statusCode !== 200) return resolve(null);
        try {
          resolve((JSON.parse(text) as { pod: string }).pod);
        } catch {
          resolve(null);
        }
      });
      res.on('error', () => resolve(null));
    });
    req.on('error', () => resolve(null));
  });
}
