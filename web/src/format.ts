export function usd(value: number | null | undefined): string {
  if (value == null) return "–";
  if (value === 0) return "$0";
  if (value < 0.01) return `$${value.toFixed(4)}`;
  return `$${value.toFixed(2)}`;
}

export function count(value: number | null | undefined): string {
  if (value == null) return "–";
  return value.toLocaleString("en-US");
}

export function seconds(value: number | null | undefined): string {
  if (value == null || Number.isNaN(value)) return "–";
  if (value < 1) return `${Math.round(value * 1000)} ms`;
  if (value < 60) return `${value.toFixed(1)} s`;
  if (value < 3600) return `${Math.floor(value / 60)} m ${Math.round(value % 60)} s`;
  if (value < 86400) return `${Math.floor(value / 3600)} h ${Math.round((value % 3600) / 60)} m`;
  return `${Math.floor(value / 86400)} d ${Math.round((value % 86400) / 3600)} h`;
}

export function duration(start: string | null, end: string | null, now = Date.now()): string {
  if (!start) return "–";
  const finish = end ? Date.parse(end) : now;
  return seconds((finish - Date.parse(start)) / 1000);
}

export function when(value: string | null | undefined): string {
  if (!value) return "–";
  const date = new Date(value);
  return date.toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

export function bytes(value: number | null | undefined): string {
  if (value == null) return "–";
  if (value < 1024) return `${value} B`;
  if (value < 1024 * 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${(value / 1024 / 1024).toFixed(1)} MiB`;
}

export const RUN_STATUSES = [
  "running",
  "waiting",
  "paused",
  "succeeded",
  "failed",
  "cancelled",
  "timed_out",
];
