// Live data: a page reads once, then again whenever the server pushes a change that concerns it
// (server-sent events from /api/dashboard/live, fed by the database's commits). Reads never
// overlap: changes that arrive during a read cause exactly one more read after it.

import { useCallback, useEffect, useRef, useState } from "react";
import { API, ApiError } from "./api";

export type LiveEvent = { t: string; e?: number; r?: string; k?: string; i?: string; s?: string };

export function useLiveStream(run: string | null, onEvent: (event: LiveEvent) => void): boolean {
  const [connected, setConnected] = useState(false);
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    const url = `${API}/live${run ? `?run=${encodeURIComponent(run)}` : ""}`;
    const source = new EventSource(url, { withCredentials: true });
    source.onopen = () => {
      setConnected(true);
      handler.current({ t: "resync" }); // anything missed while disconnected
    };
    source.onerror = () => setConnected(false);
    source.onmessage = (message) => {
      try {
        handler.current(JSON.parse(message.data) as LiveEvent);
      } catch {
        handler.current({ t: "resync" });
      }
    };
    return () => source.close();
  }, [run]);
  return connected;
}

export type Loaded<T> = {
  data: T | null;
  error: ApiError | Error | null;
  loading: boolean;
  reload: () => void;
  /** Change the shown data at once (a pushed status), before the next read confirms it. */
  mutate: (change: (data: T) => T) => void;
};

export function useReload<T>(load: (signal: AbortSignal) => Promise<T>, key: string): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [loading, setLoading] = useState(true);
  const state = useRef({ running: false, again: false, key, controller: null as AbortController | null });
  const loader = useRef(load);
  loader.current = load;

  const run = useCallback(() => {
    const current = state.current;
    if (current.running) {
      current.again = true;
      return;
    }
    current.running = true;
    const controller = new AbortController();
    current.controller = controller;
    const forKey = current.key;
    setLoading(true);
    loader
      .current(controller.signal)
      .then((value) => {
        if (forKey === state.current.key) {
          setData(value);
          setError(null);
        }
      })
      .catch((reason: unknown) => {
        if (controller.signal.aborted) return;
        setError(reason instanceof Error ? reason : new Error(String(reason)));
      })
      .finally(() => {
        current.running = false;
        setLoading(false);
        if (current.again && !controller.signal.aborted) {
          current.again = false;
          run();
        }
      });
  }, []);

  useEffect(() => {
    state.current.controller?.abort();
    state.current = { running: false, again: false, key, controller: null };
    setData(null);
    setError(null);
    run();
    return () => state.current.controller?.abort();
  }, [key, run]);

  const mutate = useCallback((change: (data: T) => T) => {
    setData((current) => (current == null ? current : change(current)));
  }, []);

  return { data, error, loading, reload: run, mutate };
}
