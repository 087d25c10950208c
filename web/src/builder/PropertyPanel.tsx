// The property panel: the selected step's fields (or the workflow's, with no step selected),
// generated from the schema; diagnostics under the fields they point at; template fields offer
// `inputs.*` and upstream `steps.<id>.output.*` references.
import { useEffect, useState } from "react";
import YAML from "yaml";
import type { Diagnostic } from "./client";
import type { Field } from "./schema";
import type { Json } from "./model";

type Props = {
  title: string;
  prefix: string;
  fields: Field[];
  value: { [key: string]: Json };
  onChange: (key: string, value: Json | undefined) => void;
  diagnostics: Diagnostic[];
  references: string[];
  id?: string;
  onRename?: (to: string) => void;
};

export function PropertyPanel(props: Props) {
  const { fields, value, diagnostics, prefix } = props;
  return (
    <div className="builder-props" data-panel="properties">
      <h3>{props.title}</h3>
      {props.onRename && props.id !== undefined && (
        <IdField id={props.id} onRename={props.onRename} />
      )}
      {fields.map((field) => (
        <FieldControl
          key={`${prefix}${field.key}`}
          field={field}
          value={value[field.key]}
          onChange={(v) => props.onChange(field.key, v)}
          problems={diagnostics.filter(
            (d) => d.path === `${prefix}${field.key}` || d.path.startsWith(`${prefix}${field.key}.`) ||
              d.path.startsWith(`${prefix}${field.key}[`),
          )}
          references={props.references}
        />
      ))}
    </div>
  );
}

function IdField({ id, onRename }: { id: string; onRename: (to: string) => void }) {
  const [text, setText] = useState(id);
  useEffect(() => setText(id), [id]);
  return (
    <label className="field">
      <span>id</span>
      <input
        data-field="id"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={() => text !== id && onRename(text)}
        onKeyDown={(e) => e.key === "Enter" && text !== id && onRename(text)}
      />
    </label>
  );
}

function shown(field: Field, value: Json | undefined): string {
  if (value === undefined || value === null) return "";
  if (field.kind === "yaml" || typeof value === "object")
    return YAML.stringify(value, null, { lineWidth: 0 }).trimEnd();
  return String(value);
}

function FieldControl({
  field,
  value,
  onChange,
  problems,
  references,
}: {
  field: Field;
  value: Json | undefined;
  onChange: (value: Json | undefined) => void;
  problems: Diagnostic[];
  references: string[];
}) {
  const [text, setText] = useState(shown(field, value));
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setText(shown(field, value));
    setError(null);
  }, [JSON.stringify(value)]); // eslint-disable-line react-hooks/exhaustive-deps

  const commit = (raw: string) => {
    if (raw.trim() === "") return onChange(undefined);
    if (field.kind === "integer" || field.kind === "number") {
      const n = Number(raw);
      if (Number.isNaN(n)) return setError("a number");
      return onChange(n);
    }
    if (field.kind === "yaml") {
      try {
        setError(null);
        return onChange(YAML.parse(raw) as Json);
      } catch (e) {
        return setError(`not YAML: ${(e as Error).message.split("\n")[0]}`);
      }
    }
    if (shown(field, value) !== raw) onChange(raw);
  };
  const insert = (reference: string) => {
    const bare = ["when", "until", "score"].includes(field.key);
    const next = bare ? `${text}${reference}` : `${text}{{ ${reference} }}`;
    setText(next);
    commit(next);
  };
  const common = {
    "data-field": field.key,
    "aria-invalid": problems.length > 0 || error !== null,
    title: field.description,
  };
  let control;
  if (field.kind === "boolean") {
    control = (
      <input
        type="checkbox"
        {...common}
        checked={value === true}
        onChange={(e) => onChange(e.target.checked ? true : undefined)}
      />
    );
  } else if (field.kind === "enum") {
    control = (
      <select {...common} value={typeof value === "string" ? value : ""} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">—</option>
        {field.options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    );
  } else if (field.kind === "longtext" || field.kind === "yaml") {
    control = (
      <textarea
        {...common}
        rows={field.kind === "yaml" ? Math.min(8, Math.max(2, text.split("\n").length)) : 3}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={() => commit(text)}
      />
    );
  } else {
    control = (
      <input
        {...common}
        type={field.kind === "text" ? "text" : "number"}
        step="any"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onBlur={() => commit(text)}
        onKeyDown={(e) => e.key === "Enter" && commit(text)}
      />
    );
  }
  return (
    <div className="field" data-field-row={field.key}>
      <label>
        <span>
          {field.key}
          {field.required ? " *" : ""}
        </span>
        {control}
      </label>
      {field.template && references.length > 0 && field.kind !== "boolean" && field.kind !== "enum" && (
        <select
          className="complete"
          data-complete={field.key}
          value=""
          onChange={(e) => e.target.value && insert(e.target.value)}
        >
          <option value="">insert a reference…</option>
          {references.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      )}
      {error && <p className="field-error">{error}</p>}
      {problems.map((p, i) => (
        <p key={i} className="field-error" data-field-error={p.code}>
          {p.message}
        </p>
      ))}
    </div>
  );
}
