// The renewal loop against a scripted service (no network): what a renewal's answer does to
// the lease and its signal.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { LeaseLost, Tenure } from "../index.js";

const LEASE = { name: "job", holder: "h", generation: 3, grant: "g1", expiresAt: "2026-01-01T00:00:00Z" };
const wire = { ...LEASE, expires_at: LEASE.expiresAt };

/**
 * A client whose service answers each renewal with the next of `renewals` (the last repeats):
 * a body for 200, or a number for that status with a problem.
 * @param {Array<object | number>} renewals
 */
function scripted(renewals) {
  /** @type {string[]} */
  const sent = [];
  /** @type {typeof fetch} */
  const fetch = async (url) => {
    const path = new URL(String(url)).pathname;
    sent.push(path);
    if (path.endsWith("/renew")) {
      const next = renewals.length > 1 ? renewals.shift() : renewals[0];
      if (typeof next === "number") {
        const problem = { type: next === 409 ? "/problems/lease-lost" : "/problems/storage-unavailable", title: "t", status: next, detail: "d" };
        return new Response(JSON.stringify(problem), { status: next });
      }
      return Response.json(next);
    }
    return Response.json(wire);
  };
  const tenure = new Tenure({ url: "http://tenure", holder: "h", fetch, retry: { attempts: 1, backoff: 0.01, maxBackoff: 0.05 } });
  return { tenure, sent };
}

const renewed = { renewed: [{ ...wire, grant: "g2" }], lost: [] };
const lost = { renewed: [], lost: [{ name: "job", generation: 3 }] };
const undecided = { renewed: [], lost: [], undecided: [{ name: "job", generation: 3 }] };

describe("withLease's renewals", () => {
  it("renew every TTL/3 and release naming the latest grant", async () => {
    const { tenure, sent } = scripted([renewed]);
    await tenure.withLease("job", { ttlSeconds: 0.6 }, async (lease) => {
      await sleep(900);
      assert.equal(lease.grant, "g2");
      assert.ok(!lease.signal.aborted);
    });
    assert.ok(sent.filter((path) => path === "/v1/leases/renew").length >= 3, String(sent));
    assert.equal(sent.at(-1), "/v1/leases/job/release");
  });

  it("a renewal answered lost aborts the signal, and withLease throws LeaseLost", async () => {
    const { tenure } = scripted([lost]);
    /** @type {AbortSignal | undefined} */
    let signal;
    await assert.rejects(
      tenure.withLease("job", { ttlSeconds: 0.6 }, async (lease) => {
        signal = lease.signal;
        await sleep(400);
      }),
      LeaseLost,
    );
    assert.ok(signal?.aborted && signal.reason instanceof LeaseLost);
  });

  it("undecided and 503 renewals are retried; the lease holds while one succeeds in time", async () => {
    const { tenure } = scripted([undecided, 503, renewed]);
    await tenure.withLease("job", { ttlSeconds: 0.9 }, async (lease) => {
      await sleep(1200);
      lease.check();
    });
  });

  it("no renewal succeeding within the TTL: the signal is aborted at the deadline", async () => {
    const { tenure } = scripted([503]);
    const started = performance.now();
    await assert.rejects(
      tenure.withLease("job", { ttlSeconds: 0.5 }, async (lease) => {
        await new Promise((resolve) => lease.signal.addEventListener("abort", resolve));
        const elapsed = performance.now() - started;
        assert.ok(elapsed >= 450 && elapsed < 900, `aborted after ${elapsed} ms`);
      }),
      LeaseLost,
    );
  });

  it("a refusal (409 lease-lost) ends the lease at once", async () => {
    const { tenure } = scripted([409]);
    await assert.rejects(tenure.withLease("job", { ttlSeconds: 0.6 }, () => sleep(500)), LeaseLost);
  });
});
