// Cost charts (recharts): spend per day, stacked by a key (workflow), and spend by a key.
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { DayCost, KeyCost } from "../api";
import { usd } from "../format";

const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];

export function CostPerDay({ days }: { days: DayCost[] }) {
  const keys = [...new Set(days.map((d) => d.key))];
  const byDay = new Map<string, Record<string, number | string>>();
  for (const d of days) {
    const row = byDay.get(d.day) ?? { day: d.day };
    row[d.key] = d.cost_usd;
    byDay.set(d.day, row);
  }
  const rows = [...byDay.values()];
  if (rows.length === 0) return <p className="muted">No spend in this period.</p>;
  return (
    <div className="chart" data-chart="cost-per-day">
      <ResponsiveContainer width="100%" height={240}>
        <BarChart data={rows}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="day" />
          <YAxis tickFormatter={(v: number) => usd(v)} width={70} />
          <Tooltip formatter={(v) => usd(Number(v))} />
          {keys.length > 1 && <Legend />}
          {keys.map((key, i) => (
            <Bar key={key} dataKey={key} stackId="cost" fill={PALETTE[i % PALETTE.length]} isAnimationActive={false} />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

export function CostBy({ rows, name }: { rows: KeyCost[]; name: string }) {
  if (rows.length === 0) return <p className="muted">No spend in this period.</p>;
  return (
    <div className="chart" data-chart={`cost-by-${name}`}>
      <ResponsiveContainer width="100%" height={Math.max(120, rows.length * 28 + 40)}>
        <BarChart data={rows} layout="vertical" margin={{ left: 24 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis type="number" tickFormatter={(v: number) => usd(v)} />
          <YAxis type="category" dataKey="key" width={160} />
          <Tooltip formatter={(v) => usd(Number(v))} />
          <Bar dataKey="cost_usd" name="cost" fill="#2563eb" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
