/** Process-wide drain flag: once set, every answer closes its connection (no more keep-alive). */
export const drainState = { draining: false };
