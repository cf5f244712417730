// DuckDB and Polars (Node.js bindings, bench/node_modules from `make bench-deps`) on the trace
// of bench/analyze_vs_pandas.py, with the same node-window rules: the node's power is the sum
// over GPUs per tick; tumbling windows of w seconds from the first tick, window k holding the
// ticks with floor((t - t0) / w + 1e-9) = k; a window judged when it holds at least half its
// length of ticks (count x period >= 0.5 w (1 - 1e-9), period the median tick spacing of the
// first 65 ticks); a violation when its mean exceeds the budget by more than 1e-9 relative.
//
// Usage: node bench/analyze_engines.mjs GPUS_CSV BUDGET_W WINDOWS_S(comma list) [RUNS]
// Prints one JSON object: {engine: {wall_s (best of RUNS), cpu_s (least of RUNS: this
// process's user + system, all threads), threads, version, windows: {w: [judged, violations]}}}.
// Each run is the whole path from the file to the counts: read the three columns, node sum,
// windows; nothing is cached between runs (a fresh DuckDB database, a fresh Polars frame).
import os from "node:os";
import { DuckDBInstance, version as duckdbVersion } from "@duckdb/node-api";
import pl from "nodejs-polars";

const TOL = 1e-9;
const [csv, budgetArg, windowsArg, runsArg] = process.argv.slice(2);
if (!csv || !budgetArg || !windowsArg) {
  console.error("usage: node bench/analyze_engines.mjs GPUS_CSV BUDGET_W WINDOWS_S [RUNS]");
  process.exit(2);
}
const budgetW = Number(budgetArg);
const windows = windowsArg.split(",").map(Number);
const runs = Number(runsArg || 3);

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function cpuS() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

async function duckdb() {
  const db = await DuckDBInstance.create(":memory:", { threads: String(os.cpus().length) });
  const c = await db.connect();
  const path = csv.replace(/'/g, "''");
  await c.run(`CREATE TEMP TABLE node AS
      SELECT time_s, sum(power_w) AS p FROM read_csv('${path}', header = true)
      GROUP BY time_s ORDER BY time_s`);
  const head = (await c.runAndReadAll("SELECT time_s FROM node ORDER BY time_s LIMIT 65"))
    .getRows()
    .map((r) => Number(r[0]));
  const t0 = head[0];
  const period = median(head.slice(1).map((t, i) => t - head[i]));
  const out = {};
  for (const w of windows) {
    const r = await c.runAndReadAll(`
      SELECT count(*) AS n, count(*) FILTER (WHERE m > ${budgetW} * (1 + ${TOL})) AS v FROM (
        SELECT CAST(floor((time_s - ${t0}) / ${w} + ${TOL}) AS BIGINT) AS k,
               avg(p) AS m, count(*) AS cnt
        FROM node GROUP BY k)
      WHERE cnt * ${period} >= 0.5 * ${w} * (1 - ${TOL})`);
    const [n, v] = r.getRows()[0];
    out[w] = [Number(n), Number(v)];
  }
  c.closeSync?.();
  return out;
}

function polars() {
  const df = pl.readCSV(csv, { columns: ["time_s", "gpu", "power_w"] });
  const node = df.groupBy("time_s").agg(pl.col("power_w").sum().alias("p")).sort("time_s");
  const t = node.getColumn("time_s").head(65).toArray();
  const t0 = t[0];
  const period = median(t.slice(1).map((x, i) => x - t[i]));
  const out = {};
  for (const w of windows) {
    const g = node
      .withColumns(
        pl.col("time_s").minus(t0).divideBy(w).plus(TOL).floor().cast(pl.Int64).alias("k"),
      )
      .groupBy("k")
      .agg(pl.col("p").mean().alias("m"), pl.col("p").count().alias("cnt"))
      .filter(pl.col("cnt").multiplyBy(period).greaterThanEquals(0.5 * w * (1 - TOL)));
    const v = g.filter(pl.col("m").greaterThan(budgetW * (1 + TOL))).height;
    out[w] = [g.height, v];
  }
  return out;
}

async function bestOf(fn) {
  let best = Infinity;
  let leastCpu = Infinity;
  let result;
  for (let i = 0; i < runs; ++i) {
    const c0 = cpuS();
    const t0 = process.hrtime.bigint();
    result = await fn();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    leastCpu = Math.min(leastCpu, cpuS() - c0);
  }
  return { wall_s: best, cpu_s: leastCpu, windows: result };
}

const report = {
  duckdb: { version: duckdbVersion(), threads: os.cpus().length, ...(await bestOf(duckdb)) },
  polars: { threads: pl.threadPoolSize ? pl.threadPoolSize() : os.cpus().length, ...(await bestOf(polars)) },
};
console.log(JSON.stringify(report));
