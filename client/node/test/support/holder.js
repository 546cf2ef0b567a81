// A holder for pause.test.js: holds lease argv[3] under withLease and writes to the fenced app at
// argv[5] every 100 ms with its fencing token, printing one JSON line per event, until its lease
// is lost. The test stops it (SIGSTOP) past its TTL meanwhile.
import { setTimeout as sleep } from "node:timers/promises";
import { Tenure } from "../../index.js";

const [url, name, ttl, target] = process.argv.slice(2);
/** @param {object} event */
const say = (event) => process.stdout.write(`${JSON.stringify(event)}\n`);
const tenure = new Tenure({ url });
try {
  await tenure.withLease(name, { ttlSeconds: Number(ttl) }, async (lease) => {
    say({ ready: lease.generation });
    for (;;) {
      const response = await fetch(target, { method: "POST", headers: lease.fencingHeaders() });
      const body = await response.json();
      say({ write: response.status, type: body.type ?? null, aborted: lease.signal.aborted });
      if (lease.signal.aborted) break;
      await sleep(100);
    }
  });
  say({ outcome: "completed" });
} catch (error) {
  say({ outcome: /** @type {Error} */ (error).name });
}
