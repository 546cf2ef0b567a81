// The seed's daily close (fechamento-diario) on tenure-client: pay every store its commission
// for a day, once, through the fenced payments API.
//
//   scripts/serve                     # terminal 1: Tenure on :8080
//   node payments-api.js              # terminal 2: the payments API on :8081
//   node daily-close.js 2026-09-25    # terminal 3: paid 3 stores; again: skipped: completed
//   (first `npm install` here: it installs tenure-client from client/node)
//
// DAY is an ISO date (default: yesterday); TENURE_URL and PAYMENTS_URL default to the two
// services above. The seed's `executarComTrava` becomes `tenure.runOnce`: the lease is renewed
// every TTL/3, `ctx.signal` is aborted when it is lost, and it is released in `finally`; the
// window (the day) is completed only when every store was paid, so a late or repeated run
// skips it. Where the seed checked possession in its own transaction (FOR SHARE), an external
// API checks the fencing token: each payout carries `Fencing-Token` and an idempotency key of
// the occurrence (`fechamento-diario/2026-09-25/store/42`), so a retry after a crash half-way pays
// the missing stores and gets the first payout back for the others.
//
// Exit status: 0 paid or skipped (held: another copy runs the day; completed: it is done),
// 1 Tenure or the payments API refused or could not be reached, 2 invalid arguments,
// 3 fenced off (a newer holding paid), 4 the lease was lost mid-run.
import { LeaseLost, StaleGeneration, Tenure, TenureError } from "tenure-client";

// The seed's name; the Python example's job is "daily-close".
const JOB = "fechamento-diario";
const STORES = [17, 42, 99];
const TTL_SECONDS = 90;

/** Stand-in for the real sum of the day's sales. @param {number} store */
const commissionCents = (store) => 500 * store;

/** @param {number} status @param {string} message @returns {never} */
function fail(status, message) {
  console.error(message);
  process.exit(status);
}

/** The day as YYYY-MM-DD: one spelling per day, so one window and one set of keys. */
function dayOf(/** @type {string | undefined} */ text) {
  if (text === undefined) return new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  const day = new Date(`${text}T00:00:00Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== text) {
    fail(2, `not a date (YYYY-MM-DD): ${JSON.stringify(text)}`);
  }
  return text;
}

/**
 * @param {string} paymentsUrl @param {string} day
 * @returns {(ctx: import("tenure-client").RunContext) => Promise<number>}
 */
function closeDay(paymentsUrl, day) {
  return async (ctx) => {
    for (const store of STORES) {
      ctx.signal.throwIfAborted(); // stop between payouts once the lease is known to be lost
      const response = await fetch(`${paymentsUrl}/payouts`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...ctx.fencingHeaders(), // Fencing-Token: fechamento-diario/<generation>
          "Idempotency-Key": ctx.idempotencyKey("store", store),
        },
        body: JSON.stringify({ store, day, amount_cents: commissionCents(store) }),
      });
      const body = await response.json();
      if (body.type === "/problems/stale-generation") {
        throw new StaleGeneration(`generation ${ctx.generation} is superseded by ${body.highest}`, {
          status: 409,
          problem: body,
        });
      }
      if (!response.ok) throw new Error(`the payments API answered ${response.status}: ${JSON.stringify(body)}`);
      console.log(`store ${store}: ${response.status} ${body.fencing_token}`);
    }
    return STORES.length;
  };
}

const day = dayOf(process.argv[2]);
const paymentsUrl = process.env.PAYMENTS_URL ?? "http://127.0.0.1:8081";
const tenure = new Tenure(); // TENURE_URL, TENURE_TOKEN
try {
  const result = await tenure.runOnce(JOB, { window: day }, { ttlSeconds: TTL_SECONDS }, closeDay(paymentsUrl, day));
  if (result.status === "completed") {
    console.log(`${day}: paid ${result.value} stores (attempt ${result.attempt})`);
  } else {
    console.log(`${day}: skipped: ${result.reason}`);
  }
} catch (error) {
  if (error instanceof StaleGeneration) fail(3, `fenced off: ${error.message}`);
  if (error instanceof LeaseLost) fail(4, `lease lost: ${error.message}; run ${day} again to finish it`);
  if (error instanceof TenureError) fail(1, `Tenure refused or could not be reached: ${error.message}`);
  fail(1, `the payments API failed: ${error}`);
}
