// Undo and redo over the builder's state: each edit pushes the state before it; moving a node
// changes the present without an entry until the drag ends.
import { useCallback, useState } from "react";

export type History<T> = { past: T[]; present: T; future: T[] };
const LIMIT = 200;

export function useHistory<T>(initial: T) {
  const [history, setHistory] = useState<History<T>>({ past: [], present: initial, future: [] });
  const commit = useCallback((next: T | ((present: T) => T)) => {
    setHistory((h) => {
      const value = typeof next === "function" ? (next as (p: T) => T)(h.present) : next;
      if (value === h.present) return h;
      return { past: [...h.past.slice(-LIMIT), h.present], present: value, future: [] };
    });
  }, []);
  /** Change the present without an undo entry (a node being dragged). */
  const replace = useCallback((next: (present: T) => T) => {
    setHistory((h) => ({ ...h, present: next(h.present) }));
  }, []);
  const undo = useCallback(() => {
    setHistory((h) =>
      h.past.length
        ? { past: h.past.slice(0, -1), present: h.past[h.past.length - 1], future: [h.present, ...h.future] }
        : h,
    );
  }, []);
  const redo = useCallback(() => {
    setHistory((h) =>
      h.future.length
        ? { past: [...h.past, h.present], present: h.future[0], future: h.future.slice(1) }
        : h,
    );
  }, []);
  const reset = useCallback((value: T) => setHistory({ past: [], present: value, future: [] }), []);
  return { history, commit, replace, undo, redo, reset };
}
