// examples/node: the seed's daily close on tenure-client, installed from its folder as a user
// would (`npm install` of a file: dependency), against the real service and the example's
// fenced payments API.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { once } from "node:events";
import path from "node:path";
import { after, before, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { service } from "./support/service.js";

const EXAMPLES = path.resolve(fileURLToPath(import.meta.url), "../../../../examples/node");

/** @type {Awaited<ReturnType<typeof service>>} */
let live;
before(async () => {
  if (!existsSync(path.join(EXAMPLES, "node_modules/tenure-client"))) {
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: EXAMPLES });
  }
  live = await service();
});
after(async () => {
  await live?.stop();
});

/** @param {Record<string, string>} env @param {string[]} args */
async function dailyClose(env, ...args) {
  const run = promisify(execFile)(process.execPath, ["daily-close.js", ...args], {
    cwd: EXAMPLES,
    env: { ...process.env, ...env },
  });
  try {
    const { stdout } = await run;
    return { code: 0, stdout };
  } catch (error) {
    const failed = /** @type {{code: number, stdout: string, stderr: string}} */ (error);
    return { code: failed.code, stdout: failed.stdout + failed.stderr };
  }
}

it("pays every store once for a day; run again, it skips the completed day", async () => {
  const { createPaymentsServer } = await import(path.join(EXAMPLES, "payments-api.js"));
  const { server, payouts } = createPaymentsServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const env = { TENURE_URL: live.url, PAYMENTS_URL: `http://127.0.0.1:${server.address().port}` };
  // A day of its own: the service's database may have closed others already.
  const day = new Date(Date.UTC(2000 + Math.floor(Math.random() * 500), 0, 1 + Math.floor(Math.random() * 28)))
    .toISOString()
    .slice(0, 10);
  try {
    const first = await dailyClose(env, day);
    assert.equal(first.code, 0, first.stdout);
    assert.match(first.stdout, new RegExp(`${day}: paid 3 stores \\(attempt 1\\)`));
    assert.deepEqual([...payouts.keys()].sort(), [17, 42, 99].map((store) => `fechamento-diario/${day}/store/${store}`).sort());
    const again = await dailyClose(env, day);
    assert.equal(again.stdout.trim(), `${day}: skipped: completed`);
    assert.equal(payouts.size, 3);
    assert.equal((await dailyClose(env, "2026-02-30")).code, 2);
  } finally {
    server.close();
  }
});
