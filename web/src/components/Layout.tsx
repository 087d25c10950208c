import { useState } from "react";
import { NavLink, Outlet } from "react-router-dom";
import { ApiError, setToken } from "../api";
import { signOut, signedInAs } from "../auth";
import { config } from "../config";

export function Layout() {
  const person = signedInAs();
  return (
    <div className="app">
      <header className="top">
        <span className="brand">switchyard</span>
        <nav>
          <NavLink to="/" end>
            Runs
          </NavLink>
          <NavLink to="/workflows">Workflows</NavLink>
          <NavLink to="/costs">Costs</NavLink>
          {config().builder && <NavLink to="/builder">Builder</NavLink>}
        </nav>
        {person && (
          <span className="person" data-signed-in={person}>
            {person}{" "}
            <button type="button" onClick={signOut}>
              Sign out
            </button>
          </span>
        )}
      </header>
      <main>
        <Outlet />
      </main>
    </div>
  );
}

/** A failed read, with what to do about it; a missing token is asked for here. */
export function Problem({ error, retry }: { error: Error; retry?: () => void }) {
  const [token, setTokenText] = useState("");
  if (error instanceof ApiError && error.status === 401 && !config().auth) {
    return (
      <form
        className="problem"
        onSubmit={(event) => {
          event.preventDefault();
          setToken(token);
          retry?.();
          window.location.reload();
        }}
      >
        <p>{error.message}</p>
        <label>
          API token{" "}
          <input type="password" value={token} onChange={(e) => setTokenText(e.target.value)} />
        </label>{" "}
        <button type="submit">Use it</button>
      </form>
    );
  }
  return (
    <div className="problem" role="alert">
      <p>{error.message}</p>
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge status-${status}`}>{status.replace("_", " ")}</span>;
}

export function LiveDot({ connected }: { connected: boolean }) {
  return (
    <span className={connected ? "live on" : "live off"} title={connected ? "live" : "reconnecting"}>
      {connected ? "● live" : "○ reconnecting"}
    </span>
  );
}
