import type { GeneratedText } from '../api/inference-api.js';
import { lastExactCut } from '../tokens/bounded-segments.js';
import type { TokenCounter } from '../tokens/token-counter.js';

/** Generated text held before the counted part is cut off and counted (characters). */
export const HOLD_CHARS = 64 * 1024;

/**
 * Counts a stream's generated text as it passes, holding at most about HOLD_CHARS characters
 * (plus one event's text). Once more is held, everything up to the last pre-token boundary is
 * counted and dropped; such cuts leave a bpe count exact. A text with no boundary in 2 × HOLD_CHARS
 * is cut there anyway (about one token off per cut). With the `chars` estimator each counted slice
 * rounds up on its own (at most one token more per HOLD_CHARS of text).
 */
export class GeneratedTextCount implements GeneratedText {
  private readonly counter: TokenCounter;
  private readonly holdChars: number;
  private held = '';
  /** `held` has no exact cut before this index (already searched). */
  private searched = 0;
  private counted = 0;
  /** Tokens estimated for text not read (GeneratedText.uncounted). */
  private estimated = 0;
  /** Slices being counted in the tokenizer pool. */
  private pending = 0;
  private wake: (() => void) | null = null;
  private stopped = false;
  /** Most characters held at once (tests, diagnostics). */
  maxHeld = 0;

  constructor(counter: TokenCounter, holdChars = HOLD_CHARS) {
    this.counter = counter;
    this.holdChars = holdChars;
  }

  /** Characters held now. */
  get heldChars(): number {
    return this.held.length;
  }

  add(text: string): void {
    if (this.stopped) return;
    this.held += text;
    const n = this.held.length;
    if (n > this.maxHeld) this.maxHeld = n;
    if (n > this.holdChars) this.cut();
  }

  stop(): void {
    this.stopped = true;
    this.held = '';
    this.searched = 0;
    this.estimated = 0;
  }

  get estimatedTokens(): number {
    return this.estimated;
  }

  uncounted(tokens: number): void {
    if (!this.stopped) this.estimated += tokens;
  }

  tokens(): number | Promise<number> {
    if (this.held.length > 0) {
      const rest = this.held;
      this.held = '';
      this.searched = 0;
      this.count(rest);
    }
    if (this.pending === 0) return this.counted + this.estimated;
    return new Promise<number>((resolve) => {
      this.wake = () => resolve(this.counted + this.estimated);
    });
  }

  private cut(): void {
    const text = this.held;
    let at = lastExactCut(text, Math.max(0, this.searched - 2), text.length);
    if (at <= 0) {
      this.searched = text.length;
      if (text.length < 2 * this.holdChars) return;
      at = text.length - 1;
      const c = text.charCodeAt(at);
      if (c >= 0xdc00 && c <= 0xdfff) at--; // keep a surrogate pair together
    }
    this.held = text.slice(at);
    this.searched = this.held.length;
    this.count(text.slice(0, at));
  }

  private count(slice: string): void {
    const c = this.counter.countText(slice);
    if (typeof c === 'number') {
      this.counted += c;
      return;
    }
    this.pending++;
    c.then(this.onCounted, this.onCountFailed);
  }

  // Bound once per stream (a slice count is rare: one per HOLD_CHARS of text).
  private readonly onCounted = (n: number): void => {
    this.counted += n;
    this.settleOne();
  };

  private readonly onCountFailed = (): void => {
    this.settleOne();
  };

  private settleOne(): void {
    if (--this.pending === 0 && this.wake !== null) {
      const wake = this.wake;
      this.wake = null;
      wake();
    }
  }
}
