// A "payments" API that refuses payouts from a job that lost its lease: the fencing middleware
// of tenure-client in front of node:http. Its fences and payouts live in memory, so it is ONE
// process (use RemoteFenceStore, or check the token in the database's transaction, beyond that).
//
//   node payments-api.js            # listens on 127.0.0.1:8081 ($PORT)
//
// POST /payouts {store, day, amount_cents} needs `Fencing-Token: <lease>/<generation>` (409
// stale-generation once a newer generation paid) and an `Idempotency-Key`: a payout repeated
// with the same key is answered with the first one (200) and pays nothing more.
import http from "node:http";
import { MemoryFenceStore, fencing } from "tenure-client";

/** @typedef {{store: number, day: string, amount_cents: number, fencing_token: string, idempotency_key: string}} Payout */

export function createPaymentsServer() {
  /** @type {Map<string, Payout>} */
  const payouts = new Map();
  // One fence for every payout: a newer holding that paid anywhere refuses older ones everywhere.
  const guard = fencing({ store: new MemoryFenceStore(), resource: () => "payouts" });
  const server = http.createServer((req, res) => {
    /** @param {number} status @param {unknown} body */
    const answer = (status, body) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method === "GET" && req.url === "/payouts") return answer(200, [...payouts.values()]);
    guard(req, res, async () => {
      const key = req.headers["idempotency-key"];
      if (req.url !== "/payouts" || typeof key !== "string") return answer(400, { detail: "POST /payouts with an Idempotency-Key" });
      let text = "";
      for await (const chunk of req) text += chunk;
      const { store, day, amount_cents } = JSON.parse(text);
      const { lease, generation } = /** @type {any} */ (req).fencing;
      const first = payouts.get(key);
      if (first) return answer(200, first);
      const payout = { store, day, amount_cents, fencing_token: `${lease}/${generation}`, idempotency_key: key };
      payouts.set(key, payout);
      answer(201, payout);
    });
  });
  return { server, payouts };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.env.PORT ?? 8081);
  createPaymentsServer().server.listen(port, "127.0.0.1", () => console.log(`payments API on :${port}`));
}
