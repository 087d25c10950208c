// A JSON value as text (React escapes it: HTML in an output is shown, never run). Values too
// large to come with the page are fetched when asked for: a whole value (`fetchPath`), or the
// large parts a step stored apart (`{"$switchyard_ref": {key, bytes}}` inside the value).
import { useState } from "react";
import { getText } from "../api";
import { bytes } from "../format";

const SHOWN = 512 * 1024;
type Ref = { path: string; key: string; bytes: number };

function refsIn(value: unknown, path = "", out: Ref[] = []): Ref[] {
  if (Array.isArray(value)) {
    value.forEach((item, i) => refsIn(item, `${path}[${i}]`, out));
  } else if (value && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const ref = record["$switchyard_ref"] as { key?: string; bytes?: number } | undefined;
    if (ref && typeof ref.key === "string") {
      out.push({ path: path || "value", key: ref.key, bytes: ref.bytes ?? 0 });
    } else {
      for (const [name, item] of Object.entries(record)) refsIn(item, path ? `${path}.${name}` : name, out);
    }
  }
  return out;
}

function Fetched({ path, label, size }: { path: string; label: string; size: number }) {
  const [loaded, setLoaded] = useState<{ text: string; bytes: number } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  if (loaded) {
    const text = loaded.text.length > SHOWN ? loaded.text.slice(0, SHOWN) : loaded.text;
    return (
      <div className="fetched">
        <span className="muted">{label}</span>
        {loaded.bytes > text.length && (
          <p className="muted">
            The first {bytes(text.length)} of {bytes(loaded.bytes)}.
          </p>
        )}
        <pre className="json">{text}</pre>
      </div>
    );
  }
  return (
    <div>
      <button
        type="button"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          getText(path)
            .then(setLoaded)
            .catch((reason: Error) => setError(reason.message))
            .finally(() => setBusy(false));
        }}
      >
        Load {label} ({bytes(size)})
      </button>
      {error && <span className="error-text"> {error}</span>}
    </div>
  );
}

export function JsonView({
  value,
  size,
  fetchPath,
  blobPath,
  label,
}: {
  value: unknown;
  size: number | null;
  fetchPath: string;
  blobPath: string;
  label: string;
}) {
  if (size == null) return <span className="muted">none</span>;
  if (value === null || value === undefined) return <Fetched path={fetchPath} label={label} size={size} />;
  const refs = refsIn(value);
  return (
    <>
      <pre className="json">{JSON.stringify(value, null, 2)}</pre>
      {refs.map((ref) => (
        <Fetched
          key={ref.key + ref.path}
          path={`${blobPath}?key=${encodeURIComponent(ref.key)}`}
          label={`${label} ${ref.path}`}
          size={ref.bytes}
        />
      ))}
    </>
  );
}
