// A holder paused past its TTL (SIGSTOP): once resumed, its fenced write is refused by the
// middleware (a newer holder wrote meanwhile) and its lease.signal is aborted.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import path from "node:path";
import { createInterface } from "node:readline";
import { after, before, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { RemoteFenceStore, Tenure, fencing } from "../index.js";
import { service } from "./support/service.js";

const HOLDER = path.join(path.dirname(fileURLToPath(import.meta.url)), "support/holder.js");
const TTL = 1.5;

/** @type {Awaited<ReturnType<typeof service>>} */
let live;
before(async () => {
  live = await service();
});
after(async () => {
  await live?.stop();
});

/** A fenced app: the Node middleware on Tenure's fences, 200 for what it accepts.
 * @param {Tenure} tenure */
async function fencedApp(tenure) {
  const guard = fencing({ store: new RemoteFenceStore(tenure), resource: () => "ledger" });
  const server = http.createServer((req, res) =>
    guard(req, res, () => res.end(JSON.stringify(/** @type {any} */ (req).fencing))),
  );
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = /** @type {import("node:net").AddressInfo} */ (server.address());
  return { server, url: `http://127.0.0.1:${address.port}/ledger` };
}

it("a holder stopped past its TTL is fenced off, and its signal aborted", async () => {
  const tenure = new Tenure({ url: live.url });
  const app = await fencedApp(tenure);
  const name = `paused-${randomUUID().slice(0, 8)}`;
  const child = spawn(process.execPath, [HOLDER, live.url, name, String(TTL), app.url], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    /** @type {any[]} */
    const events = [];
    let resumed = false;
    const lines = createInterface({ input: /** @type {import("node:stream").Readable} */ (child.stdout) });
    const ended = new Promise((resolve) => {
      lines.on("line", (line) => {
        const event = { ...JSON.parse(line), resumed };
        events.push(event);
        if (event.outcome) resolve(undefined);
      });
    });
    while (!events.some((event) => event.write === 200)) await sleep(50);
    const generation = events[0].ready;
    child.kill("SIGSTOP");
    await sleep((TTL + 1) * 1000); // its lease expires; it cannot tell
    const newer = await tenure.acquire(name, { ttlSeconds: 30 });
    assert.ok(newer.generation > generation);
    const write = await fetch(app.url, { method: "POST", headers: newer.fencingHeaders() });
    assert.equal(write.status, 200);
    resumed = true;
    child.kill("SIGCONT");
    await ended;
    const late = events.filter((event) => event.resumed && "write" in event);
    assert.ok(late.length >= 1, JSON.stringify(events));
    for (const event of late) {
      assert.deepEqual([event.write, event.type], [409, "/problems/stale-generation"]);
    }
    assert.equal(late.at(-1).aborted, true);
    assert.equal(events.at(-1).outcome, "LeaseLost");
    await newer.release();
  } finally {
    child.kill("SIGKILL");
    app.server.close();
  }
});
