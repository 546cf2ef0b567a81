// `npm test`: one `tenure serve` for every suite (see support/service.js), then `node --test`
// on the suites one file at a time (a suite bumps every generation of the service's database).
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startService } from "./support/service.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const suites = readdirSync(here)
  .filter((name) => name.endsWith(".test.js"))
  .map((name) => path.join(here, name));
const live = process.env.TENURE_TEST_URL ? null : await startService();
const env = live
  ? { ...process.env, TENURE_TEST_URL: live.url, TENURE_TEST_SETTINGS: JSON.stringify(live.settings) }
  : process.env;
const child = spawn(process.execPath, ["--test", "--test-concurrency=1", ...process.argv.slice(2), ...suites], {
  env,
  stdio: "inherit",
});
const code = await new Promise((resolve) => child.once("exit", (status) => resolve(status ?? 1)));
await live?.stop();
process.exit(code);
