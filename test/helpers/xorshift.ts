/** A small deterministic generator (xorshift32) for randomised tests: numbers in [0, 1), the same sequence for a seed. */
export function xorshift(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 2 ** 32;
  };
}

/** One element of `xs`, chosen by `r`. */
export function pickWith(r: () => number): <T>(xs: readonly T[]) => T {
  return (xs) => xs[Math.floor(r() * xs.length)];
}
