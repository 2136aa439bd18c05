/** Waits until a global limiter's store is up (its first connection answered), or fails after `timeoutMs`. */
export async function untilUp(limiter: { readonly state: string }, what = 'limiter', timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (limiter.state !== 'up') {
    if (Date.now() > deadline) throw new Error(`${what} did not become healthy`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
