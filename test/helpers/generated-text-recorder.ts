import type { GeneratedText } from '../../src/api/inference-api.js';

/** A GeneratedText that records what it is given (the stream readers' side of the contract). */
export class GeneratedTextRecorder implements GeneratedText {
  pieces: string[] = [];
  stopped = false;
  /** add() calls, before or after stop() (stop() clears `pieces`, not this). */
  calls = 0;
  /** Tokens handed as an estimate (tokensPerEvent, past the bound). */
  uncountedTokens = 0;
  add(text: string): void {
    this.calls++;
    if (!this.stopped) this.pieces.push(text);
  }
  stop(): void {
    this.stopped = true;
    this.pieces = [];
  }
  uncounted(tokens: number): void {
    this.uncountedTokens += tokens;
  }
  get estimatedTokens(): number {
    return this.uncountedTokens;
  }
  tokens(): number {
    return this.pieces.join('').length;
  }
}
