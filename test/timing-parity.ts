// Timing parity for the enumeration tests (the password reset's request, the
// sign-in mail's request): does a known address take measurably longer to be
// answered than an unknown one?
//
// Samples come in pairs, one of each taken back to back (which goes first
// alternates), so that the machine's changing load hits both alike; the paired
// differences' median, over the median of all samples, is the round's gap.
// On a busy machine one round's gap can pass the bound on noise alone (CI saw
// 5.6 % and 7.7 % once, on PostgreSQL, where a quiet run of the same code gives
// 0.5-4.4 %), so a round over the bound is measured again, up to `rounds`
// times, and the test fails only when every round is over it. A real leak (the
// lookup before the answer costs a third or more of a request) is over the
// bound in every round; each round's figures are printed either way.
import assert from "node:assert/strict";
import type { TestContext } from "node:test";

export interface TimingParity {
  /** Pairs per round. */
  pairs: number;
  /** Rounds at most; one within the bound passes. */
  rounds: number;
  /** The largest allowed gap, as a fraction of the typical time (0.05 for 5 %). */
  bound: number;
  /** Times one request for the known or the unknown address, in nanoseconds. */
  time: (known: boolean) => Promise<number>;
  /** What the failure message calls the two, e.g. "known and unknown e-mails". */
  what: string;
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] as number;
const ms = (nanoseconds: number) => (nanoseconds / 1e6).toFixed(3);

export async function assertTimingParity(t: TestContext, parity: TimingParity): Promise<void> {
  const gaps: string[] = [];
  for (let round = 1; round <= parity.rounds; round++) {
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < parity.pairs; i++) {
      if (i % 2 === 0) {
        known.push(await parity.time(true));
        unknown.push(await parity.time(false));
      } else {
        unknown.push(await parity.time(false));
        known.push(await parity.time(true));
      }
    }
    const gap = median(known.map((value, i) => value - (unknown[i] as number)));
    const relative = Math.abs(gap) / median([...known, ...unknown]);
    t.diagnostic(
      `round ${round}: median known ${ms(median(known))} ms, unknown ${ms(median(unknown))} ms, ` +
        `paired gap ${ms(gap)} ms (${(relative * 100).toFixed(1)}%)`,
    );
    gaps.push(`${(relative * 100).toFixed(1)}%`);
    if (relative < parity.bound) return;
  }
  assert.fail(`${parity.what} differ by ${gaps.join(", ")} in ${gaps.length} rounds`);
}
