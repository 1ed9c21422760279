// Compiles troupe's Cap'n Proto schema into TypeScript (src/schema/*.ts) with capnp-es.
//   node schema.mjs [SCHEMA_DIR]      (default: the repository's schema/, two levels up)
// `capnp compile -o-` (Debian's capnproto) parses the files and resolves their imports;
// capnp-es turns its CodeGeneratorRequest into TypeScript.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compileAll } from "capnp-es/compiler";

const dir = process.argv[2] ?? "../../schema";
// gateway.capnp and every file it imports; /capnp/c++.capnp comes from capnp's include path.
const files = ["gateway.capnp", "common.capnp", "history.capnp", "worker.capnp", "admin.capnp"];
const request = execFileSync("capnp", ["compile", "-o-", `--src-prefix=${dir}`, ...files.map((f) => join(dir, f))]);
const { files: generated } = await compileAll(request, { ts: true });
mkdirSync("src/schema", { recursive: true });
for (const [name, text] of generated) {
  // Generated, not ours to check: capnp-es gives Gateway's client class a `client` field that
  // clashes with the method Gateway.client (connect.ts calls that method another way).
  writeFileSync(join("src/schema", name), `// @ts-nocheck\n${text}`);
}
console.log(`compiled ${files.join(", ")} from ${dir} into src/schema/`);
