// A troupe client in TypeScript: starts a workflow, follows it, and prints how it ended.
//
//   node dist/main.js [--address HOST:PORT] [--token-file FILE] [--input JSON] [--id ID]
//                     [--from TASK] [--watch] [--timeout SECONDS] DEFINITION.json|NAME
//
// Prints `started ID`, with --watch one `event SEQ KIND ACTOR BODY` line per history event,
// then `result ID STATE`, one `task NAME STATE ...` line per task, and one `listed ID STATE
// NAME` line per workflow of the scheduler. Exit codes: 0 the workflow succeeded, 1 it did not,
// 2 a usage error or a refused call, 3 the scheduler cannot be reached, 4 --timeout ran out.
import { existsSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ActorKind } from "./schema/common.js";
import { HistorySink } from "./schema/gateway.js";
import { EventBody_Which } from "./schema/history.js";
import { camel, check, connect, Refused, Unreachable } from "./connect.js";

const usage = "usage: main.js [--address HOST:PORT] [--token-file FILE] [--input JSON] [--id ID] " +
              "[--from TASK] [--watch] [--timeout SECONDS] DEFINITION.json|NAME";

/// The command line, or a usage error (exit 2).
function parse() {
  try {
    const { values, positionals } = parseArgs({
      options: {
        address: { type: "string", default: process.env.TROUPE_ADDRESS ?? "127.0.0.1:7700" },
        "token-file": { type: "string" },
        input: { type: "string", default: "{}" },
        id: { type: "string", default: "" },
        from: { type: "string", default: "" },
        watch: { type: "boolean", default: false },
        timeout: { type: "string", default: "600" },
      },
      allowPositionals: true,
    });
    const address = /^(.+):(\d+)$/.exec(values.address);
    if (address === null) throw new Error(`--address ${values.address}: expected HOST:PORT`);
    const timeout = Number(values.timeout);
    if (!(timeout > 0)) throw new Error(`--timeout ${values.timeout}: expected a number of seconds`);
    if (positionals.length !== 1) throw new Error("expected one definition (a file, or a registered name)");
    return { ...values, host: address[1], port: Number(address[2]), timeout, definition: positionals[0] };
  } catch (e) {
    console.error(`${(e as Error).message}\n${usage}`);
    process.exit(2);
  }
}
const options = parse();

function nameOf(table: Record<string, number>, value: number): string {
  const name = Object.entries(table).find(([, v]) => v === value)?.[0];
  return name === undefined ? `unknown(${value})` : camel(name);  // a newer schema's member
}

async function main(): Promise<number> {
  const token = options["token-file"] ? readFileSync(options["token-file"], "utf8").trim() : "";
  // A file holds a definition; anything else is the name of one registered with the scheduler.
  const definition = existsSync(options.definition) ? readFileSync(options.definition, "utf8") : options.definition;

  const { service, call, close } = await connect(options.host, options.port, token);
  try {
    // Acknowledged once the submission is durable; an empty id gets a new one.
    const started = check(await call(service.startWorkflow((p) => {
      p.definitionJson = definition;
      p.inputJson = options.input;
      p.workflowId = options.id;
      p.runFrom = options.from;
    }).promise()));
    const id = started.workflowId;
    console.log(`started ${id}`);

    // The history, live, pushed to a HistorySink this program serves; watch() returns once the
    // workflow has closed and its last event was delivered.
    const sink = new HistorySink.Server({
      async events(params, results) {
        for (const e of params.events) {
          console.log(`event ${e.sequence} ${nameOf(ActorKind, e.actorKind)} ${e.actorId} ` +
                      nameOf(EventBody_Which, e.body.which()));
        }
        results.stop = false;  // true ends the watch early
      },
    });
    const watched = options.watch
      ? call(service.watch((p) => {
          p.workflowId = id;
          p.fromSequence = 1n;  // after a reconnect: the sequence after the last one received
          p.sink = sink.client();
        }).promise()).then(check)
      : Promise.resolve();

    // result() waits for the workflow to end.
    const [ended] = await Promise.all([
      call(service.result((p) => { p.workflowId = id; }).promise()).then(check),
      watched,
    ]);
    const { state, detail } = ended.result;
    console.log(`result ${id} ${state}${detail ? `: ${detail}` : ""}`);

    const described = check(await call(service.describe((p) => { p.workflowId = id; }).promise()));
    for (const t of described.description.tasks) {
      console.log(`task ${t.name} ${t.state} attempt ${t.attempt} worker ${t.worker || "-"}` +
                  (t.failure ? ` failure ${t.failure}` : ""));
    }

    // Every workflow the scheduler knows, a page at a time, in id order.
    let after = "";
    do {
      const page = check(await call(service.list((p) => {
        const q = p._initQuery();
        q.after = after;
        q.limit = 100;
      }).promise()));
      for (const w of page.workflows) console.log(`listed ${w.workflowId} ${w.state} ${w.definitionName}`);
      after = page.nextCursor;
    } while (after !== "");

    return state === "SUCCESS" ? 0 : 1;
  } finally {
    close();
  }
}

const timer = setTimeout(() => {
  console.error(`timed out after ${options.timeout} s`);
  process.exit(4);
}, options.timeout * 1000);

main().then(
  (code) => {
    clearTimeout(timer);
    process.exitCode = code;
  },
  (e: unknown) => {
    clearTimeout(timer);
    if (e instanceof Refused) {
      console.error(`refused (${e.codeName}): ${e.message}`);
      process.exitCode = 2;
    } else if (e instanceof Unreachable) {
      console.error(e.message);
      process.exitCode = 3;
    } else {
      console.error(String(e));  // an unreadable file, say
      process.exitCode = 2;
    }
  },
);
