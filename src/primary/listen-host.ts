/**
 * `--host ::` listens on every interface, IPv6 and IPv4 alike (uWS clears IPV6_V6ONLY, whatever
 * net.ipv6.bindv6only says): the address for a pod that may run on an IPv6-only cluster. A kernel
 * without IPv6 (booted with ipv6.disable=1) refuses every IPv6 socket, and the router would not
 * start there; so the primary takes 0.0.0.0 (every IPv4 interface, all such a kernel has) instead,
 * once, before it claims the port, and says so. Any other address is taken as given: one that
 * names an interface is meant as written.
 */
import { existsSync } from 'node:fs';
import { probePort } from './port-claim.js';

/** The every-interface IPv6 address, and what stands in for it where there is no IPv6. */
const ANY_IPV6 = '::';
const ANY_IPV4 = '0.0.0.0';

/** What a socket call fails with where the kernel has no IPv6 at all. */
const NO_IPV6_CODES = new Set(['EAFNOSUPPORT', 'EPROTONOSUPPORT']);

/** Why this kernel has no IPv6, or null when it has it. */
export type Ipv6Probe = () => Promise<string | null>;

/**
 * The real probe: a listen on [::] at a port of the kernel's choosing, closed at once. Only its
 * failure means no IPv6 (EAFNOSUPPORT, as a kernel booted with ipv6.disable=1 answers); IPv6 turned
 * off (disable_ipv6=1) still listens there, and still takes IPv4. On Linux an absent
 * /proc/net/if_inet6 is added to the reason, never taken for one: that file appears only once the
 * kernel's IPv6 module is loaded, which this very listen does where IPv6 is built as a module, and
 * a sandbox's /proc may lack it while IPv6 works; falling back to 0.0.0.0 there would leave the pod
 * unreachable on an IPv6-only network.
 */
export async function noIpv6Reason(procFile = '/proc/net/if_inet6', platform: NodeJS.Platform = process.platform): Promise<string | null> {
  const err = await probePort(ANY_IPV6, 0);
  if (err === null || !NO_IPV6_CODES.has(err.code ?? '')) return null;
  const absent = platform === 'linux' && !existsSync(procFile) ? `; ${procFile} is absent` : '';
  return `listening on :: failed: ${err.code}${absent}`;
}

/** The address the workers listen on, and the line that says why it is not the one given (else null). */
export interface ListenHost {
  readonly host: string;
  readonly note: string | null;
}

/** `host` as given, except `::` where `noIpv6` finds no IPv6: then 0.0.0.0, with a note naming the reason. */
export async function chooseListenHost(host: string, noIpv6: Ipv6Probe = noIpv6Reason): Promise<ListenHost> {
  if (host !== ANY_IPV6) return { host, note: null };
  const why = await noIpv6();
  if (why === null) return { host, note: null };
  return {
    host: ANY_IPV4,
    note: `host :: (--host, ROUTER_HOST) needs IPv6, which this kernel does not have (${why}): listening on 0.0.0.0 (every IPv4 interface) instead`,
  };
}
