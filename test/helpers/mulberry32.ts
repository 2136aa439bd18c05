/**
 * A small deterministic generator (mulberry32) for randomised tests and benchmarks: numbers in
 * [0, 1), the same sequence for a seed (the scheduler simulation, the tokenizer's texts and the
 * streamed usage cut's random events depend on their sequences).
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
