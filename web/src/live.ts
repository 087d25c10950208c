// Live data: a page reads once, then again whenever the server pushes a change that concerns it
// (server-sent events from /api/dashboard/live, fed by the database's commits), or, where there
// is no stream (on AWS), every second. Reads never overlap: changes that arrive during a read
// cause exactly one more read after it.

import { useCallback, useEffect, useRef, useState } from "react";
import { API, ApiError } from "./api";
import { config } from "./config";

export type LiveEvent = { t: string; e?: number; r?: string; k?: string; i?: string; s?: string };

export function useLiveStream(run: string | null, onEvent: (event: LiveEvent) => void): boolean {
  const [connected, setConnected] = useState(false);
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    // A browser keeps at most 6 connections per server over HTTP/1.1 and each open stream holds
    // one: a hidden tab lets its stream go, and reads again when it is shown.
    let source: EventSource | null = null;
    let poller = 0;
    let polling = config().live.mode === "poll";
    // Where no stream is (AWS: the data API is a function behind API Gateway, which answers
    // /live with 501), the page reads again every `everySeconds`: the read that follows a
    // `resync` is the one a pushed change would cause.
    const poll = () => {
      if (poller) return;
      setConnected(true);
      poller = window.setInterval(
        () => handler.current({ t: "resync" }),
        config().live.everySeconds * 1000,
      );
    };
    const stream = () => {
      if (source) return;
      const url = `${API}/live${run ? `?run=${encodeURIComponent(run)}` : ""}`;
      const opened = new EventSource(url, { withCredentials: true });
      source = opened;
      opened.onopen = () => {
        setConnected(true);
        handler.current({ t: "resync" }); // anything missed while disconnected
      };
      opened.onerror = () => {
        setConnected(false);
        // CLOSED: the server refused the stream (not a dropped connection, which the browser
        // retries): read by polling instead, for as long as this page is open
        if (opened.readyState === EventSource.CLOSED && source === opened) {
          source = null;
          polling = true;
          poll();
        }
      };
      opened.onmessage = (message) => {
        try {
          handler.current(JSON.parse(message.data) as LiveEvent);
        } catch {
          handler.current({ t: "resync" });
        }
      };
    };
    const open = () => {
      if (!polling) return stream();
      handler.current({ t: "resync" }); // what changed while the tab was hidden
      poll();
    };
    const close = () => {
      source?.close();
      source = null;
      window.clearInterval(poller);
      poller = 0;
      setConnected(false);
    };
    const onVisibility = () => (document.hidden ? close() : open());
    if (!document.hidden) {
      if (polling) poll();
      else stream();
    }
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      document.removeEventListener("visibilitychange", onVisibility);
      close();
    };
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

/**
 * `load` once per `key`, and again on `reload()`; reads never overlap, and a read starts at
 * most once per `spacingMs` (a busy engine's stream of changes becomes a steady rhythm of reads).
 */
export function useReload<T>(
  load: (signal: AbortSignal) => Promise<T>,
  key: string,
  spacingMs = 0,
): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [loading, setLoading] = useState(true);
  const state = useRef({
    running: false,
    again: false,
    key,
    controller: null as AbortController | null,
    lastStart: 0,
    timer: 0,
  });
  const loader = useRef(load);
  loader.current = load;

  const run = useCallback(() => {
    const current = state.current;
    if (current.running || current.timer) {
      current.again = current.running || current.again;
      return;
    }
    const wait = current.lastStart + spacingMs - Date.now();
    if (wait > 0) {
      current.timer = window.setTimeout(() => {
        current.timer = 0;
        run();
      }, wait);
      return;
    }
    current.lastStart = Date.now();
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
  }, [spacingMs]);

  useEffect(() => {
    state.current.controller?.abort();
    window.clearTimeout(state.current.timer);
    state.current = { running: false, again: false, key, controller: null, lastStart: 0, timer: 0 };
    setData(null);
    setError(null);
    run();
    return () => {
      state.current.controller?.abort();
      window.clearTimeout(state.current.timer);
    };
  }, [key, run]);

  const mutate = useCallback((change: (data: T) => T) => {
    setData((current) => (current == null ? current : change(current)));
  }, []);

  return { data, error, loading, reload: run, mutate };
}
