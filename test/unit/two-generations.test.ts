import { describe, expect, it } from 'vitest';
import { TwoGenerations } from '../../src/two-generations.js';

interface Entry {
  readonly name: string;
  readonly size: number;
  next: Entry | null;
}

const entry = (name: string, size = 10): Entry => ({ name, size, next: null });

/** The names of `key`'s chain, first to last. */
function chain(first: Entry | undefined): string[] {
  const names: string[] = [];
  for (let e = first ?? null; e !== null; e = e.next) names.push(e.name);
  return names;
}

/** The names in a random model of the two generations: what the class must hold. */
class Model {
  current = new Map<number, Entry[]>();
  previous = new Map<number, Entry[]>();
  constructor(readonly half: number, readonly maxChain: number) {}
  held(m: Map<number, Entry[]>): number {
    let n = 0;
    for (const list of m.values()) for (const e of list) n += e.size;
    return n;
  }
  add(key: number, e: Entry): void {
    if (e.size > this.half) return;
    if (this.held(this.current) + e.size > this.half) {
      this.previous = this.current;
      this.current = new Map();
    }
    let list = this.current.get(key) ?? [];
    if (list.length >= this.maxChain) list = [];
    this.current.set(key, [e, ...list]);
  }
}

describe('TwoGenerations', () => {
  it('files entries under their key, newest first, and counts their sizes', () => {
    const g = new TwoGenerations<Entry>(1000, 4);
    expect(g.empty).toBe(true);
    g.add(1, entry('a'));
    g.add(1, entry('b', 20));
    g.add(2, entry('c'));
    expect(chain(g.current(1))).toEqual(['b', 'a']);
    expect(chain(g.current(2))).toEqual(['c']);
    expect(g.current(3)).toBeUndefined();
    expect(g.size).toBe(40);
    expect(g.empty).toBe(false);
  });

  it('replaces a full chain by the new entry; with a chain of one, the entry of its key', () => {
    const g = new TwoGenerations<Entry>(1000, 2);
    g.add(7, entry('a'));
    g.add(7, entry('b'));
    g.add(7, entry('c'));
    expect(chain(g.current(7))).toEqual(['c']);
    expect(g.size).toBe(10);
    const one = new TwoGenerations<Entry>(1000, 1);
    one.add(7, entry('a'));
    one.add(7, entry('b', 30));
    expect(chain(one.current(7))).toEqual(['b']);
    expect(one.size).toBe(30);
  });

  it('turns the current generation into the previous one at half the budget, dropping the previous', () => {
    const g = new TwoGenerations<Entry>(40, 4); // generations of 20
    g.add(1, entry('a'));
    g.add(2, entry('b'));
    g.add(3, entry('c')); // a and b become the previous generation
    expect(chain(g.previous(1))).toEqual(['a']);
    expect(chain(g.current(3))).toEqual(['c']);
    expect(g.size).toBe(30);
    g.add(4, entry('d'));
    g.add(5, entry('e')); // c and d the previous; a and b gone
    expect(g.previous(1)).toBeUndefined();
    expect(chain(g.previous(3))).toEqual(['c']);
    expect(g.size).toBe(30);
  });

  it('keeps nothing larger than a generation', () => {
    const g = new TwoGenerations<Entry>(40, 4);
    g.add(1, entry('big', 21));
    expect(g.current(1)).toBeUndefined();
    expect(g.size).toBe(0);
  });

  it('renews an entry of the previous generation into the current one, from any place in its chain', () => {
    const g = new TwoGenerations<Entry>(80, 4); // generations of 40
    g.add(1, entry('a'));
    g.add(1, entry('b'));
    g.add(1, entry('c'));
    g.add(2, entry('x', 40)); // a, b, c the previous generation
    expect(chain(g.previous(1))).toEqual(['c', 'b', 'a']);
    const b = g.previous(1)!.next!;
    g.renew(1, b);
    // x filled the current generation, so b's arrival turned it into the previous one (c and a dropped).
    expect(chain(g.current(1))).toEqual(['b']);
    expect(chain(g.previous(2))).toEqual(['x']);
    expect(g.previous(1)).toBeUndefined();
    expect(g.size).toBe(50);
    // The head, and the last of a chain.
    const h = new TwoGenerations<Entry>(1000, 4);
    h.add(5, entry('p'));
    h.add(5, entry('q'));
    for (let i = 0; i < 49; i++) h.add(100 + i, entry(`f${i}`)); // fills the current generation of 500
    h.add(6, entry('r'));
    expect(chain(h.previous(5))).toEqual(['q', 'p']);
    h.renew(5, h.previous(5)!);
    expect(chain(h.previous(5))).toEqual(['p']);
    h.renew(5, h.previous(5)!);
    expect(h.previous(5)).toBeUndefined();
    expect(chain(h.current(5))).toEqual(['p', 'q']);
  });

  it('under random use holds what a model of the generations holds, within its budget', () => {
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % n;
    };
    for (const maxChain of [1, 3]) {
      const budget = 400;
      const g = new TwoGenerations<Entry>(budget, maxChain);
      const model = new Model(budget / 2, maxChain);
      for (let i = 0; i < 5000; i++) {
        const key = rand(12);
        if (rand(3) === 0 && g.previous(key) !== undefined) {
          // Renew a random entry of the previous chain, in both.
          const list = model.previous.get(key)!;
          const pick = list[rand(list.length)];
          let e = g.previous(key)!;
          while (e !== pick) e = e.next!;
          model.previous.set(key, list.filter((x) => x !== pick));
          if (model.previous.get(key)!.length === 0) model.previous.delete(key);
          g.renew(key, e);
          model.add(key, e);
        } else {
          const e = entry(`e${i}`, 5 + rand(60));
          g.add(key, e);
          model.add(key, e);
        }
        expect(g.size).toBeLessThanOrEqual(budget);
        expect(g.size).toBe(model.held(model.current) + model.held(model.previous));
        let held = '';
        let expected = '';
        for (let k = 0; k < 12; k++) {
          held += `${chain(g.current(k))}/${chain(g.previous(k))};`;
          expected += `${(model.current.get(k) ?? []).map((e) => e.name)}/${(model.previous.get(k) ?? []).map((e) => e.name)};`;
        }
        if (held !== expected) expect({ step: i, held }).toEqual({ step: i, held: expected });
      }
    }
  });
});
