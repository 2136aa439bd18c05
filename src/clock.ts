/** Injected wall clock (epoch ms), so time-dependent code is testable without sleeping. */
export type Clock = () => number;

export const systemClock: Clock = Date.now;
