// Against the real `tenure serve`: leases, withLease, runOnce, fences, exact generations; every
// request and answer checked against openapi/openapi.json (support/contract.js).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  LeaseHeld,
  MAX_GENERATION,
  StaleGeneration,
  Tenure,
  TransportError,
  UnknownGeneration,
} from "../index.js";
import { checked, contractFetch } from "./support/contract.js";
import { bumpGenerations, service } from "./support/service.js";

/** @type {Awaited<ReturnType<typeof service>>} */
let live;
before(async () => {
  live = await service();
});
after(async () => {
  await live?.stop();
});

/** @param {string} [holder] */
const client = (holder) => new Tenure({ url: live.url, holder, fetch: contractFetch });
/** @param {string} what */
const unique = (what) => `${what}-${randomUUID().slice(0, 8)}`;

describe("leases", () => {
  it("acquire gives a generation, a second holder gets LeaseHeld, release frees it", async () => {
    const name = unique("lease");
    const lease = await client().acquire(name, { ttlSeconds: 30 });
    assert.ok(Number.isSafeInteger(lease.generation) && lease.generation >= 1);
    assert.ok(lease.expiresInSeconds > 29 && lease.expiresInSeconds <= 30);
    const held = await client().acquire(name, { ttlSeconds: 30 }).catch((error) => error);
    assert.ok(held instanceof LeaseHeld);
    assert.equal(held.status, 409);
    await lease.release();
    assert.ok(lease.signal.aborted);
    const next = await client().acquire(name, { ttlSeconds: 30 });
    assert.equal(next.generation, lease.generation + 1);
    await next.release();
  });

  it("a waiting acquire gets the lease once it is released", async () => {
    const name = unique("wait");
    const first = await client().acquire(name, { ttlSeconds: 30 });
    setTimeout(() => void first.release(), 300);
    const second = await client().acquire(name, { ttlSeconds: 30, waitSeconds: 10 });
    assert.equal(second.generation, first.generation + 1);
    await second.release();
  });

  it("withLease renews past the TTL and releases after the task", async () => {
    const name = unique("renewed");
    const tenure = client();
    const generation = await tenure.withLease(name, { ttlSeconds: 2 }, async (lease) => {
      await sleep(3000); // beyond the TTL: only renewals keep it
      lease.check();
      assert.ok(!lease.signal.aborted);
      return lease.generation;
    });
    const lease = await tenure.getLease(name);
    assert.equal(lease.held, false);
    assert.equal(lease.generation, generation);
  });

  it("withLease releases when the task throws, and rethrows", async () => {
    const name = unique("throws");
    await assert.rejects(
      client().withLease(name, { ttlSeconds: 30 }, async () => {
        throw new Error("boom");
      }),
      /boom/,
    );
    const lease = await client().getLease(name);
    assert.equal(lease.held, false);
    const again = await client().acquire(name, { ttlSeconds: 30 }); // free at once
    await again.release();
  });

  it("renewMany renews a holding and reports a released one lost", async () => {
    const tenure = client();
    const lease = await tenure.acquire(unique("batch"), { ttlSeconds: 30 });
    const gone = await tenure.acquire(unique("batch"), { ttlSeconds: 30 });
    await gone.release();
    const renewals = await tenure.renewMany([lease, gone], 30);
    assert.deepEqual(renewals.renewed.map((/** @type {any} */ r) => r.name), [lease.name]);
    assert.deepEqual(renewals.lost, [{ name: gone.name, generation: gone.generation }]);
    await lease.release();
  });
});

