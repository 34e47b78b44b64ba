/**
 * The CPU a local PostgreSQL server (startLocalPostgres) has used: the
 * postmaster and every process it started, alive (their own time) or ended
 * (reaped: the postmaster's children's time). For bench/run.mjs, which adds
 * it to the node processes' CPU, so a row's CPU per item includes the
 * database's work (on this machine it shares the cores with the nodes).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const TICK_US = 1e6 / 100; // USER_HZ: 100 on Linux

/** A receiver-like `{ cpu() }` for `withCpu`, in microseconds; undefined when the postmaster cannot be found (not Linux). */
export function postgresCpu(directory) {
  const pidFile = findFile(directory, "postmaster.pid");
  if (pidFile === undefined) return undefined;
  const postmaster = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  const stat = (pid) => {
    try {
      // Fields after the command (which is in parentheses and may hold spaces).
      const text = readFileSync(`/proc/${pid}/stat`, "utf8");
      return text.slice(text.lastIndexOf(")") + 2).split(" ");
    } catch {
      return undefined;
    }
  };
  return {
    cpu: async () => {
      let user = 0;
      let system = 0;
      for (const entry of readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        const fields = stat(entry);
        // fields[1]: ppid; [11], [12]: utime, stime; [13], [14]: children's (reaped) utime, stime.
        if (fields === undefined || (Number(entry) !== postmaster && Number(fields[1]) !== postmaster)) continue;
        user += Number(fields[11]) + (Number(entry) === postmaster ? Number(fields[13]) : 0);
        system += Number(fields[12]) + (Number(entry) === postmaster ? Number(fields[14]) : 0);
      }
      return { user: user * TICK_US, system: system * TICK_US };
    },
  };
}

function findFile(directory, name) {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isFile() && entry.name === name) return path;
    if (entry.isDirectory()) {
      const found = findFile(path, name);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}
