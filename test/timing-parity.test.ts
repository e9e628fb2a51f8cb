// The enumeration tests' timing check (test/timing-parity.ts) can fail: a
// known address slower in every round fails it, one noisy round followed by a
// quiet one does not, and each round's figures are printed.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { assertTimingParity } from "./timing-parity.ts";

/** Times in nanoseconds around 1 ms, the known address `extra` slower in the rounds `slowRounds` names. */
function synthetic(pairs: number, extra: number, slowRounds: (round: number) => boolean) {
  let calls = 0;
  return async (known: boolean) => {
    const round = Math.floor(calls++ / (2 * pairs)) + 1;
    const jitter = ((calls * 7919) % 41) - 20; // deterministic, ±20 µs
    return 1_000_000 + jitter * 1000 + (known && slowRounds(round) ? extra : 0);
  };
}

describe("the timing parity check", () => {
  test("fails when the known address is 10 % slower in every round, naming every round's gap", async (t) => {
    await assert.rejects(
      assertTimingParity(t, {
        pairs: 20,
        rounds: 3,
        bound: 0.05,
        time: synthetic(20, 100_000, () => true),
        what: "known and unknown e-mails",
      }),
      /^AssertionError.*known and unknown e-mails differ by \d+\.\d%, \d+\.\d%, \d+\.\d% in 3 rounds$/,
    );
  });

  test("passes when a round over the bound is followed by one within it", async (t) => {
    await assertTimingParity(t, {
      pairs: 20,
      rounds: 3,
      bound: 0.05,
      time: synthetic(20, 100_000, (round) => round === 1),
      what: "known and unknown e-mails",
    });
  });

  test("passes at once when the first round is within the bound", async (t) => {
    let calls = 0;
    const time = synthetic(20, 0, () => false);
    await assertTimingParity(t, {
      pairs: 20,
      rounds: 3,
      bound: 0.05,
      time: (known) => {
        calls++;
        return time(known);
      },
      what: "known and unknown e-mails",
    });
    assert.equal(calls, 40);
  });
});