describe("runOnce", () => {
  it("two at once: one runs, one is skipped held; again: skipped completed", async () => {
    const job = unique("close");
    const when = { window: "2026-09-25" };
    let runs = 0;
    const task = async (/** @type {import("../index.js").RunContext} */ ctx) => {
      runs += 1;
      assert.equal(ctx.idempotencyKey("store", 42), `${job}/2026-09-25/store/42`);
      assert.deepEqual(ctx.fencingHeaders(), { "Fencing-Token": `${job}/${ctx.generation}` });
      await sleep(500);
      return "paid";
    };
    const results = await Promise.all([
      client().runOnce(job, when, { ttlSeconds: 10 }, task),
      client().runOnce(job, when, { ttlSeconds: 10 }, task),
    ]);
    const statuses = results.map((r) => (r.status === "skipped" ? `skipped:${r.reason}` : r.status));
    assert.deepEqual(statuses.sort(), ["completed", "skipped:held"]);
    const done = results.find((r) => r.status === "completed");
    assert.equal(done?.status === "completed" && done.value, "paid");
    const again = await client().runOnce(job, when, { ttlSeconds: 10 }, task);
    assert.deepEqual(again, { status: "skipped", reason: "completed", window: "2026-09-25" });
    assert.equal(runs, 1);
  });

  it("one client is one holder: two runOnce of one client at once, one is skipped held", async () => {
    const tenure = client();
    const task = async () => sleep(300);
    const job = unique("same-client");
    const results = await Promise.all([
      tenure.runOnce(job, { window: "w" }, {}, task),
      tenure.runOnce(job, { window: "w" }, {}, task),
    ]);
    assert.deepEqual(results.map((r) => r.status).sort(), ["completed", "skipped"]);
    const lease = await tenure.acquire(job, { ttlSeconds: 5 }); // the name is free again
    await lease.release();
  });

  it("a task that throws leaves the window to resume (attempt 2)", async () => {
    const job = unique("resume");
    const when = { window: "w1" };
    await assert.rejects(
      client().runOnce(job, when, {}, async () => {
        throw new Error("half-way");
      }),
      /half-way/,
    );
    const result = await client().runOnce(job, when, {}, async (ctx) => ctx.attempt);
    assert.equal(result.status === "completed" && result.value, 2);
  });

  it("resolves the window by the service's clock from a schedule", async () => {
    const tenure = client();
    const window = await tenure.resolveWindow("0 2 * * *", "America/Sao_Paulo", { key: "date" });
    assert.match(window, /^\d{4}-\d{2}-\d{2}$/);
    const when = { cron: "0 2 * * *", timezone: "America/Sao_Paulo", key: /** @type {const} */ ("date") };
    const result = await tenure.runOnce(unique("cron"), when, {}, async (ctx) => ctx.window);
    assert.deepEqual([result.status, result.window], ["completed", window]);
  });
});

describe("fences", () => {
  it("verifyFence refuses a stale generation and an unknown one; verifyFences batches", async () => {
    const name = unique("fenced");
    const resource = unique("ledger");
    const first = await client().acquire(name, { ttlSeconds: 30 });
    await first.release();
    const second = await client().acquire(name, { ttlSeconds: 30 });
    assert.equal((await client().verifyFence(resource, second)).highest, second.generation);
    const stale = await client().verifyFence(resource, first).catch((error) => error);
    assert.ok(stale instanceof StaleGeneration);
    assert.equal(stale.highest, second.generation);
    const forged = { name, generation: second.generation + 5 };
    assert.ok((await client().verifyFence(unique("r"), forged).catch((e) => e)) instanceof UnknownGeneration);
    const batch = await client().verifyFences([resource, unique("other")], second);
    assert.deepEqual([batch.accepted.length, batch.refused.length], [2, 0]);
    const refused = await client().verifyFences([resource], first);
    assert.ok(refused.refused[0].error instanceof StaleGeneration);
    await second.release();
  });
});

describe("exact generations", () => {
  it("after a bump to near 2**53 - 1, generations are exact and the next is refused, not rounded", async () => {
    const name = unique("big");
    const tenure = client();
    const lease = await tenure.acquire(name, { ttlSeconds: 30 });
    await lease.release();
    // Every generation moves ahead: run last, as the lease the other tests hold would be lost.
    await bumpGenerations(live.settings, MAX_GENERATION - lease.generation - 1);
    const big = await tenure.acquire(name, { ttlSeconds: 30 });
    assert.equal(big.generation, MAX_GENERATION);
    assert.equal(big.fencingToken, `${name}/9007199254740991`);
    assert.equal((await tenure.verifyFence(unique("r"), big)).highest, MAX_GENERATION);
    await big.release();
    const exhausted = await tenure.acquire(name, { ttlSeconds: 30 }).catch((error) => error);
    assert.equal(exhausted.constructor.name, "GenerationExhausted");
  });
});

describe("transport", () => {
  it("a service that does not answer is a TransportError, after the retries", async () => {
    const tenure = new Tenure({ url: "http://127.0.0.1:9", retry: { attempts: 2, backoff: 0.01, maxBackoff: 0.01 } });
    await assert.rejects(tenure.acquire("x", { ttlSeconds: 5 }), TransportError);
  });
});

after(() => {
  // The contract check saw every operation the client sends.
  for (const id of ["acquire_v1_leases__name__acquire_post", "renew_many_v1_leases_renew_post"]) {
    assert.ok(checked.has(id), `${id} was never checked: ${[...checked.keys()]}`);
  }
});
