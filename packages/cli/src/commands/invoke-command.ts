/**
 * The `invoke` and `resume` commands: their options, help and examples. The runners (invoke.ts,
 * resume.ts) load only when a command runs.
 */
import { Option, type Command } from "commander";
import { applicationOption, environmentOption, withCatalogueSelector } from "../catalogue-selector.js";
import type { InvokeOptions } from "../options.js";
import { CONNECTION_HELP, EXIT_HELP } from "./command-help.js";
import type { CommandContext } from "./command-context.js";
import { addRunOptions, runOptionsOf } from "./connection-options.js";
import { parseIdempotencyKey } from "../option-parsers.js";

export function addInvokeCommands(program: Command, { io, setExitCode }: CommandContext): void {
  const invoke = program
    .command("invoke")
    .description("Call an agent method, streaming stdin into it and its output streams to stdout.")
    .argument("<agent-type>", "agent type, for example echo")
    .argument("<method>", "method name, for example digest")
    .argument("[arguments...]", "one per method parameter, in order: JSON; for a stream parameter - (stdin) or a file to read")
    .addOption(applicationOption())
    .addOption(environmentOption())
    .option("-c, --constructor <json>", "constructor parameters as JSON (an object by field name, or an array)")
    .option("--native", 'arguments and --constructor are native SchemaValue JSON ({"kind":..,"value":..})', false)
    .addOption(
      new Option(
        "--input <format>",
        "lines of a stream parameter's input: auto: a stream<string> one raw line per item, other items one JSON value per line; json: every line JSON, a stream<string>'s a JSON string (\"a\\nb\": one item with a newline); bytes raw either way",
      )
        .choices(["auto", "json"])
        .default("auto"),
    )
    .option("--idempotency-key <key>", "invocation idempotency key, 1 byte to 1 KiB of UTF-8 (default: a fresh UUID)", parseIdempotencyKey)
    .option("--phantom-id <uuid>", "phantom agent id")
    .option("--checkpoint <file>", "keep checkpoint v1 here, so `resume` can continue after a crash");
  takeNegativeValues(invoke);
  addRunOptions(invoke)
    .addHelpText(
      "after",
      `
Arguments are plain JSON converted with the method's schema from the server's discovery endpoint
(u64/s64 may be given as strings), or native SchemaValue JSON with --native. A negative number
(-3, -1E3, -.5, -Infinity) is an argument, never an option; any other argument that starts with -
goes after --.
A stream parameter takes "-" (stdin) or a file to read: raw bytes for stream<u8> and stream<binary>,
one item per line for stream<string> (with --input json a JSON string per line, which may hold \\n),
one JSON value per line for other items. Stdin feeds one stream; give the others files (<(command) too). Output: a result with a single output stream prints it bare (strings one per
line, bytes raw, other items one JSON value per line; the rest of the result on stderr, or nowhere
with --result none); several streams print one JSON line per item ({"stream":name,"item":value})
and the result last. --output lines always uses those lines; --output json prints one JSON event
per line for everything (acceptance, items, ends, result, finish or failure with its code).
With --checkpoint the file is written in batches behind stdout (--checkpoint-interval,
--checkpoint-items): a crash repeats what was printed since the last write, never skips anything.
Progress is drawn on stderr when it is a terminal and stdout is not, nor stdin read by -.
${CONNECTION_HELP}

Examples:
  $ golem-stream invoke echo digest -c '{"name":"me"}' - < big.iso
  $ printf 'one\\ntwo\\n' | golem-stream invoke echo split -c '{"name":"me"}' -
  $ golem-stream invoke echo reverse -c '["me"]' - < lines.txt | sort
  $ printf '"one\\\\ntwo"\\n' | golem-stream invoke echo reverse -c '["me"]' --input json --output lines -
  $ golem-stream invoke echo count -c '{"name":"me"}' 10 100 --checkpoint count.ckpt
  $ golem-stream invoke echo blobs -c '{"name":"me"}' 1 4096 > blob.bin
  $ golem-stream invoke echo count --native -c '{"kind":"record","value":{"fields":[{"kind":"string","value":"me"}]}}' \\
      '{"kind":"u32","value":3}' '{"kind":"u32","value":0}' --output json
${EXIT_HELP}`,
    )
    .action(async (agentType: string, method: string, args: string[], parsed: Record<string, unknown>) => {
      const { runInvoke } = await import("./invoke.js");
      const constructorJson = Object.hasOwn(parsed, "constructor") ? (parsed["constructor"] as string) : undefined;
      const { constructor: _ignored, ...rest } = parsed;
      const options = withCatalogueSelector(
        { ...runOptionsOf(rest), ...(constructorJson === undefined ? {} : { constructorJson }) } as InvokeOptions,
        io.env,
      );
      setExitCode(await runInvoke({ agentType, method, args }, options, io));
    });

  const resume = program
    .command("resume")
    .description("Continue an invocation from a checkpoint after a crash or lost connection, without skipping output.")
    .argument("<checkpoint>", "checkpoint file written by invoke --checkpoint (it is kept up to date)");
  addRunOptions(resume)
    .addHelpText(
      "after",
      `
Output continues after the last item the checkpoint records as delivered; what was printed after the
checkpoint's last write (at most --checkpoint-interval of output) is repeated, nothing is skipped. A checkpoint saved before the start was accepted
holds the frozen start: resume sends exactly that start again (same attempt id), and the server either
replays its acceptance or accepts it now. An invocation that already finished prints its result again
and exits 0.

Input read from stdin is not replayable, nor is a file's (a checkpoint keeps no file names): after a
crash, resume has no source for it, and an input stream the server had not seen end is cancelled
with source-unavailable (the invocation then usually fails, exit 1). Output the server produced is
still delivered.
${CONNECTION_HELP}

Examples:
  $ golem-stream invoke echo count -c '{"name":"me"}' 1000 10 --checkpoint run.ckpt >> out.txt
  $ golem-stream resume run.ckpt >> out.txt
  $ golem-stream resume run.ckpt --url http://other-host:8080 --output json
${EXIT_HELP}`,
    )
    .action(async (file: string, parsed: Record<string, unknown>) => {
      const { runResume } = await import("./resume.js");
      setExitCode(await runResume(file, runOptionsOf(parsed), io));
    });
}

/**
 * An argument that starts with `-` and then a digit or a dot (`-1E3`, `-.5`), or is `-Infinity`,
 * is a value of a parameter, never an option: no option starts so. Commander takes only its own
 * spelling of a negative number (`-1.5`, `-1e3`) as an argument and the rest as an unknown
 * option, and then also every argument after it; those go back to the arguments, in their order,
 * up to the first real unknown option, which commander still reports. A `--` after such a value
 * ends the options as it does anywhere else.
 */
const NEGATIVE_VALUE = /^-(?:\.?\d|Infinity$)/;

function takeNegativeValues(command: Command): void {
  const parseOptions = command.parseOptions.bind(command);
  command.parseOptions = (argv) => {
    const { operands, unknown } = parseOptions(argv);
    let index = 0;
    for (; index < unknown.length; index++) {
      const arg = unknown[index] as string;
      if (arg === "--") return { operands: [...operands, ...unknown.slice(0, index), ...unknown.slice(index + 1)], unknown: [] };
      // `-` alone is stdin; any other argument that starts with `-` and is no value is an option.
      if (arg.length > 1 && arg.startsWith("-") && !NEGATIVE_VALUE.test(arg)) break;
    }
    return { operands: [...operands, ...unknown.slice(0, index)], unknown: unknown.slice(index) };
  };
}
