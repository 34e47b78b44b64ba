/**
 * Help text several commands print: how they find the server, and the exit codes. Kept apart so
 * each command's file can add it without importing the program.
 */
import { DEFAULT_URL } from "../options.js";
import { DEFAULT_APPLICATION, DEFAULT_ENVIRONMENT } from "../catalogue-selector.js";

export const CONNECTION_HELP = `
Connection (invoke, resume, types, codegen):
  --url defaults to $GOLEM_STREAM_URL, then ${DEFAULT_URL}
  --token defaults to $GOLEM_STREAM_TOKEN (a static bearer token the server accepts)
  -a/--application and -e/--environment (invoke, types, codegen) default to $GOLEM_STREAM_APPLICATION
  and $GOLEM_STREAM_ENVIRONMENT, then ${DEFAULT_APPLICATION} and ${DEFAULT_ENVIRONMENT}`;

export const EXIT_HELP = `
Exit codes:
  0    success
  1    the invocation was accepted but failed (or an output stream ended in error)
  2    usage error: bad option, argument, input file or checkpoint; nothing was sent
  3    rejected by the server (authentication or invocationRejected)
  4    connection lost; \`golem-stream resume <checkpoint>\` continues
  5    conformance: the suite ran and at least one check failed
  70   internal error of the CLI (a bug: please report it with the message)
  74   stdout or the checkpoint could not be written; \`resume\` continues after the last saved item
       (without --checkpoint, a failed stdout cancels the invocation)
  78   serve --agents: the module could not be loaded or its catalogue is invalid; nothing was started
  130  interrupted (SIGINT/SIGTERM/SIGHUP): with --checkpoint the invocation keeps running on the
       server (\`resume\` continues it); without, it is cancelled there (a second Ctrl-C stops waiting);
       serve --agents while its module loads: nothing was started
  141  stdout was closed by its reader (\`| head\`): stopped quietly, like a program stopped by SIGPIPE;
       the invocation was cancelled, or with --checkpoint keeps running (\`resume\` continues it)`;
