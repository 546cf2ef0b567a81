// The committed .d.ts files are what tsc makes of the JSDoc today.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { it } from "node:test";

const root = path.resolve(fileURLToPath(import.meta.url), "../..");

/** @param {string} folder @returns {string[]} */
function files(folder, prefix = "") {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? files(path.join(folder, entry.name), `${prefix}${entry.name}/`)
      : [`${prefix}${entry.name}`],
  );
}

it("types/ is current: npm run types regenerates it unchanged", () => {
  const out = mkdtempSync(path.join(tmpdir(), "tenure-types-"));
  try {
    const tsc = path.join(root, "node_modules/typescript/bin/tsc");
    execFileSync(process.execPath, [tsc, "-p", "tsconfig.types.json", "--outDir", out], { cwd: root });
    const committed = path.join(root, "types");
    assert.deepEqual(files(out).sort(), files(committed).sort());
    for (const name of files(out)) {
      const fresh = readFileSync(path.join(out, name), "utf8");
      assert.equal(readFileSync(path.join(committed, name), "utf8"), fresh, `types/${name} is stale: npm run types`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
