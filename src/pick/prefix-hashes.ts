import type { PromptText } from '../tokens/prompt-text.js';

/**
 * Chained hashes of the prompt's full blocks of `blockChars` characters (texts read in order as
 * one string): hash i covers blocks 0..i, so equal hash i means an equal prefix of i + 1 blocks.
 * Writes at most out.length hashes (the first blocks: affinity needs the prefix, not the tail) and
 * returns how many. FNV-1a over UTF-16 code units, 32 bits; no allocation.
 */
export function prefixBlockHashes(prompt: PromptText, blockChars: number, out: Uint32Array): number {
  const max = out.length;
  let n = 0;
  let h = 0x811c9dc5;
  let inBlock = 0;
  const texts = prompt.texts;
  for (let t = 0; t < texts.length && n < max; t++) {
    const s = texts[t];
    for (let i = 0; i < s.length; i++) {
      h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
      if (++inBlock === blockChars) {
        out[n++] = h >>> 0;
        if (n === max) return n;
        inBlock = 0;
      }
    }
    // A separator between texts (chat messages), so ["ab","c"] and ["a","bc"] differ.
    h = Math.imul(h ^ 0x1f, 0x01000193);
  }
  return n;
}
