/**
 * The listen address the primary chooses: `::` where the kernel has IPv6, 0.0.0.0 with a note where
 * it has none. This machine has IPv6, so the decision is tested with injected probes, and the real
 * probe on this machine and on a /proc file that is not there.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chooseListenHost, noIpv6Reason } from '../../../src/primary/listen-host.js';

describe('chooseListenHost', () => {
  it('keeps :: where the kernel has IPv6', async () => {
    expect(await chooseListenHost('::', async () => null)).toEqual({ host: '::', note: null });
  });

  it('falls back to 0.0.0.0 where it has none, with a note naming the setting, the reason and the address taken', async () => {
    const chosen = await chooseListenHost('::', async () => '/proc/net/if_inet6 is absent');
    expect(chosen).toEqual({
      host: '0.0.0.0',
      note: 'host :: (--host, ROUTER_HOST) needs IPv6, which this kernel does not have (/proc/net/if_inet6 is absent): '
        + 'listening on 0.0.0.0 (every IPv4 interface) instead',
    });
  });

  it('leaves every other address as it is, without probing', async () => {
    const probe = async (): Promise<string> => { throw new Error('probed'); };
    for (const host of ['0.0.0.0', '127.0.0.1', '::1', 'fd00::5', 'localhost']) {
      expect(await chooseListenHost(host, probe)).toEqual({ host, note: null });
    }
  });
});

describe('noIpv6Reason', () => {
  it('finds IPv6 on this machine (which has it)', async () => {
    expect(existsSync('/proc/net/if_inet6')).toBe(true);
    expect(await noIpv6Reason()).toBeNull();
  });

  it('an absent /proc/net/if_inet6 alone is not taken for no IPv6: listening on :: decides', async () => {
    // The file appears once the kernel's IPv6 module is loaded, which the first IPv6 socket does
    // (a kernel with IPv6 as a module not loaded yet), and a /proc of a sandbox may lack it. This
    // machine listens on ::, so there is IPv6, whatever that file says.
    expect(await noIpv6Reason('/proc/net/no-such-file', 'linux')).toBeNull();
    expect(await noIpv6Reason('/proc/net/no-such-file', 'darwin')).toBeNull();
  });
});
